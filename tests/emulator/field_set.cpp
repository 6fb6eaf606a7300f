// FieldsV1 sets and server-side apply (see field_set.hpp). The shape of the sets
// follows what kube-apiserver records: list items identified by merge key
// ("k:{...}"), set items by value ("v:..."), "." for maps of scalars and list
// items that are owned as a whole.
#include "tests/emulator/field_set.hpp"

#include <algorithm>
#include <array>

#include "tests/emulator/patch.hpp"

namespace kstate::emulator {

namespace {

using Path = std::vector<std::string>;

// Maps whose existence is owned separately from their entries, as in Kubernetes'
// managedFields (map[string]string and map[string]Quantity fields).
bool is_granular_map(std::string_view field_name) {
  static constexpr std::array<std::string_view, 12> names = {"labels",     "annotations", "data",     "binaryData",
                                                             "stringData", "matchLabels", "selector", "nodeSelector",
                                                             "limits",     "requests",    "capacity", "hard"};
  return std::find(names.begin(), names.end(), field_name) != names.end();
}

bool is_server_owned_metadata(std::string_view key) {
  static constexpr std::array<std::string_view, 9> names = {"name",
                                                            "namespace",
                                                            "uid",
                                                            "resourceVersion",
                                                            "generation",
                                                            "selfLink",
                                                            "managedFields",
                                                            "creationTimestamp",
                                                            "deletionGracePeriodSeconds"};
  return key == "deletionTimestamp" || std::find(names.begin(), names.end(), key) != names.end();
}

std::string item_key(const json::Value& item, const std::vector<std::string>& keys) {
  json::Document key_object(rapidjson::kObjectType);
  auto sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& key : sorted) {
    if (const json::Value* value = json::find(item, key); value != nullptr) {
      json::set(key_object, key, json::Value(*value, key_object.GetAllocator()), key_object.GetAllocator());
    }
  }
  return "k:" + json::dump(key_object);
}

FieldSet fields_of_value(std::string_view field_name, const json::Value& value) {
  FieldSet node;
  if (value.IsObject()) {
    if (value.ObjectEmpty()) {
      node.self = true;
      return node;
    }
    node.self = is_granular_map(field_name);
    for (const auto& member : value.GetObject()) {
      std::string_view name(member.name.GetString(), member.name.GetStringLength());
      node.children["f:" + std::string(name)] = fields_of_value(name, member.value);
    }
    return node;
  }
  if (value.IsArray() && !value.Empty()) {
    if (is_set_list(field_name)) {
      node.self = true;
      for (const auto& item : value.GetArray()) {
        node.children["v:" + json::dump(item)].self = true;
      }
      return node;
    }
    auto keys = list_merge_keys(field_name, value[0]);
    bool keyed = !keys.empty() && std::all_of(value.Begin(), value.End(), [&](const json::Value& item) {
      return item.IsObject() && json::find(item, keys.front()) != nullptr;
    });
    if (keyed) {
      for (const auto& item : value.GetArray()) {
        FieldSet element = fields_of_value("", item);
        element.self = true;
        node.children[item_key(item, keys)] = std::move(element);
      }
      return node;
    }
  }
  node.self = true;  // scalars and atomic lists are owned as a whole
  return node;
}

// Finds the array element a "k:"/"v:" path element names; returns index or -1.
int find_item(const json::Value& array, const std::string& element) {
  if (!array.IsArray()) {
    return -1;
  }
  auto parsed = json::parse(std::string_view(element).substr(2));
  if (!parsed) {
    return -1;
  }
  for (rapidjson::SizeType i = 0; i < array.Size(); ++i) {
    const json::Value& item = array[i];
    if (element[0] == 'v') {
      if (item == *parsed) {
        return static_cast<int>(i);
      }
      continue;
    }
    bool all = parsed->IsObject() && item.IsObject();
    if (all) {
      for (const auto& key : parsed->GetObject()) {
        const json::Value* field = json::find(item, key.name.GetString());
        if (field == nullptr || *field != key.value) {
          all = false;
          break;
        }
      }
    }
    if (all) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

json::Value* child_value(json::Value& parent, const std::string& element) {
  if (element.starts_with("f:")) {
    return json::find(parent, std::string_view(element).substr(2));
  }
  int index = find_item(parent, element);
  return index < 0 ? nullptr : &parent[static_cast<rapidjson::SizeType>(index)];
}

void erase_child(json::Value& parent, const std::string& element) {
  if (element.starts_with("f:")) {
    parent.RemoveMember(element.c_str() + 2);
    return;
  }
  int index = find_item(parent, element);
  if (index >= 0) {
    parent.Erase(parent.Begin() + index);
  }
}

void collect_paths(const FieldSet& set, Path& prefix, std::vector<Path>& out) {
  if (set.self && !prefix.empty()) {
    out.push_back(prefix);
  }
  for (const auto& [element, child] : set.children) {
    prefix.push_back(element);
    collect_paths(child, prefix, out);
    prefix.pop_back();
  }
}

void remove_unowned(json::Value& object, const FieldSet& removed, const FieldSet& keep, Path& path) {
  for (const auto& [element, child] : removed.children) {
    json::Value* value = child_value(object, element);
    if (value == nullptr) {
      continue;
    }
    path.push_back(element);
    bool kept = keep.contains_any_at_or_below(path);
    if (child.self && !kept) {
      erase_child(object, element);
    } else if (!child.children.empty()) {
      remove_unowned(*value, child, keep, path);
      if (value->IsObject() && value->ObjectEmpty() && !kept) {
        erase_child(object, element);
      }
    }
    path.pop_back();
  }
}

void ssa_merge(json::Value& live, const json::Value& applied, std::string_view field_name, json::Allocator& allocator);

void ssa_merge_list(json::Value& live, const json::Value& applied, std::string_view field_name,
                    json::Allocator& allocator) {
  if (is_set_list(field_name)) {
    for (const auto& item : applied.GetArray()) {
      if (std::none_of(live.Begin(), live.End(), [&](const json::Value& existing) { return existing == item; })) {
        live.PushBack(json::Value(item, allocator), allocator);
      }
    }
    return;
  }
  auto keys = applied.Empty() ? std::vector<std::string>{} : list_merge_keys(field_name, applied[0]);
  if (keys.empty()) {
    live.CopyFrom(applied, allocator);
    return;
  }
  for (const auto& item : applied.GetArray()) {
    int index = find_item(live, item_key(item, keys));
    if (index < 0) {
      live.PushBack(json::Value(item, allocator), allocator);
    } else {
      ssa_merge(live[static_cast<rapidjson::SizeType>(index)], item, "", allocator);
    }
  }
}

void ssa_merge(json::Value& live, const json::Value& applied, std::string_view field_name, json::Allocator& allocator) {
  (void)field_name;
  if (!applied.IsObject() || !live.IsObject()) {
    live.CopyFrom(applied, allocator);
    return;
  }
  for (const auto& member : applied.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    json::Value* existing = json::find(live, name);
    if (existing == nullptr) {
      json::set(live, name, json::Value(member.value, allocator), allocator);
    } else if (member.value.IsObject() && existing->IsObject()) {
      ssa_merge(*existing, member.value, name, allocator);
    } else if (member.value.IsArray() && existing->IsArray()) {
      ssa_merge_list(*existing, member.value, name, allocator);
    } else {
      existing->CopyFrom(member.value, allocator);
    }
  }
}

const FieldSet* node_at(const FieldSet& set, const Path& path) {
  const FieldSet* node = &set;
  for (const auto& element : path) {
    auto it = node->children.find(element);
    if (it == node->children.end()) {
      return nullptr;
    }
    node = &it->second;
  }
  return node;
}

void add_path(FieldSet& set, const Path& path) {
  FieldSet* node = &set;
  for (const auto& element : path) {
    node = &node->children[element];
  }
  node->self = true;
}

}  // namespace

void FieldSet::merge(const FieldSet& other) {
  self = self || other.self;
  for (const auto& [element, child] : other.children) {
    children[element].merge(child);
  }
}

void FieldSet::subtract(const FieldSet& other) {
  if (other.self) {
    self = false;
  }
  for (const auto& [element, child] : other.children) {
    auto it = children.find(element);
    if (it != children.end()) {
      it->second.subtract(child);
      if (it->second.empty()) {
        children.erase(it);
      }
    }
  }
}

FieldSet FieldSet::intersect(const FieldSet& other) const {
  FieldSet result;
  result.self = self && other.self;
  for (const auto& [element, child] : children) {
    auto it = other.children.find(element);
    if (it != other.children.end()) {
      FieldSet common = child.intersect(it->second);
      if (!common.empty()) {
        result.children[element] = std::move(common);
      }
    }
  }
  return result;
}

bool FieldSet::contains_any_at_or_below(const std::vector<std::string>& path) const {
  const FieldSet* node = node_at(*this, path);
  return node != nullptr && !node->empty();
}

std::vector<std::vector<std::string>> FieldSet::paths() const {
  std::vector<Path> out;
  Path prefix;
  collect_paths(*this, prefix, out);
  return out;
}

json::Document FieldSet::to_json() const {
  json::Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  // Recursive lambda writing into the document's allocator.
  auto fill = [&](auto& self_ref, const FieldSet& set, json::Value& out) -> void {
    if (set.self && !set.children.empty()) {
      json::set(out, ".", json::Value(rapidjson::kObjectType), allocator);
    }
    for (const auto& [element, child] : set.children) {
      json::Value value(rapidjson::kObjectType);
      self_ref(self_ref, child, value);
      json::set(out, element, std::move(value), allocator);
    }
  };
  fill(fill, *this, doc);
  return doc;
}

FieldSet FieldSet::from_json(const json::Value& fields_v1) {
  FieldSet set;
  if (!fields_v1.IsObject() || fields_v1.ObjectEmpty()) {
    set.self = true;
    return set;
  }
  for (const auto& member : fields_v1.GetObject()) {
    std::string name(member.name.GetString(), member.name.GetStringLength());
    if (name == ".") {
      set.self = true;
    } else {
      set.children[name] = from_json(member.value);
    }
  }
  return set;
}

FieldSet fields_of(const json::Value& object, bool skip_status) {
  FieldSet set;
  if (!object.IsObject()) {
    return set;
  }
  for (const auto& member : object.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    if (name == "apiVersion" || name == "kind" || (skip_status && name == "status")) {
      continue;
    }
    if (name == "metadata" && member.value.IsObject()) {
      FieldSet metadata;
      for (const auto& field : member.value.GetObject()) {
        std::string_view field_name(field.name.GetString(), field.name.GetStringLength());
        if (!is_server_owned_metadata(field_name)) {
          metadata.children["f:" + std::string(field_name)] = fields_of_value(field_name, field.value);
        }
      }
      if (!metadata.empty()) {
        set.children["f:metadata"] = std::move(metadata);
      }
      continue;
    }
    set.children["f:" + std::string(name)] = fields_of_value(name, member.value);
  }
  return set;
}

const json::Value* value_at(const json::Value& object, const std::vector<std::string>& path) {
  const json::Value* current = &object;
  for (const auto& element : path) {
    current = child_value(const_cast<json::Value&>(*current), element);  // NOLINT: read-only use
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

std::string render_path(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& element : path) {
    if (element.starts_with("f:")) {
      out += "." + element.substr(2);
    } else if (element.starts_with("k:")) {
      auto parsed = json::parse(std::string_view(element).substr(2));
      out += "[";
      bool first = true;
      if (parsed && parsed->IsObject()) {
        for (const auto& member : parsed->GetObject()) {
          out += (first ? "" : ",") + std::string(member.name.GetString()) + "=" + json::dump(member.value);
          first = false;
        }
      }
      out += "]";
    } else if (element.starts_with("v:")) {
      out += "[=" + element.substr(2) + "]";
    }
  }
  return out;
}

std::vector<ManagedFieldsEntry> read_managed_fields(const json::Value& object) {
  std::vector<ManagedFieldsEntry> entries;
  const json::Value* list = json::find_path(object, {"metadata", "managedFields"});
  if (list == nullptr || !list->IsArray()) {
    return entries;
  }
  for (const auto& item : list->GetArray()) {
    ManagedFieldsEntry entry;
    entry.manager = std::string(json::string_or(json::find(item, "manager"), ""));
    entry.operation = std::string(json::string_or(json::find(item, "operation"), "Update"));
    entry.api_version = std::string(json::string_or(json::find(item, "apiVersion"), ""));
    entry.time = std::string(json::string_or(json::find(item, "time"), ""));
    entry.subresource = std::string(json::string_or(json::find(item, "subresource"), ""));
    if (const json::Value* fields = json::find(item, "fieldsV1"); fields != nullptr) {
      entry.fields = FieldSet::from_json(*fields);
      entry.fields.self = false;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

void write_managed_fields(json::Value& object, const std::vector<ManagedFieldsEntry>& entries,
                          json::Allocator& allocator) {
  json::Value list(rapidjson::kArrayType);
  for (const auto& entry : entries) {
    if (entry.fields.empty()) {
      continue;
    }
    json::Value item(rapidjson::kObjectType);
    json::set_string(item, "manager", entry.manager, allocator);
    json::set_string(item, "operation", entry.operation, allocator);
    json::set_string(item, "apiVersion", entry.api_version, allocator);
    json::set_string(item, "time", entry.time, allocator);
    json::set_string(item, "fieldsType", "FieldsV1", allocator);
    json::Document fields = entry.fields.to_json();
    json::set(item, "fieldsV1", json::Value(fields, allocator), allocator);
    if (!entry.subresource.empty()) {
      json::set_string(item, "subresource", entry.subresource, allocator);
    }
    list.PushBack(std::move(item), allocator);
  }
  json::Value& metadata = json::ensure_object(object, "metadata", allocator);
  if (list.Empty()) {
    metadata.RemoveMember("managedFields");
  } else {
    json::set(metadata, "managedFields", std::move(list), allocator);
  }
}

Result<std::vector<ApplyConflict>> server_side_apply(json::Value& live, const json::Value& applied,
                                                     const ApplyRequest& request, json::Allocator& allocator) {
  auto entries = live.IsObject() ? read_managed_fields(live) : std::vector<ManagedFieldsEntry>{};
  FieldSet applied_set = fields_of(applied, request.skip_status);
  auto is_mine = [&](const ManagedFieldsEntry& entry) {
    return entry.manager == request.manager && entry.operation == "Apply" && entry.subresource == request.subresource;
  };

  std::vector<ApplyConflict> conflicts;
  FieldSet conflicting;
  if (live.IsObject()) {
    for (const auto& entry : entries) {
      if (is_mine(entry)) {
        continue;
      }
      for (const auto& path : applied_set.intersect(entry.fields).paths()) {
        const FieldSet* node = node_at(applied_set, path);
        if (node == nullptr || !node->children.empty()) {
          continue;  // only leaf values can disagree
        }
        const json::Value* live_value = value_at(live, path);
        const json::Value* applied_value = value_at(applied, path);
        if (live_value != nullptr && applied_value != nullptr && *live_value != *applied_value) {
          conflicts.push_back({entry.manager, entry.api_version, render_path(path)});
          add_path(conflicting, path);
        }
      }
    }
  }
  if (!conflicts.empty() && !request.force) {
    return conflicts;
  }

  FieldSet previous;
  for (auto& entry : entries) {
    if (is_mine(entry)) {
      previous = entry.fields;
    } else {
      entry.fields.subtract(conflicting);  // force: ownership moves to the applier
    }
  }
  if (!live.IsObject()) {
    live.SetObject();
  }
  FieldSet removed = previous;
  removed.subtract(applied_set);
  FieldSet keep = applied_set;
  for (const auto& entry : entries) {
    if (!is_mine(entry)) {
      keep.merge(entry.fields);
    }
  }
  Path path;
  remove_unowned(live, removed, keep, path);
  ssa_merge(live, applied, "", allocator);

  auto mine = std::find_if(entries.begin(), entries.end(), is_mine);
  if (mine == entries.end()) {
    entries.push_back({request.manager, "Apply", request.api_version, request.time, request.subresource, {}});
    mine = entries.end() - 1;
  }
  mine->fields = applied_set;
  mine->api_version = request.api_version;
  mine->time = request.time;
  write_managed_fields(live, entries, allocator);
  return std::vector<ApplyConflict>{};
}

void record_update(const json::Value* old_object, json::Value& new_object, const ApplyRequest& request,
                   json::Allocator& allocator) {
  std::vector<ManagedFieldsEntry> entries;
  auto submitted = read_managed_fields(new_object);
  if (old_object != nullptr) {
    entries = read_managed_fields(*old_object);
    const json::Value* old_list = json::find_path(*old_object, {"metadata", "managedFields"});
    const json::Value* new_list = json::find_path(new_object, {"metadata", "managedFields"});
    // A client that sends managedFields different from the stored ones replaces them.
    if (new_list != nullptr && (old_list == nullptr || *old_list != *new_list)) {
      entries = std::move(submitted);
    }
  }
  FieldSet new_set = fields_of(new_object, request.skip_status);
  FieldSet changed;
  for (const auto& path : new_set.paths()) {
    const FieldSet* node = node_at(new_set, path);
    const json::Value* before = old_object == nullptr ? nullptr : value_at(*old_object, path);
    const json::Value* after = value_at(new_object, path);
    bool leaf = node != nullptr && node->children.empty();
    if (before == nullptr || (leaf && after != nullptr && *before != *after)) {
      add_path(changed, path);
    }
  }
  for (auto& entry : entries) {
    entry.fields = entry.fields.intersect(new_set);
    bool mine =
        entry.manager == request.manager && entry.operation == "Update" && entry.subresource == request.subresource;
    if (!mine) {
      entry.fields.subtract(changed);
    }
  }
  if (!changed.empty()) {
    auto mine = std::find_if(entries.begin(), entries.end(), [&](const ManagedFieldsEntry& entry) {
      return entry.manager == request.manager && entry.operation == "Update" &&
             entry.subresource == request.subresource;
    });
    if (mine == entries.end()) {
      entries.push_back({request.manager, "Update", request.api_version, request.time, request.subresource, {}});
      mine = entries.end() - 1;
    }
    mine->fields.merge(changed);
    mine->time = request.time;
    mine->api_version = request.api_version;
  }
  write_managed_fields(new_object, entries, allocator);
}

}  // namespace kstate::emulator
