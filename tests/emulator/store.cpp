// Object store, watch history and snapshots (see store.hpp).
#include "tests/emulator/store.hpp"

#include <algorithm>
#include <utility>

namespace kstate::emulator {

std::string object_key(std::string_view group, std::string_view resource, std::string_view namespace_name,
                       std::string_view name) {
  std::string key;
  key.reserve(group.size() + resource.size() + namespace_name.size() + name.size() + 3);
  key.append(group).append("/").append(resource).append("/").append(namespace_name).append("/").append(name);
  return key;
}

std::string collection_prefix(std::string_view group, std::string_view resource) {
  return std::string(group) + "/" + std::string(resource) + "/";
}

ObjectPtr Store::get(const std::string& key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, ObjectPtr>> Store::range(const std::string& prefix,
                                                            const std::string& after_key) const {
  std::vector<std::pair<std::string, ObjectPtr>> result;
  auto it = after_key.empty() ? objects_.lower_bound(prefix) : objects_.upper_bound(after_key);
  for (; it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    result.emplace_back(it->first, it->second);
  }
  return result;
}

void Store::put(const std::string& key, ObjectPtr object, std::string event_type) {
  ObjectPtr& stored = objects_[key];
  ObjectPtr previous = std::exchange(stored, object);
  auto slash = key.find('/', key.find('/') + 1);
  auto namespace_end = key.find('/', slash + 1);
  record({version_, std::move(event_type), key.substr(0, slash + 1), key.substr(slash + 1, namespace_end - slash - 1),
          std::move(object), std::move(previous)});
}

void Store::erase(const std::string& key, ObjectPtr final_object) {
  objects_.erase(key);
  auto slash = key.find('/', key.find('/') + 1);
  auto namespace_end = key.find('/', slash + 1);
  record({version_, "DELETED", key.substr(0, slash + 1), key.substr(slash + 1, namespace_end - slash - 1),
          std::move(final_object), nullptr});
}

void Store::record(WatchEvent event) {
  history_.push_back(std::move(event));
  while (history_.size() > history_limit_) {
    oldest_watchable_ = history_.front().resource_version;
    history_.pop_front();
  }
  if (on_change) {
    on_change();
  }
}

std::vector<const WatchEvent*> Store::events_after(std::uint64_t after) const {
  std::vector<const WatchEvent*> result;
  auto it =
      std::upper_bound(history_.begin(), history_.end(), after,
                       [](std::uint64_t version, const WatchEvent& event) { return version < event.resource_version; });
  for (; it != history_.end(); ++it) {
    result.push_back(&*it);
  }
  return result;
}

void Store::compact() {
  history_.clear();
  oldest_watchable_ = version_;
}

void Store::compact_to(std::uint64_t revision) {
  revision = std::min(revision, version_);
  while (!history_.empty() && history_.front().resource_version <= revision) {
    history_.pop_front();
  }
  oldest_watchable_ = std::max(oldest_watchable_, revision);
}

std::string Store::snapshot() const {
  json::Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set(doc, "resourceVersion", json::Value(static_cast<uint64_t>(version_)), allocator);
  json::Value objects(rapidjson::kArrayType);
  for (const auto& [key, object] : objects_) {
    json::Value entry(rapidjson::kObjectType);
    json::set_string(entry, "key", key, allocator);
    json::set(entry, "object", json::Value(*object, allocator), allocator);
    objects.PushBack(std::move(entry), allocator);
  }
  json::set(doc, "objects", std::move(objects), allocator);
  return json::dump(doc);
}

Status Store::restore(std::string_view snapshot) {
  auto doc = json::parse(snapshot);
  if (!doc) {
    return doc.error();
  }
  const json::Value* version = json::find(*doc, "resourceVersion");
  const json::Value* objects = json::find(*doc, "objects");
  if (version == nullptr || !version->IsUint64() || objects == nullptr || !objects->IsArray()) {
    return Error(ErrorKind::io, "store snapshot lacks resourceVersion or objects");
  }
  objects_.clear();
  history_.clear();
  for (const auto& entry : objects->GetArray()) {
    auto key = json::get_string(entry, "key");
    const json::Value* object = json::find(entry, "object");
    if (!key || object == nullptr) {
      return Error(ErrorKind::io, "store snapshot entry lacks key or object");
    }
    objects_[std::string(*key)] = std::make_shared<const json::Document>(json::copy(*object));
  }
  version_ = version->GetUint64();
  oldest_watchable_ = version_;
  return ok_status();
}

std::string Store::journal_line(const WatchEvent& event) {
  std::string name(json::string_or(json::find_path(*event.object, {"metadata", "name"}), ""));
  json::Document line(rapidjson::kObjectType);
  auto& allocator = line.GetAllocator();
  json::set(line, "rv", json::Value(static_cast<uint64_t>(event.resource_version)), allocator);
  json::set_string(line, "type", event.type, allocator);
  json::set_string(line, "key", event.prefix + event.namespace_name + "/" + name, allocator);
  if (event.type != "DELETED") {
    json::set(line, "object", json::Value(*event.object, allocator), allocator);
  }
  return json::dump(line);
}

void Store::replay(std::string_view journal) {
  size_t start = 0;
  while (start < journal.size()) {
    auto newline = journal.find('\n', start);
    if (newline == std::string_view::npos) {
      break;  // a line without its newline was torn by a crash
    }
    auto line = json::parse(journal.substr(start, newline - start));
    start = newline + 1;
    if (!line) {
      break;
    }
    const json::Value* version = json::find(*line, "rv");
    auto key = json::get_string(*line, "key");
    auto type = json::get_string(*line, "type");
    if (version == nullptr || !version->IsUint64() || !key || !type) {
      break;
    }
    if (version->GetUint64() <= version_) {
      continue;  // already in the snapshot
    }
    version_ = version->GetUint64();
    if (*type == "DELETED") {
      objects_.erase(std::string(*key));
    } else if (const json::Value* object = json::find(*line, "object"); object != nullptr) {
      objects_[std::string(*key)] = std::make_shared<const json::Document>(json::copy(*object));
    }
  }
  oldest_watchable_ = version_;
}

}  // namespace kstate::emulator
