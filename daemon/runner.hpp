// The daemon's main loop (DESIGN.md "The daemon"): READY=1 as soon as the endpoints
// serve and the folder is watched (not waiting for the API server, so `systemctl start`
// returns), then a full reconcile (retrying with backoff while the API server is
// unreachable, said in STATUS and /readyz, which turns ready once it is done); file
// batches from the watcher reconciled as they come; a periodic full resync with jitter;
// a reconcile with failures followed by full ones at retry-interval, doubling, until
// one succeeds; SIGHUP reloads the config and reconciles everything (RELOADING=1 ...
// READY=1); SIGTERM/SIGINT stop taking work, let the in-flight reconcile finish within
// a bound, send STOPPING=1 and return 0. WATCHDOG=1 is sent from this loop. With leader
// election on, only the holder of the Lease reconciles: the others say "standby" in
// STATUS, keep serving the endpoints and export kstate_leader 0; losing the Lease
// closes the reconciler's write gate at once and cancels the resync. Everything runs
// on one io_context; the reconcile itself is behind Reconciler.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "daemon/config.hpp"
#include "daemon/directory_watcher.hpp"
#include "daemon/metrics.hpp"
#include "daemon/notifier.hpp"
#include "daemon/reconciler.hpp"

namespace kstate::daemon {

// Retry delay after `attempt` failures (1, 2, ...): initial * 2^(attempt-1), capped. Used
// while the API server does not answer at start-up, and after reconciles with failures.
Duration doubling_backoff(int attempt, Duration initial, Duration maximum);
// `interval` spread by +/- `fraction` using `random01` in [0, 1), so that several nodes
// (or a fleet restarted together) do not resync in step.
Duration jittered(Duration interval, double fraction, double random01);
// How long objects a file change took out of the manifests wait for the folder to be
// quiet for prune-delay before they are pruned anyway: 15 prune-delays (30 s by default).
Duration prune_wait_limit(Duration prune_delay);

// Work waiting for the loop: file changes merged across batches, or a full reconcile.
class PendingWork {
 public:
  void add(const ChangeBatch& batch);
  void request_full(std::string reason);
  bool full_requested() const { return full_; }
  bool has_files() const { return !changed_.empty() || !removed_.empty(); }
  // Takes the merged file lists (a file removed then recreated is "changed", and the reverse "removed").
  std::pair<std::vector<std::string>, std::vector<std::string>> take_files();
  // Takes the full-reconcile request and drops file work it covers.
  std::string take_full();

 private:
  std::vector<std::string> changed_;
  std::vector<std::string> removed_;
  bool full_ = false;
  std::string reason_;
};

struct RunnerOptions {
  double resync_jitter = 0.1;
  // How long SIGTERM waits for the in-flight reconcile before exiting anyway.
  Duration shutdown_grace = std::chrono::seconds(30);
  Duration startup_backoff_initial = std::chrono::seconds(1);
  Duration startup_backoff_max = std::chrono::seconds(60);
  Duration watch_max_delay = std::chrono::seconds(5);
  Duration watch_write_hold = std::chrono::seconds(30);
  // Uniform in [0, 1); defaults to a seeded std::mt19937_64.
  std::function<double()> random;
  // Leader election identity (the Lease's holderIdentity); default "<hostname>_<random hex>".
  std::string identity;
  // How long SIGTERM waits for the Lease to be released before exiting anyway.
  Duration release_timeout = std::chrono::seconds(2);
  // Every time the loop reads and every timer it sets (tests: a simulated clock); the
  // real clock when null.
  std::shared_ptr<const Clock> clock;
};

// Reloads the configuration on SIGHUP (file + the original flags).
using ConfigReloader = std::function<Result<DaemonConfig>()>;

class DaemonRunner {
 public:
  // `metrics` must be registered in `registry` (which /metrics renders); the reconciler
  // shares the same DaemonMetrics to count API requests, retries and cache hits.
  DaemonRunner(boost::asio::io_context& io, DaemonConfig config, Reconciler& reconciler, Notifier& notifier,
               MetricsRegistry& registry, DaemonMetrics& metrics, ConfigReloader reload, RunnerOptions options = {});
  ~DaemonRunner();
  DaemonRunner(const DaemonRunner&) = delete;
  DaemonRunner& operator=(const DaemonRunner&) = delete;

  // Runs the loop (io.run()) until shutdown. 0 after a clean stop; 2 when the
  // endpoints or the watcher cannot be set up.
  int run();

  // Safe from any thread: the same as SIGTERM and SIGHUP.
  void request_shutdown();
  void request_reload();

  // The bound port of the HTTP endpoints (useful with listen-address port 0); 0 until listening.
  unsigned short http_port() const;
  // Called (on the loop) whenever the config changes on SIGHUP, e.g. to reset log levels.
  void on_config_applied(std::function<void(const DaemonConfig&)> callback);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace kstate::daemon
