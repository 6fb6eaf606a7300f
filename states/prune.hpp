// The prune decision: which recorded objects to delete at the end of a cycle, in what
// order, and for every other inventory entry why it is kept. An object is deleted only
// when it is in the inventory, the live object has the same UID, still carries both of
// kstate's labels, is declared by no manifest, is not marked prune-disabled
// (kstate.io/prune, Flux's kustomize.toolkit.fluxcd.io/prune, addon-manager's
// EnsureExists), was recorded by this writer of the ApplySet (not inherited from
// another one, see states/writer.hpp), and the manifest file that declared it is not
// being written, freshly changed, empty or something other than a regular file; and
// only in a cycle no guard holds back (a file failed to load, a state failed,
// discovery failed, the manifest directory is empty or missing without
// --allow-empty-prune, the inventory is corrupt, another writer holds the set, prune
// is off). Namespaces and CRDs go last, and only when nothing kstate manages or still
// declares remains in them (or of their kind), and a listing of the server as it is
// now found nothing else in them either (see ContainerHold). Objects outside the
// inventory are never considered at all. Pure logic: the engine fetches the live
// objects, calls this, then deletes (or, in test mode, lists) the result.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "states/inventory.hpp"

namespace kstate::states {

enum class LiveState {
  found,
  not_found,  // the server answered 404
  unknown,    // not looked up, or the lookup failed: never delete on a guess
};

// What prune needs of a live object.
struct LiveObject {
  LiveState state = LiveState::unknown;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  // For a CustomResourceDefinition: spec.group and spec.names.kind, and what prune
  // needs to list its custom resources itself, whatever discovery says: the plural,
  // whether they are namespaced, and the versions the CRD serves.
  std::string defines_group;
  std::string defines_kind;
  std::string defines_plural;
  bool defines_namespaced = true;
  std::vector<std::string> served_versions;
};
// A found object from its JSON as the server returned it.
LiveObject live_object_from_json(const json::Value& object);

struct PruneGuards {
  bool prune_enabled = false;      // --prune
  bool load_failed = false;        // a manifest file failed to read or parse
  bool state_failed = false;       // a state failed in this cycle
  bool discovery_failed = false;   // discovery was incomplete or failed
  bool manifests_empty = false;    // the manifest directory is empty or missing
  bool allow_empty_prune = false;  // --allow-empty-prune
  bool inventory_corrupt = false;  // the parent's inventory could not be read
  bool other_writer = false;       // another writer reconciles this ApplySet (states/writer.hpp)
};
// The guards that hold prune back, as a user reads them; empty when prune may run.
std::vector<std::string> held_guards(const PruneGuards& guards);

enum class KeepReason {
  declared,           // still declared by a manifest
  guard,              // a guard held prune back in this cycle
  already_gone,       // not found on the server
  not_checked,        // no live object information (lookup failed or skipped)
  uid_mismatch,       // a different object now has this name
  labels_removed,     // no longer carries kstate's labels: someone took it over
  prune_disabled,     // kstate.io/prune: disabled or the Flux/addon-manager equivalent
  inherited,          // recorded by another writer of the set, never declared by this one
  source_held,        // its manifest file is being written, freshly changed, empty or not a file
  still_has_members,  // a Namespace/CRD that still holds objects kstate manages or declares
  holds_unmanaged,    // a Namespace/CRD the server says holds an object kstate does not manage
  contents_unknown,   // a Namespace/CRD whose contents could not all be listed
};
const char* to_string(KeepReason reason);

// What a listing of the server, as it is now, found in a Namespace or CRD that prune
// may delete (states/reconcile lists them): deleting it would cascade to that.
struct ContainerHold {
  enum class Why {
    unmanaged_object,  // an object not in the inventory with that UID
    not_listed,        // a list failed (403, a group answering 503, ...) or could not be made
  };
  Why why = Why::not_listed;
  std::string detail;  // the object ("ConfigMap/team/x"), or what could not be listed and why
};

// The marker of an inherited inventory entry's source (InventoryEntry::source): an
// entry recorded by another writer of the ApplySet that this writer has not declared
// since it took the set over. Never pruned; declaring the object again makes the
// entry this writer's (the next apply records its own source).
inline constexpr std::string_view inherited_source_prefix = "inherited:";
bool is_inherited(const InventoryEntry& entry);
// The entry as inherited (no change when it already is).
void mark_inherited(InventoryEntry& entry);

struct PruneInput {
  Inventory inventory;
  std::set<ObjectKey> declared;          // objects the manifests want present (object_present/updated)
  std::map<ObjectKey, LiveObject> live;  // for inventory entries; missing = unknown
  PruneGuards guards;
  std::string applyset_id;
  // Namespaces/CRDs (their keys) that hold objects outside the inventory, or whose
  // contents could not be listed: deleting them would cascade to objects kstate does
  // not own. Filled by states/reconcile from the server as it is now.
  std::map<ObjectKey, ContainerHold> containers_held;
  // Manifest files (InventoryEntry::source) whose objects are kept whatever the file
  // declares now, with why: open for writing or changed moments ago (read again once
  // it settles), empty, or a FIFO, socket or device where a manifest was. Filled by the
  // caller (the daemon's daemon/manifest_settle.hpp, `kstate apply`'s check of its files).
  std::map<std::string, std::string> sources_held;
};

struct PlannedDelete {
  InventoryEntry entry;
  int wave = 0;  // deletes of one wave may run together; a wave starts after the previous is done
};

struct KeptEntry {
  InventoryEntry entry;
  KeepReason reason = KeepReason::declared;
  std::string detail;  // e.g. which guard, which UIDs, which members remain
};

struct PruneDecision {
  std::vector<PlannedDelete> deletes;  // ordered: other kinds first, ..., CRDs, Namespaces last
  std::vector<KeptEntry> kept;         // every inventory entry not deleted, with its reason
  // Entries to drop from the inventory: gone, or no longer kstate's and not declared.
  std::vector<ObjectKey> forget;
  std::vector<std::string> held_back_by;  // the guards, when prune did not run
};

PruneDecision decide_prune(const PruneInput& input);

}  // namespace kstate::states
