// The seam between the daemon's machinery (watcher, timers, signals, notify, HTTP) and
// the reconcile itself (loading manifests, running states, prune). The runner only
// knows this interface; the real implementation lives with the states layer, tests use
// a fake. Calls run on the daemon's event loop and never overlap.
#pragma once

#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "daemon/config.hpp"
#include "daemon/lease_store.hpp"

namespace kstate::daemon {

struct ReconcileSummary {
  // False when the API server could not be reached at all (start-up keeps retrying).
  bool api_reachable = true;
  std::size_t states = 0;
  std::size_t unchanged = 0;
  std::size_t created = 0;
  std::size_t updated = 0;
  std::size_t adopted = 0;  // existing objects kstate did not create, taken over (states/adoption.hpp)
  std::size_t deleted = 0;
  std::size_t failed = 0;
  std::size_t managed_objects = 0;
  // Manifest files this cycle read (and hashed); a stat proved the others unchanged.
  std::size_t files_read = 0;
  // Objects this cycle left for a later full reconcile to prune (a file change's
  // reconcile with prune-delay: they are pruned once the folder is quiet).
  std::size_t prune_deferred = 0;
  // The writer that reconciles the ApplySet when it is another one (states/writer.hpp):
  // this cycle wrote nothing, and the daemon holds back until an operator resolves it.
  std::string writer_conflict;
  // Manifest files this cycle found changed moments ago (daemon/manifest_settle.hpp):
  // not used for prune, and read again by a full reconcile once they settle.
  std::size_t files_settling = 0;
  // Why the reconcile could not run or what went wrong outside any one state
  // (unreadable manifest folder, discovery failure, ...). Never secret material.
  std::string error;

  bool succeeded() const { return api_reachable && failed == 0 && error.empty(); }
  // One line for STATUS= and logs: "12 states: 2 created, 1 updated, 0 deleted, 9 unchanged, 0 failed".
  std::string describe() const;
};

// Whether a full reconcile prunes only once the manifests folder has been quiet for
// prune-delay (a resync, start-up, SIGHUP: the last change may be a moment ago), or
// now (the runner's wait for a quiet folder reached its limit).
enum class FullPrune { when_quiet, now };

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Loads every manifest and reconciles all states, pruning what vanished (with the
  // prune guards). Used at start-up, on resync, on SIGHUP and after a full rescan.
  // With FullPrune::when_quiet, a folder changed within prune-delay defers the prune
  // (ReconcileSummary::prune_deferred), as a file change's reconcile does.
  virtual boost::asio::awaitable<ReconcileSummary> full_reconcile(FullPrune prune) = 0;
  // Reloads only these files (absolute paths) and reconciles their states; objects of
  // removed files are pruned.
  virtual boost::asio::awaitable<ReconcileSummary> reconcile_files(std::vector<std::string> changed,
                                                                   std::vector<std::string> removed) = 0;
  // A file event started a batch: reconcile_files follows once the folder has been
  // quiet for the debounce. Work done now is off that cycle's path.
  virtual void prepare_for_cycle() {}
  // SIGHUP: the configuration was reloaded; applies to the next reconcile.
  virtual Status reconfigure(const DaemonConfig& /*config*/) { return ok_status(); }
  // Shutdown began: finish what is in flight, start nothing new.
  virtual void request_stop() {}

  // Leader election: the Lease on the reconciler's connection to the cluster.
  virtual Result<std::unique_ptr<AsyncLeaseStore>> lease_store(const LeaderElectionConfig& /*config*/) {
    return Error(ErrorKind::unsupported, "leader election is not available with this reconciler");
  }
  // Leader election: writes to the cluster are sent only while `may_write()` is true;
  // it is asked before every request, so losing the lease stops writes at once.
  virtual void set_write_gate(std::function<bool()> /*may_write*/) {}

  // Drift (issue 41, daemon/drift_watch.hpp): watches on the managed objects find
  // edits and deletions made through the API. `wake` is called (on the loop) when a
  // correction was queued; drift_due() says when the next one is due, and
  // correct_drift() runs the states of the objects due then (never overlapping the
  // other calls). Reconcilers without watches leave drift to the resync.
  virtual void set_drift_wakeup(std::function<void()> /*wake*/) {}
  virtual std::optional<std::chrono::steady_clock::time_point> drift_due() const { return std::nullopt; }
  virtual boost::asio::awaitable<ReconcileSummary> correct_drift();

  // Why the API server does not answer right now, as the requests in flight find it
  // ("" when it answers or nothing is known): /readyz says so between cycles, so a
  // server that froze is noticed within one request deadline.
  virtual std::string api_server_problem() const { return {}; }
};

}  // namespace kstate::daemon
