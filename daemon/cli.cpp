// CLI11-based parsing of kstate's subcommands and common flags, and dispatch to the
// subcommand handlers. Keeps the contract of DESIGN.md: usage errors exit 2 with one
// clear line on stderr. Each subcommand gets only the flags that apply to it, and
// every option that takes a value says which (a file, a folder, one of a list) so that
// completions and the man page (cli_docs.cpp) are generated from these definitions.
#include "daemon/cli.hpp"

#include <openssl/opensslv.h>
#include <rapidjson/rapidjson.h>
#include <spdlog/version.h>

#include <CLI/CLI.hpp>
#include <boost/version.hpp>
#include <sstream>
#include <stdexcept>

#include "daemon/apply_command.hpp"
#include "daemon/cli_docs.hpp"
#include "daemon/config.hpp"
#include "daemon/config_flags.hpp"
#include "daemon/daemon_command.hpp"
#include "daemon/discover_command.hpp"
#include "daemon/inventory_command.hpp"
#include "daemon/logging.hpp"
#include "daemon/states_reconciler.hpp"
#include "kstate/build_info.hpp"
#include "manifests/ignore_fields.hpp"
#include "manifests/loader.hpp"
#include "states/adoption.hpp"
#include "states/report.hpp"

namespace kstate::cli {
namespace {

// Defines options and records what values they take.
class Definer {
 public:
  explicit Definer(CommandLine& line) : line_(line) {}

  CLI::Option* choice(CLI::Option* option, std::vector<std::string> choices) {
    option->check(CLI::IsMember(choices));
    line_.values[option] = {ValueKind::choice, std::move(choices), {}};
    return option;
  }
  CLI::Option* file(CLI::Option* option) { return kind(option, ValueKind::file); }
  CLI::Option* directory(CLI::Option* option) { return kind(option, ValueKind::directory); }
  CLI::Option* named(CLI::Option* option, std::string placeholder) {
    line_.values[option] = {ValueKind::other, {}, std::move(placeholder)};
    return option;
  }

 private:
  CLI::Option* kind(CLI::Option* option, ValueKind value_kind) {
    line_.values[option] = {value_kind, {}, {}};
    return option;
  }
  CommandLine& line_;
};

// The flags kstate apply/test share with the daemon are daemon config keys
// (daemon/config.cpp's table): each one's name, description and value check come from
// its key, so that the two never describe or accept a setting differently.
const kstate::daemon::ConfigKey& config_key(std::string_view path) {
  const auto* key = kstate::daemon::find_config_key(path);
  if (key == nullptr) {
    throw std::logic_error("no daemon config key " + std::string(path));
  }
  return *key;
}
CLI::Validator key_check(std::string_view path, std::string placeholder) {
  return CLI::Validator(
      [path = std::string(path)](std::string& value) {
        return kstate::daemon::config_value_problem(path, value).value_or("");
      },
      std::move(placeholder));
}
std::string key_description(std::string_view path) {
  return std::string(config_key(path).description);
}
// An option whose value CLI11 converts into `target` once the key's check accepted it.
template <class Target>
CLI::Option* add_key_option(CLI::App& app, std::string_view path, Target& target, std::string names = "") {
  return app.add_option(names.empty() ? config_key(path).flag() : names, target, key_description(path))
      ->check(key_check(path, ""));
}
// A boolean key: --prune, and --no-prune to turn it off.
template <class Target>
CLI::Option* add_key_flag(CLI::App& app, std::string_view path, Target& target) {
  const std::string flag = config_key(path).flag();
  return app.add_flag(flag + ",!--no-" + flag.substr(2), target, key_description(path));
}
// A Go-style duration key (core/duration.hpp).
void add_duration_key_option(CLI::App& app, std::string_view path, kstate::Duration& value, Definer& define) {
  auto* option =
      app.add_option_function<std::string>(
             config_key(path).flag(),
             [&value](const std::string& text) { value = kstate::parse_duration(text).value(); }, key_description(path))
          ->check(key_check(path, "DURATION"));
  define.named(option, "DURATION");
}

// --state-output's values, as states/report.hpp names them.
std::vector<std::string> state_output_choices() {
  std::vector<std::string> names;
  for (auto output : kstate::states::all_state_outputs) {
    names.emplace_back(kstate::states::to_string(output));
  }
  return names;
}

// kubectl's `-f=x` and `-o=json`: pflag takes what follows '=' as a short option's value.
CLI::Option* short_equals(CLI::Option* option) {
  return option->transform(CLI::Validator(
      [](std::string& value) {
        if (value.starts_with("=")) {
          value.erase(0, 1);
        }
        return std::string();
      },
      ""));
}

// Where the server is and how fast to talk to it.
void add_connection_flags(CLI::App& app, CommonOptions& common, Definer& define) {
  define.file(add_key_option(app, "kubeconfig", common.kubeconfig));
  add_key_option(app, "context", common.context);
  add_duration_key_option(app, "connect-timeout", common.connect_timeout, define);
  add_duration_key_option(app, "request-timeout", common.request_timeout, define);
}
void add_rate_flags(CLI::App& app, CommonOptions& common) {
  add_key_option(app, "qps", common.qps);
  add_key_option(app, "burst", common.burst);
}
// -v 6 as kubectl's -v=6 (0-2 info, 3-5 debug, 6 and more trace), or a level's name.
void add_log_level_flag(CLI::App& app, CommonOptions& common, Definer& define) {
  auto* option = app.add_option("-v," + config_key("log.level").flag(), common.log_level, key_description("log.level"))
                     ->transform(CLI::Validator(
                         [](std::string& value) -> std::string {
                           if (value.starts_with("=")) {
                             value.erase(0, 1);  // `-v=6`, as typed for kubectl
                           }
                           const auto name = kstate::daemon::log_level_name(value);
                           if (!name) {
                             return "expected trace, debug, info, warn, error, off or a number from 0 to 10, got \"" +
                                    value + "\"";
                           }
                           value = std::string(*name);
                           return "";
                         },
                         "LEVEL"));
  define.named(option, "LEVEL");
}
void add_cache_dir_flag(CLI::App& app, CommonOptions& common, Definer& define) {
  define.directory(add_key_option(app, "cache-dir", common.cache_dir));
}

// apply / test: what to read (kubectl's -f, `-` for stdin) and how to apply it.
void add_apply_flags(CLI::App& app, Invocation& invocation, Definer& define) {
  auto& common = invocation.common;
  define.file(app.add_option("paths", invocation.paths, "Manifest files or directories; - reads stdin"));
  define.file(short_equals(app.add_option("-f,--filename", invocation.filenames,
                                          "A manifest file or directory (repeatable); - reads YAML documents from "
                                          "stdin"))
                  ->allow_extra_args(false));
  define.named(short_equals(app.add_option("-n,--namespace", common.namespace_name,
                                           "Namespace of namespaced objects that name none (default: the kubeconfig "
                                           "context's); an object naming another one is an error")),
               "NAMESPACE");
  add_connection_flags(app, common, define);
  define.choice(short_equals(app.add_option("-o,--output", common.output, "Report format")), {"text", "json", "junit"});
  define.choice(app.add_option(config_key("state-output").flag(), common.state_output, key_description("state-output")),
                state_output_choices());
  add_key_option(app, "concurrency", common.concurrency);
  add_rate_flags(app, common);
  add_key_option(app, "field-manager", common.field_manager);
  add_key_flag(app, "prune", common.prune);
  add_key_flag(app, "allow-empty-prune", common.allow_empty_prune);
  add_key_flag(app, "adopt", common.adopt);
  auto* adopt_objects = app.add_option_function<std::vector<std::string>>(
      config_key("adopt-objects").flag(),
      [&common](const std::vector<std::string>& values) {
        for (const std::string& value : values) {  // (the flag may be repeated)
          auto parsed = states::parse_adopt_objects(value);
          if (!parsed) {
            throw CLI::ValidationError("--adopt-objects", parsed.error().message);
          }
          common.adopt_objects.insert(parsed->begin(), parsed->end());
        }
      },
      key_description("adopt-objects"));
  adopt_objects->allow_extra_args(false);  // one value per flag: a path after it stays a path
  define.named(adopt_objects, "KIND/NAMESPACE/NAME,...");
  add_cache_dir_flag(app, common, define);
  add_log_level_flag(app, common, define);
}

// discover: only what reading discovery uses.
void add_discover_flags(CLI::App& app, Invocation& invocation, Definer& define) {
  auto& common = invocation.common;
  app.add_flag("--refresh", invocation.refresh, "Ignore the discovery cache");
  add_connection_flags(app, common, define);
  define.choice(short_equals(app.add_option("-o,--output", common.output, "Output format")), {"text", "json"});
  add_rate_flags(app, common);
  add_cache_dir_flag(app, common, define);
  add_log_level_flag(app, common, define);
}

// inventory: only what a read-only listing uses (no prune, concurrency or field manager).
void add_inventory_flags(CLI::App& app, Invocation& invocation, Definer& define) {
  auto& options = invocation.inventory;
  add_connection_flags(app, invocation.common, define);
  define.choice(short_equals(app.add_option("-o,--output", invocation.common.output, "Output format")),
                {"text", "json"});
  auto* ns = app.add_option("-n,--namespace", options.namespace_name,
                            "Pods of this namespace (default: the kubeconfig context's namespace)");
  app.add_flag("-A,--all-namespaces", options.all_namespaces, "Pods of every namespace")->excludes(ns);
  app.add_option("--digest", options.digests,
                 "Where these builds run: sha256:<hex>, or a RepoDigests entry REPO@sha256:<hex> (repeatable; "
                 "exit 1 when one runs nowhere)");
  app.add_option("--image", options.image, "Only this image repository (e.g. registry.example.com/team/app)");
  app.add_option("--chunk-size", options.chunk_size, "Items per LIST page")->check(CLI::Range(1, 100000));
  add_rate_flags(app, invocation.common);
  add_log_level_flag(app, invocation.common, define);
}

// apply / test: which ApplySet the run manages. Its parent Secret records what the set
// owns; prune deletes only what that set recorded, so folders applied with different
// names never prune each other's objects (kubectl's --applyset).
void add_applyset_flags(CLI::App& app, CommonOptions& common) {
  add_key_option(app, "applyset.name", common.applyset_name);
  add_key_option(app, "applyset.namespace", common.applyset_namespace);
}

// apply / test: the variables of ${NAME} references (the daemon's config `vars` and
// `vars-from`, with the daemon's flag names).
void add_variable_flags(CLI::App& app, CommonOptions& common, Definer& define) {
  define.named(add_key_option(app, "vars", common.vars)->allow_extra_args(false), "NAME=VALUE");
  define.file(add_key_option(app, "vars-from", common.vars_from)->allow_extra_args(false));
  define.named(app.add_option_function<std::vector<std::string>>(
                      config_key("ignore-fields").flag(),
                      [&common](const std::vector<std::string>& rules) {
                        for (const auto& text : rules) {
                          auto rule = manifests::parse_ignore_fields_rule(text);
                          if (!rule.ok()) {
                            throw CLI::ValidationError("--ignore-fields", rule.error().message);
                          }
                          common.ignore_fields.push_back(std::move(*rule));
                        }
                      },
                      key_description("ignore-fields"))
                   ->allow_extra_args(false),
               "KIND=/POINTER,...");
}

std::string version_text() {
  std::ostringstream out;
  out << "kstate " << build_info::version << "\n"
      << "commit: " << build_info::git_commit << "\n"
      << "build: " << build_info::build_type << ", " << build_info::compiler << "\n"
      << "libraries:\n"
      << "  boost " << BOOST_VERSION / 100000 << "." << BOOST_VERSION / 100 % 1000 << "." << BOOST_VERSION % 100 << "\n"
      << "  openssl " << OPENSSL_VERSION_STR << "\n"
      << "  rapidjson " << RAPIDJSON_VERSION_STRING << "\n"
      << "  yaml-cpp " << build_info::yaml_cpp_version << "\n"
      << "  spdlog " << SPDLOG_VER_MAJOR << "." << SPDLOG_VER_MINOR << "." << SPDLOG_VER_PATCH << "\n"
      << "  cli11 " << CLI11_VERSION << "\n"
      << "  dtl " << build_info::dtl_version << "\n";
  return out.str();
}

// The subcommand a word names (its name or an alias), or nullptr.
const CLI::App* subcommand_named(const CLI::App& app, std::string_view word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const auto& aliases = sub->get_aliases();
    if (sub->get_name() == word || std::find(aliases.begin(), aliases.end(), word) != aliases.end()) {
      return sub;
    }
  }
  return nullptr;
}

// " (did you mean \"apply\"?)" for a mistyped subcommand, or "".
std::string suggested_subcommand(const CLI::App& app, std::string_view word) {
  std::vector<std::string> names;
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* candidate) { return !candidate->get_group().empty(); })) {
    names.push_back(sub->get_name());
    for (const auto& alias : sub->get_aliases()) {
      names.push_back(alias);
    }
  }
  const std::string match = manifests::closest_match(word, {names.begin(), names.end()});
  return match.empty() ? std::string() : " (did you mean \"" + match + "\"?)";
}

}  // namespace

CommandLine::CommandLine() = default;
CommandLine::~CommandLine() = default;
CommandLine::CommandLine(CommandLine&&) noexcept = default;
CommandLine& CommandLine::operator=(CommandLine&&) noexcept = default;

CommandLine command_line(Invocation& invocation) {
  CommandLine line;
  line.app = std::make_unique<CLI::App>(
      "kstate keeps a Kubernetes cluster in the state a directory of manifests describes.", "kstate");
  CLI::App& app = *line.app;
  Definer define(line);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", version_text, "Print version, commit and library versions");

  auto* apply = app.add_subcommand("apply", "One reconcile of files/directories, then exit");
  auto* test = app.add_subcommand("test", "Same as apply, but every write is dryRun=All; prints diffs (alias: diff)");
  test->alias("diff");
  for (auto* sub : {apply, test}) {
    add_apply_flags(*sub, invocation, define);
    add_applyset_flags(*sub, invocation.common);
    add_variable_flags(*sub, invocation.common, define);
  }

  auto* daemon = app.add_subcommand("daemon", "Long-running reconciler of a watched directory");
  define.file(daemon->add_option("--config", invocation.config_file, "Config file (default /etc/kstate/config.yaml)"));
  kstate::daemon::add_config_flags(*daemon, invocation.config_overrides);

  auto* discover = app.add_subcommand("discover", "List the resources the server offers");
  add_discover_flags(*discover, invocation, define);

  auto* inventory =
      app.add_subcommand("inventory", "Nodes, and where each image digest runs (for matching builds by digest)");
  add_inventory_flags(*inventory, invocation, define);

  app.add_subcommand("version", "Print version, commit and library versions");

  auto* completion = app.add_subcommand("completion", "Print a shell completion script: bash, zsh or fish");
  define.choice(completion->add_option("shell", invocation.shell, "The shell")->required(), {"bash", "zsh", "fish"});

  // The man page, written from these definitions at build time (hidden: group "").
  app.add_subcommand("man", "Print the kstate(1) man page (roff)")->group("");
  return line;
}

int print_version(const Invocation& /*invocation*/, std::ostream& out, std::ostream& /*err*/) {
  out << version_text();
  return exit_ok;
}

int run(int argc, const char* const* argv, const std::map<std::string, Handler>& handlers, std::ostream& out,
        std::ostream& err) {
  Invocation invocation;
  CommandLine line = command_line(invocation);
  CLI::App& app = *line.app;

  // `kstate aply`: CLI11 would only say "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && subcommand_named(app, argv[1]) == nullptr) {
    err << "kstate: unknown command \"" << argv[1] << "\"" << suggested_subcommand(app, argv[1])
        << " (see kstate --help)\n";
    return exit_failed;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    const auto parsed = app.get_subcommands();
    out << (parsed.empty() ? app.help() : parsed.back()->help());
    return exit_ok;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return exit_ok;
  } catch (const CLI::CallForVersion& e) {
    out << e.what();
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    // One clear line: CLI11's message, then where to look.
    std::string what = e.what();
    if (what.empty()) {
      what = "invalid command line";
    }
    err << "kstate: " << what << " (see kstate --help)\n";
    return exit_failed;
  }

  for (auto* sub : app.get_subcommands()) {
    invocation.subcommand = sub->get_name();  // `diff` is `test`
  }
  // -f values after the positional paths (CLI11 assigns each option's values whole, so
  // they are kept apart while parsing).
  invocation.paths.insert(invocation.paths.end(), invocation.filenames.begin(), invocation.filenames.end());
  invocation.filenames.clear();
  if ((invocation.subcommand == "apply" || invocation.subcommand == "test") &&
      invocation.common.prune.value_or(false) && invocation.common.applyset_name.empty()) {
    // As kubectl's --prune needs --applyset: prune deletes what one named set recorded.
    err << "kstate " << invocation.subcommand
        << ": --prune requires --applyset-name (the ApplySet whose recorded objects may be pruned; see "
           "docs/ownership.md)\n";
    return exit_failed;
  }
  auto it = handlers.find(invocation.subcommand);
  if (it == handlers.end() || !it->second) {
    err << "kstate " << invocation.subcommand << ": not implemented yet\n";
    return exit_failed;
  }
  return it->second(invocation, out, err);
}

std::map<std::string, Handler> default_handlers(bool whole_process) {
  return {
      {"version", print_version},
      {"discover", daemon::run_discover_command},
      {"inventory", daemon::run_inventory_command},
      {"completion", print_completion},
      {"man", print_man_page},
      {"apply",
       [whole_process](const Invocation& invocation, std::ostream& out, std::ostream& err) {
         return daemon::run_apply_command(invocation, out, err, false, whole_process);
       }},
      {"test",
       [whole_process](const Invocation& invocation, std::ostream& out, std::ostream& err) {
         return daemon::run_apply_command(invocation, out, err, true, whole_process);
       }},
      {"daemon",
       [](const Invocation& invocation, std::ostream&, std::ostream& err) {
         daemon::DaemonCommand command;
         command.config_path = invocation.config_file;
         command.overrides = invocation.config_overrides;
         return daemon::run_daemon_command(command, daemon::make_states_reconciler, err);
       }},
  };
}

}  // namespace kstate::cli
