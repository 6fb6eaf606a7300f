// Wiring of `kstate daemon`. Config errors are reported before anything starts, as one
// line on stderr and exit 2 (DESIGN.md's contract for usage and config errors).
#include "daemon/daemon_command.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "daemon/file_security.hpp"
#include "daemon/logging.hpp"
#include "daemon/notifier.hpp"
#include "daemon/process_limits.hpp"
#include "daemon/resident_heap.hpp"

namespace kstate::daemon {

int run_daemon_command(const DaemonCommand& command, const ReconcilerFactory& make_reconciler, std::ostream& err) {
  const bool config_given = !command.config_path.empty();
  const std::string config_path = config_given ? command.config_path : std::string(default_config_path);
  // At start-up and at every reload: the folders on the way to the manifests must be
  // trusted (file_security.hpp), or the daemon refuses the configuration.
  auto load = [config_path, config_given, overrides = command.overrides]() -> Result<DaemonConfig> {
    auto loaded = load_config(config_path, config_given, overrides);
    if (loaded && loaded->check_manifest_permissions) {
      if (auto problem = manifests_dir_problem(loaded->manifests_dir, ::geteuid())) {
        return Error(ErrorKind::config, "manifests-dir " + loaded->manifests_dir + ": " + *problem);
      }
    }
    return loaded;
  };
  auto config = load();
  if (!config) {
    err << "kstate daemon: " << config.error().message << "\n";
    return daemon_exit_config;
  }
  if (auto status = setup_logging(config->log_level, config->log_format); !status) {
    err << "kstate daemon: " << status.error().message << "\n";
    return daemon_exit_config;
  }
  if (!make_reconciler) {
    err << "kstate daemon: no reconciler available in this build\n";
    return daemon_exit_config;
  }
  // The discovery cache and the state folder are kstate's alone (0700; files in them 0600).
  for (const std::string* dir : {&config->cache_dir, &config->state_dir}) {
    if (auto status = ensure_private_directory(*dir); !status) {
      spdlog::warn("{}", status.error().message);
    }
  }
  tune_heap_for_daemon();
  if (const OpenFileLimit files = raise_open_file_limit(); !files.error.empty()) {
    spdlog::warn("cannot raise the open-file limit ({}): {}", files.before, files.error);
  } else if (files.after != files.before) {
    spdlog::debug("open-file limit raised from {} to {}", files.before, files.after);
  }
  if (const std::string problem = forbid_core_dumps(); !problem.empty()) {
    spdlog::warn("core dumps could not be turned off: {}", problem);
  }
  boost::asio::io_context io;
  MetricsRegistry registry;
  DaemonMetrics metrics(registry);
  auto reconciler = make_reconciler(io, *config, metrics);
  if (!reconciler) {
    err << "kstate daemon: " << reconciler.error().message << "\n";
    return daemon_exit_config;
  }
  spdlog::info("kstate daemon starting: manifests {}, resync every {}, debounce {}, prune-delay {}",
               config->manifests_dir, format_duration(config->resync_interval), format_duration(config->debounce),
               format_duration(config->prune_delay));
  SystemdNotifier notifier;
  DaemonRunner runner(io, *config, **reconciler, notifier, registry, metrics, load, command.runner_options);
  runner.on_config_applied([](const DaemonConfig& fresh) {
    if (auto status = setup_logging(fresh.log_level, fresh.log_format); !status) {
      spdlog::error("log settings: {}", status.error().message);
    }
  });
  try {
    const int code = runner.run();
    spdlog::info("kstate daemon stopped");
    return code;
  } catch (const std::exception& e) {
    // Not a configuration error: the unit restarts the daemon.
    spdlog::critical("internal error: {}", e.what());
    return daemon_exit_failed;
  }
}

}  // namespace kstate::daemon
