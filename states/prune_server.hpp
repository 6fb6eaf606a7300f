// Prune against the server as it is now: what the pure decision (states/prune.hpp)
// needs read before it runs, and what it decided, done. The candidates are the
// inventory entries no manifest declares, each read by name; a Namespace or CRD among
// them is listed to find anything kstate does not manage inside it (unknown is never
// deleted); the deletes go out with the recorded UID as precondition. reconcile.cpp
// calls these in its "prune" step; the rules of what may be deleted live in prune.hpp.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <map>
#include <set>
#include <vector>

#include "core/dynamic_client.hpp"
#include "states/engine.hpp"
#include "states/inventory.hpp"
#include "states/prune.hpp"
#include "states/report.hpp"

namespace kstate::states {

// The live state of every inventory entry `declared` does not name (a failed read
// leaves it out: unknown).
asio::awaitable<std::map<ObjectKey, LiveObject>> read_prune_candidates(DynamicClient& client, KindResolver& resolver,
                                                                       const Inventory& inventory,
                                                                       const std::set<ObjectKey>& declared);

// For every Namespace and CRD among the candidates found live with the recorded UID:
// why it must be kept because of what it holds (missing from the map: it holds
// nothing kstate does not manage).
asio::awaitable<std::map<ObjectKey, ContainerHold>> containers_held(DynamicClient& client, KindResolver& resolver,
                                                                    const Inventory& inventory,
                                                                    const std::map<ObjectKey, LiveObject>& live,
                                                                    const std::set<ObjectKey>& declared);

// The decision's kept entries into the report's notes (and kept_for_cause).
void report_kept(const PruneDecision& decision, RunReport& report);

// The decision's deletes, each a "prune:<Kind/namespace/name>" result in the report;
// the keys of those gone are appended to `removed` (real mode only).
asio::awaitable<void> delete_pruned(DynamicClient& client, KindResolver& resolver,
                                    const std::vector<PlannedDelete>& deletes, bool test_mode, RunReport& report,
                                    std::vector<ObjectKey>& removed);

}  // namespace kstate::states
