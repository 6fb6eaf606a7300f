// `kstate daemon`: loads the configuration (file + flags), sets up logging, builds the
// Reconciler and runs the DaemonRunner until SIGTERM. The reconciler is supplied by a
// factory so that this file does not depend on how reconciling is done.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "daemon/config.hpp"
#include "daemon/reconciler.hpp"
#include "daemon/runner.hpp"

namespace kstate::daemon {

// Builds the reconciler for a loaded configuration, on the daemon's event loop; it
// counts API requests, retries and discovery cache use in `metrics`.
using ReconcilerFactory = std::function<Result<std::unique_ptr<Reconciler>>(
    boost::asio::io_context& io, const DaemonConfig& config, DaemonMetrics& metrics)>;

struct DaemonCommand {
  std::string config_path;  // empty: /etc/kstate/config.yaml, which may then be missing
  std::vector<ConfigOverride> overrides;
  RunnerOptions runner_options;  // tests shrink the timings
};

// Exit codes of the daemon. The unit restarts it after a failure
// (Restart=on-failure) except after a configuration error (RestartPreventExitStatus=2):
// restarting cannot fix a typo, and restarting every 5 s for ever would hide it.
inline constexpr int daemon_exit_stopped = 0;
inline constexpr int daemon_exit_failed = 1;  // a bug found at run time: a restart may help
inline constexpr int daemon_exit_config = 2;  // the config file, a flag, listen-address, manifests-dir

// Runs the daemon until SIGTERM. A configuration or set-up error is one line on `err`
// naming the key and file:line, and daemon_exit_config.
int run_daemon_command(const DaemonCommand& command, const ReconcilerFactory& make_reconciler, std::ostream& err);

}  // namespace kstate::daemon
