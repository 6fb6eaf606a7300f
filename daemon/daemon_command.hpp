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

// Exit codes: 0 after a clean stop, 2 for config/set-up errors (one line on `err`
// naming the key and file:line).
int run_daemon_command(const DaemonCommand& command, const ReconcilerFactory& make_reconciler, std::ostream& err);

}  // namespace kstate::daemon
