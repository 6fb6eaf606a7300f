// A cycle's inventory bookkeeping (see cycle_inventory.hpp): what the states declare,
// the pending record written before any write, earlier cycles' pending entries looked
// up, and the inventory written back.
#include "states/cycle_inventory.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "states/applyset.hpp"
#include "states/prune.hpp"
#include "states/state_id_label.hpp"

namespace kstate::states {
namespace {

// Pending entries of generateName states are named "<marker><prefix>" (':' cannot
// occur in an object name); the engine labels the objects such states create.
constexpr std::string_view generate_name_marker = "generateName:";

std::string label_of(const json::Value& object, const std::string& key) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "labels", key}), ""));
}

}  // namespace

using NamespacedKinds = std::map<GroupVersionKind, std::optional<bool>>;

asio::awaitable<std::optional<InventoryEntry>> declared_entry(KindResolver& resolver, const manifests::State& state,
                                                              const std::string& default_namespace,
                                                              NamespacedKinds& kinds) {
  if (state.function != manifests::Function::object_present) {
    co_return std::nullopt;
  }
  InventoryEntry entry;
  GroupVersionKind gvk = make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                                  json::string_or(json::find(state.object, "kind"), ""));
  entry.group = gvk.group;
  entry.version = gvk.version;
  entry.kind = gvk.kind;
  entry.name = std::string(json::string_or(json::find_path(state.object, {"metadata", "name"}), ""));
  entry.ns = std::string(json::string_or(json::find_path(state.object, {"metadata", "namespace"}), ""));
  entry.source = state.source.file;
  if (entry.name.empty()) {
    // A generateName object's name is only known once created: recorded under its
    // prefix, and found again by the prefix and the engine's state-ID label.
    std::string prefix = std::string(json::string_or(json::find_path(state.object, {"metadata", "generateName"}), ""));
    if (!prefix.empty()) {
      entry.name = std::string(generate_name_marker) + prefix;
    }
  }
  if (entry.name.empty() || entry.kind.empty()) {
    co_return std::nullopt;
  }
  auto known = kinds.find(gvk);
  if (known == kinds.end()) {
    auto resource = co_await resolver.resolve(gvk);
    known = kinds.emplace(gvk, resource.ok() ? std::optional<bool>(resource->namespaced) : std::nullopt).first;
  }
  if (known->second) {
    entry.ns = *known->second ? (entry.ns.empty() ? default_namespace : entry.ns) : std::string();
  }
  co_return entry;
}

// Pending entries of earlier cycles that no manifest declares any more: the object is
// looked up (one LIST per kind and namespace, by the ApplySet label) and, when it
// exists with kstate's labels, recorded with its UID so that prune can judge it. When
// it does not, the entry stays pending for pending_grace from the first cycle that
// found it missing (the cycle that wrote it may have died with the request that
// creates it still in flight at the API server), then is dropped; entries written
// before kstate recorded times are dropped at once, as they always were. Lookups that
// fail keep the entry for next time.
asio::awaitable<void> recover_pending(DynamicClient& client, KindResolver& resolver, Inventory& inventory,
                                      const std::set<ObjectKey>& declared, const std::string& id,
                                      const std::string& default_namespace, std::chrono::system_clock::time_point now) {
  // Keeps a not-found entry while its grace period runs; false when it is over.
  const auto keep_missing = [now](InventoryEntry& entry) {
    if (!entry.since) {
      return false;
    }
    if (!entry.missing_since) {
      entry.missing_since = now;
    }
    return now - *entry.missing_since < pending_grace;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<InventoryEntry>> groups;
  std::vector<InventoryEntry> still_pending;
  for (InventoryEntry& entry : inventory.pending) {
    if (inventory.find(entry.key()) != nullptr) {
      continue;  // recorded meanwhile
    }
    if (declared.count(entry.key()) > 0) {
      still_pending.push_back(entry);  // this cycle applies it and records it
      continue;
    }
    groups[{entry.group, entry.version, entry.kind, entry.ns}].push_back(entry);
  }
  std::vector<InventoryEntry> recovered;
  for (auto& [group_key, entries] : groups) {
    GroupVersionKind gvk{entries.front().group, entries.front().version, entries.front().kind};
    auto resource = co_await resolver.resolve(gvk);
    if (!resource.ok()) {
      if (resource.error().kind != ErrorKind::not_found) {
        still_pending.insert(still_pending.end(), entries.begin(), entries.end());
      }
      continue;  // kind gone: so are its objects
    }
    std::string ns =
        resource->namespaced ? (entries.front().ns.empty() ? default_namespace : entries.front().ns) : std::string();
    ListOptions ours;
    ours.label_selector = std::string(applyset_part_of_label) + "=" + id;
    auto listed = co_await client.list(*resource, ns, ours);
    if (!listed.ok()) {
      still_pending.insert(still_pending.end(), entries.begin(), entries.end());
      continue;
    }
    std::map<std::string, const json::Value*> by_name;
    if (const json::Value* items = json::find(*listed, "items"); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        by_name[std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""))] = &item;
      }
    }
    for (InventoryEntry& entry : entries) {
      if (entry.name.starts_with(generate_name_marker)) {
        // Every object this state may have created: the prefix, kstate's labels, the
        // state-ID label the engine puts on generateName objects, not recorded yet.
        const std::string prefix = entry.name.substr(generate_name_marker.size());
        bool found_any = false;
        for (const auto& [name, item] : by_name) {
          ObjectKey key{entry.group, entry.kind, ns, name};
          if (name.starts_with(prefix) && !label_of(*item, std::string(state_id_label)).empty() &&
              label_of(*item, std::string(managed_by_label)) == managed_by_value && inventory.find(key) == nullptr &&
              declared.count(key) == 0) {
            InventoryEntry created = entry;
            created.ns = ns;
            created.name = name;
            created.uid = std::string(json::string_or(json::find_path(*item, {"metadata", "uid"}), ""));
            if (!created.uid.empty()) {
              spdlog::info("recorded {} in the inventory: an interrupted cycle created it without recording it",
                           key.to_string());
              recovered.push_back(std::move(created));
              found_any = true;
            }
          }
        }
        if (!found_any && keep_missing(entry)) {
          still_pending.push_back(entry);
        }
        continue;
      }
      auto found = by_name.find(entry.name);
      if (found != by_name.end() && label_of(*found->second, std::string(managed_by_label)) == managed_by_value) {
        entry.ns = ns;
        entry.uid = std::string(json::string_or(json::find_path(*found->second, {"metadata", "uid"}), ""));
        if (!entry.uid.empty()) {
          spdlog::info("recorded {} in the inventory: an interrupted cycle applied it without recording it",
                       entry.key().to_string());
          recovered.push_back(entry);
          continue;
        }
      }
      if (keep_missing(entry)) {
        still_pending.push_back(entry);
      }
    }
  }
  inventory = merge_inventory(inventory, recovered, {});
  inventory.pending = std::move(still_pending);
  std::sort(inventory.pending.begin(), inventory.pending.end(),
            [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); });
}

// Inventory entries of generateName states: their names are only known once the
// engine ran the state, so in a cycle that does not run them (the daemon's one-file
// reconcile) they must still count as declared. Matched by file, kind and prefix.
void declare_generated(const std::vector<manifests::State>& states, const Inventory& inventory,
                       std::set<ObjectKey>& declared) {
  for (const auto& state : states) {
    if (state.function == manifests::Function::object_absent ||
        !json::string_or(json::find_path(state.object, {"metadata", "name"}), "").empty()) {
      continue;
    }
    std::string prefix = std::string(json::string_or(json::find_path(state.object, {"metadata", "generateName"}), ""));
    if (prefix.empty()) {
      continue;
    }
    GroupVersionKind gvk = make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                                    json::string_or(json::find(state.object, "kind"), ""));
    std::string ns = std::string(json::string_or(json::find_path(state.object, {"metadata", "namespace"}), ""));
    for (const auto& entry : inventory.entries) {
      if (entry.group == gvk.group && entry.kind == gvk.kind && entry.source == state.source.file &&
          entry.name.rfind(prefix, 0) == 0 && (ns.empty() || entry.ns == ns)) {
        declared.insert(entry.key());
      }
    }
  }
}

// Step "writer", when this writer claims the set: what it does not declare was another
// writer's (or is from before kstate recorded writers) and is marked inherited, never
// pruned by it. How many entries were newly marked.
std::size_t inherit_undeclared(Inventory& inventory, const std::set<ObjectKey>& declared) {
  std::size_t inherited = 0;
  for (InventoryEntry& entry : inventory.entries) {
    if (declared.count(entry.key()) == 0 && !is_inherited(entry)) {
      mark_inherited(entry);
      ++inherited;
    }
  }
  return inherited;
}

// Step "record pending": this cycle's intents become pending entries, unless recorded
// meanwhile (recover_pending) or already pending from an earlier cycle. Sorted first,
// so that both lists are walked once: a cold apply of N objects has N intents.
void add_pending(Inventory& inventory, std::vector<InventoryEntry> intents, bool earlier_pending,
                 std::chrono::system_clock::time_point now) {
  const auto by_key = [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); };
  std::stable_sort(intents.begin(), intents.end(), by_key);
  // Declared twice: the first counts.
  const auto same_key = [](const InventoryEntry& a, const InventoryEntry& b) {
    return a.key_fields() == b.key_fields();
  };
  intents.erase(std::unique(intents.begin(), intents.end(), same_key), intents.end());
  std::vector<InventoryEntry>& pending = inventory.pending;
  const std::size_t earlier = pending.size();  // sorted by key, one per key
  std::size_t at = 0;
  for (InventoryEntry& intent : intents) {
    if (earlier_pending && inventory.find(intent.key()) != nullptr) {
      continue;
    }
    while (at < earlier && by_key(pending[at], intent)) {
      ++at;
    }
    if (at < earlier && pending[at].key_fields() == intent.key_fields()) {
      // Applied again by this cycle, which may die with that request in flight
      // too: the grace period starts again when a later cycle finds it missing.
      if (!pending[at].since) {
        pending[at].since = now;
      }
      pending[at].missing_since.reset();
      continue;
    }
    intent.since = now;
    pending.push_back(std::move(intent));
  }
  std::inplace_merge(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(earlier), pending.end(), by_key);
}

// Step "write back": the inventory after this cycle, what it applied recorded and what
// it pruned forgotten. What stays pending: what this cycle meant to apply but did not
// record (a state failed, perhaps after the server created the object); the next cycle
// looks.
Inventory next_inventory(const Inventory& loaded, const std::vector<InventoryEntry>& applied,
                         const std::vector<ObjectKey>& removed, const std::string& default_namespace) {
  Inventory next = merge_inventory(loaded, applied, removed);
  for (const InventoryEntry& entry : loaded.pending) {
    ObjectKey defaulted{entry.group, entry.kind, default_namespace, entry.name};
    if (next.find(entry.key()) == nullptr && (!entry.ns.empty() || next.find(defaulted) == nullptr)) {
      next.pending.push_back(entry);
    }
  }
  return next;
}

}  // namespace kstate::states
