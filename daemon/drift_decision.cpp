// decide_drift and the snapshot it compares (see drift_decision.hpp).
#include "daemon/drift_decision.hpp"

#include <functional>
#include <map>

namespace kstate::daemon {
namespace {

std::string string_at(const json::Value& object, std::string_view key) {
  return std::string(json::string_or(json::find(object, key), ""));
}

// 64 bits of std::hash: two different field sets that collide would only leave that one
// drift to the next resync; the snapshot stays a few words instead of the field set.
std::string digest(const json::Value& fields) {
  return std::to_string(std::hash<std::string>{}(json::dump(fields)));
}

std::size_t members(const json::Value& value) {
  std::size_t count = 0;
  if (value.IsObject()) {
    for (const auto& member : value.GetObject()) {
      count += 1 + members(member.value);
    }
  }
  return count;
}

}  // namespace

ObjectSnapshot snapshot_of(const json::Value& object, std::string_view field_manager,
                           const std::map<std::string, std::string>& ownership_labels) {
  ObjectSnapshot snapshot;
  const json::Value* metadata = json::find(object, "metadata");
  if (metadata == nullptr || !metadata->IsObject()) {
    snapshot.ownership_labels = ownership_labels.empty();
    return snapshot;
  }
  snapshot.uid = string_at(*metadata, "uid");
  const json::Value* labels = json::find(*metadata, "labels");
  for (const auto& [name, value] : ownership_labels) {
    if (labels == nullptr || json::string_or(json::find(*labels, name), "") != value ||
        json::find(*labels, name) == nullptr) {
      snapshot.ownership_labels = false;
    }
  }
  const json::Value* entries = json::find(*metadata, "managedFields");
  if (entries == nullptr || !entries->IsArray()) {
    return snapshot;
  }
  std::string newest_other_time;
  for (const auto& entry : entries->GetArray()) {
    if (!entry.IsObject() || !string_at(entry, "subresource").empty()) {
      continue;  // status and scale writes never touch what kstate applies
    }
    const std::string manager = string_at(entry, "manager");
    if (manager == field_manager) {
      const json::Value* fields = json::find(entry, "fieldsV1");
      snapshot.kstate_entry =
          ManagerEntry{string_at(entry, "operation"), string_at(entry, "apiVersion"), string_at(entry, "time"),
                       fields != nullptr ? digest(*fields) : "", fields != nullptr ? members(*fields) : 0};
    } else if (const std::string time = string_at(entry, "time"); time >= newest_other_time) {
      // RFC 3339 in UTC with whole seconds: text order is time order.
      newest_other_time = time;
      snapshot.latest_other_manager = manager;
    }
  }
  return snapshot;
}

const char* to_string(Drift drift) {
  switch (drift) {
    case Drift::none:
      return "none";
    case Drift::own_write:
      return "own_write";
    case Drift::first_sight:
      return "first_sight";
    case Drift::deleted:
      return "deleted";
    case Drift::labels_removed:
      return "labels_removed";
    case Drift::replaced:
      return "replaced";
    case Drift::fields_taken:
      return "fields_taken";
  }
  return "none";
}

bool needs_correction(Drift drift) {
  return drift == Drift::deleted || drift == Drift::labels_removed || drift == Drift::replaced ||
         drift == Drift::fields_taken;
}

Drift decide_drift(WatchEventType type, const ObjectSnapshot* before, const ObjectSnapshot& after) {
  if (type == WatchEventType::deleted) {
    return Drift::deleted;
  }
  if (type != WatchEventType::added && type != WatchEventType::modified) {
    return Drift::none;  // bookmarks and errors are the watch's business
  }
  if (before == nullptr) {
    return Drift::first_sight;
  }
  if (!after.ownership_labels) {
    return Drift::labels_removed;
  }
  if (!before->uid.empty() && !after.uid.empty() && before->uid != after.uid) {
    return Drift::replaced;
  }
  const auto& was = before->kstate_entry;
  const auto& now = after.kstate_entry;
  if (!now) {
    // Every field kstate owned taken by others, or never written by kstate (adopted
    // objects before their first apply).
    return was ? Drift::fields_taken : Drift::none;
  }
  if (!was || was->time != now->time || was->operation != now->operation || was->api_version != now->api_version) {
    return Drift::own_write;
  }
  if (was->fields == now->fields) {
    return Drift::none;
  }
  // Within the same second: only kstate's own write adds to its set.
  return now->field_count > was->field_count ? Drift::own_write : Drift::fields_taken;
}

}  // namespace kstate::daemon
