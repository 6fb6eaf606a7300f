// The prune decision (see prune.hpp). Checks run from the cheapest proof of "keep" to
// the most specific, and containers (Namespaces, CRDs) are decided only after every
// other entry, because whether they are empty depends on what else is deleted.
#include "states/prune.hpp"

#include <algorithm>

#include "core/crd.hpp"
#include "manifests/conventions.hpp"
#include "states/applyset.hpp"
#include "states/ordering.hpp"

namespace kstate::states {

namespace {

std::map<std::string, std::string> string_map(const json::Value* object) {
  std::map<std::string, std::string> result;
  if (object == nullptr || !object->IsObject())
    return result;
  for (const auto& member : object->GetObject()) {
    if (member.value.IsString())
      result.emplace(std::string(member.name.GetString(), member.name.GetStringLength()),
                     std::string(member.value.GetString(), member.value.GetStringLength()));
  }
  return result;
}

std::string value_of(const std::map<std::string, std::string>& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? std::string() : it->second;
}

// The opt-outs kstate honours, as labels or annotations: its own and the ones of tools
// whose manifests kstate is likely to take over (manifests/conventions.hpp: Flux, the
// addon manager, Helm, Argo CD). A value it does not know protects nothing.
std::string prune_opt_out(const LiveObject& live) {
  const manifests::Conventions conventions = manifests::read_conventions(live.labels, live.annotations);
  return conventions.prune_protected ? conventions.prune_mark : std::string();
}

bool is_namespace(const ObjectKey& key) {
  return tier_of(key.group, key.kind) == Tier::namespaces;
}
bool is_crd(const ObjectKey& key) {
  return kstate::is_crd(key.group, key.kind);
}

// A CRD is named <plural>.<group>: without the live spec, its group is all we know.
std::string crd_group_from_name(const std::string& name) {
  std::size_t dot = name.find('.');
  return dot == std::string::npos ? std::string() : name.substr(dot + 1);
}

}  // namespace

LiveObject live_object_from_json(const json::Value& object) {
  LiveObject live;
  live.state = LiveState::found;
  live.uid = json::string_at(object, {"metadata", "uid"});
  live.labels = string_map(json::find_path(object, {"metadata", "labels"}));
  live.annotations = string_map(json::find_path(object, {"metadata", "annotations"}));
  live.defines_group = json::string_at(object, {"spec", "group"});
  live.defines_kind = json::string_at(object, {"spec", "names", "kind"});
  live.defines_plural = json::string_at(object, {"spec", "names", "plural"});
  live.defines_namespaced = json::string_or(json::find_path(object, {"spec", "scope"}), "Namespaced") != "Cluster";
  if (const json::Value* versions = json::find_path(object, {"spec", "versions"});
      versions != nullptr && versions->IsArray()) {
    for (const auto& version : versions->GetArray()) {
      const json::Value* served = json::find(version, "served");
      std::string name(json::string_or(json::find(version, "name"), ""));
      if (served != nullptr && served->IsTrue() && !name.empty()) {
        live.served_versions.push_back(std::move(name));
      }
    }
  }
  return live;
}

bool is_inherited(const InventoryEntry& entry) {
  return entry.source.starts_with(inherited_source_prefix);
}

void mark_inherited(InventoryEntry& entry) {
  if (!is_inherited(entry)) {
    entry.source = std::string(inherited_source_prefix) + entry.source;
  }
}

std::vector<std::string> held_guards(const PruneGuards& guards) {
  std::vector<std::string> held;
  if (!guards.prune_enabled)
    held.emplace_back("prune is off (--prune not given)");
  if (guards.load_failed)
    held.emplace_back("a manifest file failed to load");
  if (guards.state_failed)
    held.emplace_back("a state failed in this cycle");
  if (guards.discovery_failed)
    held.emplace_back("API discovery failed");
  if (guards.manifests_empty && !guards.allow_empty_prune)
    held.emplace_back("the manifest directory is empty or missing (--allow-empty-prune not given)");
  if (guards.inventory_corrupt)
    held.emplace_back("the inventory in the ApplySet parent is corrupt");
  if (guards.other_writer)
    held.emplace_back("another writer reconciles this ApplySet");
  return held;
}

const char* to_string(KeepReason reason) {
  switch (reason) {
    case KeepReason::declared:
      return "declared";
    case KeepReason::guard:
      return "prune held back";
    case KeepReason::already_gone:
      return "already gone";
    case KeepReason::not_checked:
      return "not checked";
    case KeepReason::uid_mismatch:
      return "UID mismatch";
    case KeepReason::labels_removed:
      return "kstate labels removed";
    case KeepReason::prune_disabled:
      return "prune disabled";
    case KeepReason::inherited:
      return "recorded by another writer of the ApplySet and never declared by this one";
    case KeepReason::source_held:
      return "its manifest file is not settled";
    case KeepReason::still_has_members:
      return "still has managed objects";
    case KeepReason::holds_unmanaged:
      return "holds objects kstate does not manage";
    case KeepReason::contents_unknown:
      return "its contents could not all be listed";
  }
  return "kept";
}

PruneDecision decide_prune(const PruneInput& input) {
  PruneDecision decision;
  decision.held_back_by = held_guards(input.guards);
  std::string guard_detail;
  for (const std::string& guard : decision.held_back_by)
    guard_detail += (guard_detail.empty() ? "" : "; ") + guard;

  const auto keep = [&](const InventoryEntry& entry, KeepReason reason, std::string detail) {
    decision.kept.push_back({entry, reason, std::move(detail)});
  };

  std::set<ObjectKey> gone;
  std::vector<const InventoryEntry*> candidates;            // pass all checks so far
  std::vector<const InventoryEntry*> container_candidates;  // Namespaces and CRDs among them
  std::map<const InventoryEntry*, const LiveObject*> live_of;
  for (const InventoryEntry& entry : input.inventory.entries) {
    const ObjectKey key = entry.key();
    if (input.declared.count(key) != 0) {
      keep(entry, KeepReason::declared, "");
      continue;
    }
    if (!decision.held_back_by.empty()) {
      keep(entry, KeepReason::guard, guard_detail);
      continue;
    }
    auto live_it = input.live.find(key);
    if (live_it == input.live.end() || live_it->second.state == LiveState::unknown) {
      keep(entry, KeepReason::not_checked, "the live object could not be read");
      continue;
    }
    const LiveObject& live = live_it->second;
    if (live.state == LiveState::not_found) {
      keep(entry, KeepReason::already_gone, "");
      decision.forget.push_back(key);
      gone.insert(key);
      continue;
    }
    if (live.uid != entry.uid) {
      keep(entry, KeepReason::uid_mismatch, "recorded UID " + entry.uid + ", live UID " + live.uid);
      decision.forget.push_back(key);
      continue;
    }
    if (value_of(live.labels, std::string(applyset_part_of_label)) != input.applyset_id ||
        value_of(live.labels, std::string(managed_by_label)) != managed_by_value) {
      keep(entry, KeepReason::labels_removed,
           std::string(applyset_part_of_label) + " or " + std::string(managed_by_label) + " no longer kstate's");
      decision.forget.push_back(key);
      continue;
    }
    if (std::string opt_out = prune_opt_out(live); !opt_out.empty()) {
      keep(entry, KeepReason::prune_disabled, opt_out);
      continue;
    }
    if (is_inherited(entry)) {
      keep(entry, KeepReason::inherited, "declared in " + entry.source.substr(inherited_source_prefix.size()));
      continue;
    }
    if (auto held = input.sources_held.find(entry.source); held != input.sources_held.end()) {
      keep(entry, KeepReason::source_held, entry.source + ": " + held->second);
      continue;
    }
    live_of[&entry] = &live;
    (is_namespace(key) || is_crd(key) ? container_candidates : candidates).push_back(&entry);
  }

  // What remains after this prune: every inventory entry not deleted and not gone, and
  // every declared object. A container holding any of them stays.
  std::set<const InventoryEntry*> deleting(candidates.begin(), candidates.end());
  deleting.insert(container_candidates.begin(), container_candidates.end());
  // (An entry with another UID or without our labels is no longer kstate's, but the
  // object exists: deleting its Namespace or CRD would delete it too, so it counts.)
  std::vector<ObjectKey> remaining(input.declared.begin(), input.declared.end());
  for (const InventoryEntry& entry : input.inventory.entries) {
    if (deleting.count(&entry) == 0 && gone.count(entry.key()) == 0)
      remaining.push_back(entry.key());
  }
  for (const InventoryEntry* container : container_candidates) {
    const ObjectKey key = container->key();
    const LiveObject& live = *live_of[container];
    if (auto held = input.containers_held.find(key); held != input.containers_held.end()) {
      const bool unmanaged = held->second.why == ContainerHold::Why::unmanaged_object;
      keep(*container, unmanaged ? KeepReason::holds_unmanaged : KeepReason::contents_unknown,
           unmanaged ? held->second.detail + ", which kstate does not manage" : held->second.detail);
      continue;
    }
    std::string member;
    for (const ObjectKey& other : remaining) {
      bool inside = false;
      if (is_namespace(key)) {
        inside = other.ns == key.name;
      } else if (!live.defines_kind.empty()) {
        inside = other.group == live.defines_group && other.kind == live.defines_kind;
      } else {
        inside = other.group == crd_group_from_name(key.name) && !is_crd(other);
      }
      if (inside) {
        member = other.to_string();
        break;
      }
    }
    if (!member.empty()) {
      keep(*container, KeepReason::still_has_members, member);
      continue;
    }
    candidates.push_back(container);
  }

  // Waves in reverse creation-tier order; numbered without gaps.
  std::sort(candidates.begin(), candidates.end(), [](const InventoryEntry* a, const InventoryEntry* b) {
    const int tier_a = static_cast<int>(tier_of(a->group, a->kind));
    const int tier_b = static_cast<int>(tier_of(b->group, b->kind));
    if (tier_a != tier_b)
      return tier_a > tier_b;
    return a->key() < b->key();
  });
  int wave = -1;
  int previous_tier = -1;
  for (const InventoryEntry* entry : candidates) {
    const int tier = static_cast<int>(tier_of(entry->group, entry->kind));
    if (tier != previous_tier) {
      ++wave;
      previous_tier = tier;
    }
    decision.deletes.push_back({*entry, wave});
  }
  return decision;
}

}  // namespace kstate::states
