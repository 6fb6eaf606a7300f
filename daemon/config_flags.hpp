// Command-line flags for every daemon config key (config.hpp's table), so that any
// value of /etc/kstate/config.yaml can be overridden for one run. The flags only
// record what was given; load_config() applies and checks them after the file.
#pragma once

#include <vector>

#include "daemon/config.hpp"

namespace CLI {
class App;
}

namespace kstate::daemon {

// Adds one flag per config key to `app` (e.g. the `daemon` subcommand): value keys as
// `--key VALUE`, boolean keys as `--key` / `--no-key` (and `--key=false`). Flags already
// defined on `app` are left alone. Given flags are appended to `overrides` (CLI11 runs
// the callbacks in definition order, so one key given twice keeps its last value).
void add_config_flags(CLI::App& app, std::vector<ConfigOverride>& overrides);

}  // namespace kstate::daemon
