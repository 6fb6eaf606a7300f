// One reconcile cycle, as `kstate apply` and the daemon run it: the states through
// the engine, then ownership bookkeeping and prune. The ApplySet parent Secret holds
// the inventory (what kstate applied, with UIDs); prune deletes only what the pure
// decision in states/prune allows (inventory + same UID + our labels + no longer
// declared + no guard held), and the inventory is written back with what this cycle
// applied and removed. In test mode prune only lists what it would delete.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dynamic_client.hpp"
#include "manifests/state.hpp"
#include "states/applyset.hpp"
#include "states/cycle_inventory.hpp"
#include "states/engine.hpp"
#include "states/read_ahead.hpp"
#include "states/report.hpp"
#include "states/writer.hpp"

namespace kstate::states {

struct ReconcileOptions {
  EngineOptions engine;
  // The ApplySet that records what this run applies; nullopt: none (`kstate apply`
  // without --applyset-name): no parent read or written, no ownership labels (the
  // caller leaves engine.ownership_labels empty), no prune.
  std::optional<ApplySetParent> parent = ApplySetParent{};
  // Who writes the set (states/writer.hpp), recorded in its parent; a set another
  // writer reconciles is not written at all. Unset: no check (tests of one cycle).
  std::optional<Writer> writer;
  // The daemon runs with leader election and holds the Lease: it may take the set over
  // from another writer (what it does not declare is then inherited, never pruned).
  bool leader_elected = false;
  bool prune = false;
  bool allow_empty_prune = false;
  // Facts about the manifests that guard prune.
  bool load_failed = false;
  bool manifests_empty = false;
  std::string kstate_version;
  // When set, only the states declared in these files are read and run (the daemon
  // reconciling one changed file); every state still counts as declared for prune.
  std::optional<std::set<std::string>> only_files;
  // With only_files: of those files' states, only these (state IDs) run (the daemon
  // correcting drift on some objects, daemon/drift_watch.hpp).
  std::optional<std::set<std::string>> only_states;
  // Prune nothing now: count, in RunReport::prune_deferred, the recorded objects no
  // manifest declares any more. The daemon's reconcile of a file change, so that an
  // object moved from one file to another by two writes is never deleted in between:
  // a full reconcile prunes once the folder has been quiet (DaemonConfig::prune_delay).
  bool defer_prune = false;
  // With defer_prune: entries an earlier full cycle examined and kept for a cause of
  // their own (RunReport::kept_for_cause) are not counted in prune_deferred: a full
  // reconcile now would keep them again, so a file event would ask for one in vain
  // after every edit. The next resync looks at them again.
  std::set<ObjectKey> kept_before;
  // begin_cycle starts the LISTs a re-apply will need, from the inventory, so that they
  // are answered while the caller loads its manifests (read_ahead.hpp): `kstate apply`
  // and `kstate test`, which load after begin_cycle. Not with only_files.
  bool read_ahead = false;
  // Which of these manifest files (inventory sources of objects prune may delete) must
  // keep their objects whatever they declare now, and why (PruneInput::sources_held):
  // the daemon's files being written or just changed, an empty file, a FIFO. Called
  // once per cycle that prunes, with the sources of the undeclared entries only.
  std::function<std::map<std::string, std::string>(const std::set<std::string>& sources)> check_sources;
  // Wall clock for the times of pending inventory entries (injected by tests).
  std::function<std::chrono::system_clock::time_point()> now = [] { return std::chrono::system_clock::now(); };
};

// What a cycle reads before it needs the manifests: the ApplySet parent Secret and the
// inventory it holds. `kstate apply` reads it while its manifests are still loading
// (the two do not depend on each other).
struct CycleStart {
  struct Parent;  // the parent as read, and its inventory (reconcile.cpp)
  std::shared_ptr<Parent> parent;
  // The LISTs started from the inventory (ReconcileOptions::read_ahead), or null. Wait
  // for read_ahead->finished() before the client goes away.
  std::shared_ptr<ReadAhead> read_ahead;
};
asio::awaitable<CycleStart> begin_cycle(DynamicClient& client, KindResolver& resolver, const ReconcileOptions& options);

// Runs the states, then prune and the inventory update. Prune results are appended
// to the report as object_absent results named "prune:<Kind/namespace/name>"; why
// prune was held back (if it was) is added to the report's notes.
asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options);
// The same with the start of the cycle already read (begin_cycle with the same options).
asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options,
                                     CycleStart& start);

// The labels every applied object carries for `parent` (none without one).
std::map<std::string, std::string> ownership_labels(const ApplySetParent& parent);
std::map<std::string, std::string> ownership_labels(const std::optional<ApplySetParent>& parent);

}  // namespace kstate::states
