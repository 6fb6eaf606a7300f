// A cycle's inventory bookkeeping, the steps of reconcile() around the engine that
// keep the ApplySet parent's record true: the entry each state declares, the pending
// entries recorded before anything is applied (so a cycle that dies half-way never
// leaves an object kstate created but did not record), earlier cycles' pending entries
// looked up on the server, the entries a claiming writer inherits, and the inventory
// written back after the cycle. Pure functions except recover_pending, which lists.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dynamic_client.hpp"
#include "manifests/state.hpp"
#include "states/engine.hpp"
#include "states/inventory.hpp"

namespace kstate::states {

// How long a pending inventory entry whose object is not found is kept, counted from
// the first cycle that found it missing. A cycle killed with a request in flight does
// not stop that request: the API server finishes it up to its request timeout
// (kube-apiserver's --request-timeout, 60 s by default), so the object may appear after
// the next cycle looked. Twice that timeout also covers clocks of the hosts that write
// and read the entry differing by up to a minute.
constexpr std::chrono::seconds pending_grace{120};

// Whether each kind is namespaced (nullopt: the resolver does not know it), resolved
// once per cycle instead of once per state.
using NamespacedKinds = std::map<GroupVersionKind, std::optional<bool>>;

// The entry of the object a state declares, before the engine runs (namespace
// defaulted when discovery knows the kind is namespaced; as written when the kind is
// not known yet; a generateName object under its prefix). nullopt for states that
// declare no named object.
asio::awaitable<std::optional<InventoryEntry>> declared_entry(KindResolver& resolver, const manifests::State& state,
                                                              const std::string& default_namespace,
                                                              NamespacedKinds& kinds);

// Earlier cycles' pending entries no manifest declares any more, looked up by the
// ApplySet label `id`: recorded when found with kstate's labels, kept for
// pending_grace when not, kept when the lookup fails.
asio::awaitable<void> recover_pending(DynamicClient& client, KindResolver& resolver, Inventory& inventory,
                                      const std::set<ObjectKey>& declared, const std::string& id,
                                      const std::string& default_namespace, std::chrono::system_clock::time_point now);

// Adds to `declared` the recorded objects of generateName states (matched by file,
// kind and prefix): declared even in a cycle that does not run those states.
void declare_generated(const std::vector<manifests::State>& states, const Inventory& inventory,
                       std::set<ObjectKey>& declared);

// Marks inherited every entry `declared` does not name; how many were newly marked.
std::size_t inherit_undeclared(Inventory& inventory, const std::set<ObjectKey>& declared);

// This cycle's intents become pending entries (since `now`), unless recorded or
// already pending.
void add_pending(Inventory& inventory, std::vector<InventoryEntry> intents, bool earlier_pending,
                 std::chrono::system_clock::time_point now);

// The inventory after the cycle: `applied` recorded, `removed` forgotten, pending
// entries this cycle did not record kept.
Inventory next_inventory(const Inventory& loaded, const std::vector<InventoryEntry>& applied,
                         const std::vector<ObjectKey>& removed, const std::string& default_namespace);

}  // namespace kstate::states
