// CLI11 glue for the config keys, kept apart from config.cpp so that pure config
// parsing does not pay for CLI11's heavy headers.
#include "daemon/config_flags.hpp"

#include <CLI/CLI.hpp>

namespace kstate::daemon {

void add_config_flags(CLI::App& app, std::vector<ConfigOverride>& overrides) {
  for (const auto& key : config_keys()) {
    const std::string flag = key.flag();
    const std::string path(key.path);
    if (app.get_option_no_throw(flag) != nullptr) {
      continue;
    }
    if (key.shape != ConfigKey::Shape::value) {
      // Repeatable: each use adds one entry (`--var A=1 --var B=2`).
      app.add_option_function<std::vector<std::string>>(
             flag,
             [&overrides, path](const std::vector<std::string>& values) {
               for (const auto& value : values) {
                 overrides.push_back({path, value});
               }
             },
             std::string(key.description))
          ->allow_extra_args(false);
    } else if (key.is_bool) {
      // `--prune`, `--prune=false` and `--no-prune` all work; the value is checked later.
      app.add_option_function<std::string>(
             flag,
             [&overrides, path](const std::string& value) {
               overrides.push_back({path, value});
             },
             std::string(key.description))
          ->expected(0, 1)
          ->default_str("true");
      const std::string negated = "--no-" + flag.substr(2);
      if (app.get_option_no_throw(negated) == nullptr) {
        app.add_flag_callback(
            negated,
            [&overrides, path] {
              overrides.push_back({path, "false"});
            },
            "Sets " + flag + " to false");
      }
    } else {
      // -v is kstate's short form of --log-level in every subcommand.
      const std::string names = path == "log.level" && app.get_option_no_throw("-v") == nullptr ? "-v," + flag : flag;
      app.add_option_function<std::string>(
          names,
          [&overrides, path](const std::string& value) {
            overrides.push_back({path, value});
          },
          std::string(key.description));
    }
  }
}

}  // namespace kstate::daemon
