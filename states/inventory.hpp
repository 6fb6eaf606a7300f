// kstate's inventory: the objects kstate has applied, each with the UID the server gave
// it and the manifest file that declared it. It is what makes prune safe: an object is
// only ever deleted if it is recorded here with the same UID. Stored as JSON, base64 in
// the ApplySet parent Secret's data (key inventory.json). Reading it tells apart "no
// inventory yet" (first run: nothing to prune) from "corrupt" (prune must refuse), so
// a damaged Secret can never turn into "prune everything". Pure logic: no I/O.
#pragma once

#include <chrono>
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::states {

// The identity prune compares: group, kind, namespace, name (the version does not
// change which object it is).
struct ObjectKey {
  std::string group;  // "" for core
  std::string kind;
  std::string ns;  // "" for cluster-scoped
  std::string name;
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  std::string to_string() const;  // "Kind.group/ns/name", "Kind/name"
};

struct InventoryEntry {
  std::string group;
  std::string version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
  std::string source;  // manifest file that declared it
  // Pending entries only (see Inventory::pending), whole seconds: when the entry was
  // added, and when a later cycle first found no object for it. nullopt in inventories
  // written before kstate recorded them; recorded entries never carry them.
  std::optional<std::chrono::system_clock::time_point> since{};
  std::optional<std::chrono::system_clock::time_point> missing_since{};
  ObjectKey key() const { return {group, kind, ns, name}; }
  // The key's fields by reference, ordered as ObjectKey orders them: comparing entries
  // through key() copied four strings on each side of every comparison.
  auto key_fields() const { return std::tie(group, kind, ns, name); }
  friend bool operator==(const InventoryEntry&, const InventoryEntry&) = default;
};

struct Inventory {
  std::vector<InventoryEntry> entries;  // sorted by key, one entry per key
  // Objects a cycle was about to apply, recorded before it applied them (no UID yet):
  // if the cycle dies before it can record their UIDs, the next cycle finds them by
  // name and ownership labels and records them, so nothing kstate created is ever
  // orphaned. Sorted by key, one per key; never pruned as such. A cycle that dies does
  // not stop the requests it had in flight: the API server may still create the object
  // after the next cycle looked, so an entry whose object is not found is kept for a
  // grace period (see reconcile.cpp) before it is dropped.
  std::vector<InventoryEntry> pending;
  const InventoryEntry* find(const ObjectKey& key) const;
  bool is_pending(const ObjectKey& key) const;
  friend bool operator==(const Inventory&, const Inventory&) = default;
};

constexpr std::string_view inventory_data_key = "inventory.json";
// The format written. Format 1 (kstate before 2026-11-21) still decodes.
constexpr int inventory_format_version = 2;

// Format 2, entries grouped by what they share and each file written once, so that a
// Secret (1 MiB of data at most) holds ~10,000 entries with 40-character names or one
// file per object (format 1: ~4,500):
// {"version":2,"sourceRoot":"dir/","sources":["a.yaml",..],"entries":[{"group":..,
// "version":..,"kind":..,"namespace":..,"names":[..],"uids":[..],"sources":[0,..]}],
// "pending":[{same, without "uids", plus "since" and "missingSince" when known, RFC 3339
// UTC like "2026-11-21T10:00:00Z"}]}. A source is sourceRoot + sources[index]; groups are
// ordered by (group, kind, namespace, version, times), names as the entries are sorted,
// so that an unchanged inventory encodes the same; "pending" only when there are
// pending entries.
// Format 1: {"version":1,"entries":[{"group":..,"version":..,"kind":..,"namespace":..,
// "name":..,"uid":..,"source":..}],"pending":[same fields, uid "", plus the times]}.
std::string encode_inventory(const Inventory& inventory);
// RFC 3339 in UTC, whole seconds: "2026-11-21T10:00:00Z".
std::string format_time(std::chrono::system_clock::time_point time);
// Strict: any malformed entry makes the whole inventory invalid (invalid_input).
// Pending entries without "since" (written by older kstate versions) decode with no time.
// Reads formats 1 and 2; a later format is invalid (an older kstate never guesses).
Result<Inventory> decode_inventory(std::string_view json_text);

enum class InventoryStatus {
  ok,       // decoded
  missing,  // no parent Secret or no inventory key yet: an empty inventory
  corrupt,  // present but unreadable: prune must refuse
};
struct LoadedInventory {
  InventoryStatus status = InventoryStatus::missing;
  Inventory inventory;
  std::string problem;  // for corrupt: what was wrong (never the data itself)
};
// From the parent Secret as read from the server; nullptr when it does not exist.
LoadedInventory load_inventory(const json::Value* parent_secret);

// The inventory after a cycle: previous entries, minus the objects known to be gone
// (deleted, or found absent), plus every object applied in the cycle with its new UID
// (replacing the old entry). Deletes that failed are simply not in `removed`, so they
// stay and are retried next cycle; applies that failed keep their previous entry.
// Recorded entries carry no pending times.
Inventory merge_inventory(const Inventory& previous, const std::vector<InventoryEntry>& applied,
                          const std::vector<ObjectKey>& removed);

}  // namespace kstate::states
