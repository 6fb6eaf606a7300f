// FieldsV1 sets and server-side apply (see field_set.hpp). The shape of the sets
// follows what kube-apiserver records: list items identified by their list map
// keys ("k:{...}"), set items by value ("v:..."), "." for a map, list or item that
// is itself owned besides its children.
#include "tests/emulator/field_set.hpp"

#include <algorithm>
#include <array>

#include "tests/emulator/patch.hpp"

namespace kstate::emulator {

namespace {

using Path = std::vector<std::string>;

// Fields whose Go type is atomic (replaced and owned as a whole): label selectors
// (+structType=atomic) and Service.spec.selector (+mapType=atomic).
bool is_atomic_field(std::string_view name, const FieldRules& rules) {
  if (rules.custom) {
    return false;
  }
  return name == "selector" || name == "podSelector" || name == "namespaceSelector" || name == "labelSelector";
}

// What managedFields never list (structured-merge-diff's strip set, plus the deletion
// fields only the server sets).
bool is_stripped_metadata(std::string_view key) {
  static constexpr std::array<std::string_view, 11> names = {"name",
                                                             "namespace",
                                                             "uid",
                                                             "resourceVersion",
                                                             "generation",
                                                             "selfLink",
                                                             "managedFields",
                                                             "creationTimestamp",
                                                             "deletionTimestamp",
                                                             "clusterName",
                                                             "deletionGracePeriodSeconds"};
  return std::find(names.begin(), names.end(), key) != names.end();
}

enum class Shape { leaf, object, keyed_list, set_list };

std::vector<std::string> keys_of_list(std::string_view name, const json::Value& list) {
  if (!list.IsArray() || list.Empty()) {
    return {};
  }
  return list_map_keys(name, list[0]);
}

Shape shape_of(std::string_view name, const json::Value& value, const FieldRules& rules) {
  if (value.IsObject()) {
    return is_atomic_field(name, rules) ? Shape::leaf : Shape::object;
  }
  if (!value.IsArray()) {
    return Shape::leaf;
  }
  if (is_set_list(name)) {
    return Shape::set_list;
  }
  if (value.Empty()) {
    return is_keyed_list_field(name) ? Shape::keyed_list : Shape::leaf;
  }
  auto keys = keys_of_list(name, value);
  bool keyed = !keys.empty() && std::all_of(value.Begin(), value.End(), [&](const json::Value& item) {
    return item.IsObject() && json::find(item, keys.front()) != nullptr;
  });
  return keyed ? Shape::keyed_list : Shape::leaf;
}

// "k:{...}": the item's key fields in name order; a key field it leaves out counts
// with its default (a port without protocol is the TCP one).
std::string item_key(const json::Value& item, const std::vector<std::string>& keys) {
  json::Document key_object(rapidjson::kObjectType);
  auto sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& key : sorted) {
    if (const json::Value* value = json::find(item, key); value != nullptr) {
      json::set(key_object, key, json::Value(*value, key_object.GetAllocator()), key_object.GetAllocator());
    } else if (auto fallback = list_key_default(key); !fallback.empty()) {
      json::set_string(key_object, key, fallback, key_object.GetAllocator());
    }
  }
  return "k:" + json::dump(key_object);
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
        std::string_view key_name(key.name.GetString(), key.name.GetStringLength());
        const json::Value* field = json::find(item, key_name);
        bool same = field != nullptr ? *field == key.value
                                     : key.value.IsString() && !list_key_default(key_name).empty() &&
                                           list_key_default(key_name) == key.value.GetString();
        if (!same) {
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
    return parent.IsObject() ? json::find(parent, std::string_view(element).substr(2)) : nullptr;
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

void add_path(FieldSet& set, const Path& path) {
  FieldSet* node = &set;
  for (const auto& element : path) {
    node = &node->children[element];
  }
  node->self = true;
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

// ---- ToFieldSet ----------------------------------------------------------------

void to_field_set(std::string_view name, const json::Value& value, const FieldRules& rules, FieldSet& node) {
  switch (shape_of(name, value, rules)) {
    case Shape::leaf:
      node.self = true;
      return;
    case Shape::object:
      for (const auto& member : value.GetObject()) {
        std::string_view member_name(member.name.GetString(), member.name.GetStringLength());
        FieldSet& child = node.children["f:" + std::string(member_name)];
        to_field_set(member_name, member.value, rules, child);
        if (member.value.IsNull() || (member.value.IsObject() && member.value.ObjectEmpty())) {
          child.self = true;
        }
      }
      return;
    case Shape::keyed_list: {
      auto keys = keys_of_list(name, value);
      for (const auto& item : value.GetArray()) {
        FieldSet& child = node.children[item_key(item, keys)];
        to_field_set("", item, rules, child);
        child.self = true;
      }
      return;
    }
    case Shape::set_list:
      for (const auto& item : value.GetArray()) {
        node.children["v:" + json::dump(item)].self = true;
      }
      return;
  }
}

// Drops what managedFields never hold; for the status subresource, everything but
// status and metadata (its strategy keeps the rest from the stored object).
void filter_owned(FieldSet& set, bool skip_status, bool status_subresource) {
  set.self = false;
  set.children.erase("f:apiVersion");
  set.children.erase("f:kind");
  if (skip_status) {
    set.children.erase("f:status");
  }
  if (status_subresource) {
    std::erase_if(set.children,
                  [](const auto& entry) { return entry.first != "f:status" && entry.first != "f:metadata"; });
  }
  auto metadata = set.children.find("f:metadata");
  if (metadata != set.children.end()) {
    metadata->second.self = false;
    std::erase_if(metadata->second.children, [](const auto& entry) {
      return entry.first.starts_with("f:") && is_stripped_metadata(std::string_view(entry.first).substr(2));
    });
    if (metadata->second.empty()) {
      set.children.erase(metadata);
    }
  }
}

// ---- comparison -------------------------------------------------------------------

bool is_empty_value(const json::Value* value) {
  return value == nullptr || value->IsNull() || (value->IsObject() && value->ObjectEmpty()) ||
         (value->IsArray() && value->Empty());
}

void compare_node(std::string_view name, const json::Value* lhs, const json::Value* rhs, const FieldRules& rules,
                  Path& path, Comparison& out) {
  if (lhs == nullptr && rhs == nullptr) {
    return;
  }
  const json::Value* sample = rhs != nullptr && !rhs->IsNull() ? rhs : lhs;
  const Shape shape = shape_of(name, *sample, rules);
  // Empty or null on both sides is a leaf, so that {} versus null still shows.
  if (shape == Shape::leaf || (is_empty_value(lhs) && is_empty_value(rhs))) {
    if (lhs == nullptr) {
      add_path(out.added, path);
    } else if (rhs == nullptr) {
      add_path(out.removed, path);
    } else if (*lhs != *rhs) {
      add_path(out.modified, path);
    }
    return;
  }
  switch (shape) {
    case Shape::object: {
      std::vector<std::string> names;
      for (const json::Value* side : {lhs, rhs}) {
        if (side != nullptr && side->IsObject()) {
          for (const auto& member : side->GetObject()) {
            std::string member_name(member.name.GetString(), member.name.GetStringLength());
            if (std::find(names.begin(), names.end(), member_name) == names.end()) {
              names.push_back(std::move(member_name));
            }
          }
        }
      }
      for (const auto& member_name : names) {
        const json::Value* left = lhs != nullptr && lhs->IsObject() ? json::find(*lhs, member_name) : nullptr;
        const json::Value* right = rhs != nullptr && rhs->IsObject() ? json::find(*rhs, member_name) : nullptr;
        path.push_back("f:" + member_name);
        compare_node(member_name, left, right, rules, path, out);
        path.pop_back();
      }
      break;
    }
    case Shape::keyed_list: {
      auto keys = keys_of_list(name, rhs != nullptr && rhs->IsArray() && !rhs->Empty() ? *rhs : *lhs);
      std::vector<std::string> elements;
      std::map<std::string, const json::Value*> left;
      std::map<std::string, const json::Value*> right;
      for (auto [side, items] : {std::pair{lhs, &left}, std::pair{rhs, &right}}) {
        if (side == nullptr || !side->IsArray()) {
          continue;
        }
        for (const auto& item : side->GetArray()) {
          auto element = item_key(item, keys);
          (*items)[element] = &item;
          if (std::find(elements.begin(), elements.end(), element) == elements.end()) {
            elements.push_back(element);
          }
        }
      }
      for (const auto& element : elements) {
        path.push_back(element);
        compare_node("", left.count(element) ? left[element] : nullptr, right.count(element) ? right[element] : nullptr,
                     rules, path, out);
        path.pop_back();
      }
      break;
    }
    case Shape::set_list: {
      std::vector<std::string> elements;
      std::map<std::string, bool> in_left;
      std::map<std::string, bool> in_right;
      for (auto [side, seen] : {std::pair{lhs, &in_left}, std::pair{rhs, &in_right}}) {
        if (side == nullptr || !side->IsArray()) {
          continue;
        }
        for (const auto& item : side->GetArray()) {
          auto element = "v:" + json::dump(item);
          (*seen)[element] = true;
          if (std::find(elements.begin(), elements.end(), element) == elements.end()) {
            elements.push_back(element);
          }
        }
      }
      for (const auto& element : elements) {
        path.push_back(element);
        if (!in_left.count(element)) {
          add_path(out.added, path);
        } else if (!in_right.count(element)) {
          add_path(out.removed, path);
        }
        path.pop_back();
      }
      break;
    }
    case Shape::leaf:
      break;
  }
  if (lhs == nullptr) {
    add_path(out.added, path);
  } else if (rhs == nullptr) {
    add_path(out.removed, path);
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

// Removes from `object` the paths of `removed` that nobody in `keep` still owns.
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

// structured-merge-diff's merge: the applied values win, keyed list items merge by
// key, sets merge by value, atomic values are replaced whole.
void ssa_merge(json::Value& live, const json::Value& applied, std::string_view field_name, const FieldRules& rules,
               json::Allocator& allocator);

void ssa_merge_list(json::Value& live, const json::Value& applied, std::string_view field_name, const FieldRules& rules,
                    json::Allocator& allocator) {
  if (is_set_list(field_name)) {
    for (const auto& item : applied.GetArray()) {
      if (std::none_of(live.Begin(), live.End(), [&](const json::Value& existing) { return existing == item; })) {
        live.PushBack(json::Value(item, allocator), allocator);
      }
    }
    return;
  }
  if (shape_of(field_name, applied, rules) != Shape::keyed_list || applied.Empty()) {
    live.CopyFrom(applied, allocator);
    return;
  }
  auto keys = keys_of_list(field_name, applied);
  for (const auto& item : applied.GetArray()) {
    int index = find_item(live, item_key(item, keys));
    if (index < 0) {
      live.PushBack(json::Value(item, allocator), allocator);
    } else {
      ssa_merge(live[static_cast<rapidjson::SizeType>(index)], item, "", rules, allocator);
    }
  }
}

void ssa_merge(json::Value& live, const json::Value& applied, std::string_view field_name, const FieldRules& rules,
               json::Allocator& allocator) {
  if (!applied.IsObject() || !live.IsObject() || is_atomic_field(field_name, rules)) {
    live.CopyFrom(applied, allocator);
    return;
  }
  for (const auto& member : applied.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    json::Value* existing = json::find(live, name);
    if (existing == nullptr) {
      json::set(live, name, json::Value(member.value, allocator), allocator);
    } else if (member.value.IsObject() && existing->IsObject()) {
      ssa_merge(*existing, member.value, name, rules, allocator);
    } else if (member.value.IsArray() && existing->IsArray()) {
      ssa_merge_list(*existing, member.value, name, rules, allocator);
    } else {
      existing->CopyFrom(member.value, allocator);
    }
  }
}

// How conflict messages name a manager (kube-apiserver's printManager).
std::string printed_manager(const ManagedFieldsEntry& entry) {
  std::string text = "\"" + entry.manager + "\"";
  if (!entry.subresource.empty()) {
    text += " with subresource \"" + entry.subresource + "\"";
  }
  if (entry.operation == "Update") {
    text += " using " + entry.api_version;
  }
  return text;
}

// The managedFields a write starts from: the stored ones, unless the write sets its
// own (a non-empty list replaces them; [] or [{}] resets them, as kube-apiserver
// allows so that clients can hand fields over).
std::vector<ManagedFieldsEntry> starting_entries(const json::Value* old_object, const json::Value& new_object,
                                                 bool status_subresource) {
  std::vector<ManagedFieldsEntry> stored =
      old_object != nullptr ? read_managed_fields(*old_object) : std::vector<ManagedFieldsEntry>{};
  const json::Value* submitted = json::find_path(new_object, {"metadata", "managedFields"});
  if (status_subresource || submitted == nullptr || !submitted->IsArray()) {
    return stored;
  }
  if (submitted->Empty() || (submitted->Size() == 1 && (*submitted)[0].IsObject() && (*submitted)[0].ObjectEmpty())) {
    return {};
  }
  auto entries = read_managed_fields(new_object);
  bool any_fields =
      std::any_of(entries.begin(), entries.end(), [](const auto& entry) { return !entry.fields.empty(); });
  return any_fields ? entries : stored;
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

FieldSet fields_of(const json::Value& object, bool skip_status, const FieldRules& rules) {
  FieldSet set;
  if (!object.IsObject()) {
    return set;
  }
  to_field_set("", object, rules, set);
  filter_owned(set, skip_status, false);
  return set;
}

Comparison compare_objects(const json::Value& old_object, const json::Value& new_object, const FieldRules& rules) {
  Comparison out;
  Path path;
  compare_node("", &old_object, &new_object, rules, path, out);
  for (FieldSet* set : {&out.added, &out.modified, &out.removed}) {
    set->self = false;  // the object itself is not a field
  }
  return out;
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

void write_managed_fields(json::Value& object, std::vector<ManagedFieldsEntry> entries, json::Allocator& allocator) {
  std::stable_sort(entries.begin(), entries.end(), [](const ManagedFieldsEntry& a, const ManagedFieldsEntry& b) {
    // Timestamps are RFC 3339 in UTC with whole seconds: text order is time order.
    return std::tie(a.operation, a.time, a.manager, a.api_version, a.subresource) <
           std::tie(b.operation, b.time, b.manager, b.api_version, b.subresource);
  });
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
  static const json::Value no_fields(rapidjson::kObjectType);
  const json::Value& zero = request.zero_object != nullptr ? *request.zero_object : no_fields;
  const bool exists = live.IsObject();
  const bool status_subresource = request.subresource == "status";
  auto entries = exists ? read_managed_fields(live) : std::vector<ManagedFieldsEntry>{};
  if (exists && entries.empty()) {
    // Fields set before anyone applied belong to "before-first-apply", so that the
    // first applier does not remove them by omitting them.
    Comparison existing = compare_objects(zero, live, request.rules);
    existing.added.merge(existing.modified);
    filter_owned(existing.added, request.skip_status, status_subresource);
    entries.push_back({"before-first-apply", "Update", request.api_version, request.time, "", existing.added});
  }
  auto is_mine = [&](const ManagedFieldsEntry& entry) {
    return entry.manager == request.manager && entry.operation == "Apply" && entry.subresource == request.subresource;
  };
  FieldSet applied_set = fields_of(applied, request.skip_status, request.rules);
  filter_owned(applied_set, request.skip_status, status_subresource);
  FieldSet previous;
  FieldSet others;
  for (const auto& entry : entries) {
    if (is_mine(entry)) {
      previous = entry.fields;
    } else {
      others.merge(entry.fields);
    }
  }

  json::Document merged;
  merged.CopyFrom(exists ? live : zero, merged.GetAllocator());
  if (!merged.IsObject()) {
    merged.SetObject();
  }
  // What this manager applied before and omits now goes, unless someone else owns it.
  FieldSet removed = previous;
  removed.subtract(applied_set);
  FieldSet keep = applied_set;
  keep.merge(others);
  Path path;
  remove_unowned(merged, removed, keep, path);
  ssa_merge(merged, applied, "", request.rules, merged.GetAllocator());

  Comparison changes = compare_objects(exists ? live : zero, merged, request.rules);
  FieldSet touched = changes.added;
  touched.merge(changes.modified);
  filter_owned(touched, request.skip_status, status_subresource);
  std::vector<ApplyConflict> conflicts;
  std::vector<FieldSet> taken(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (is_mine(entries[i])) {
      continue;
    }
    taken[i] = entries[i].fields.intersect(touched);
    for (const auto& conflict_path : taken[i].paths()) {
      conflicts.push_back({printed_manager(entries[i]), render_path(conflict_path)});
    }
  }
  if (!conflicts.empty() && !request.force) {
    return conflicts;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!is_mine(entries[i])) {
      entries[i].fields.subtract(taken[i]);  // force: ownership moves to the applier
      entries[i].fields.subtract(changes.removed);
    }
  }
  auto mine = std::find_if(entries.begin(), entries.end(), is_mine);
  if (mine == entries.end()) {
    entries.push_back({request.manager, "Apply", request.api_version, request.time, request.subresource, {}});
    mine = entries.end() - 1;
  }
  mine->fields = applied_set;
  mine->api_version = request.api_version;
  mine->time = request.time;
  write_managed_fields(merged, std::move(entries), merged.GetAllocator());
  live.CopyFrom(merged, allocator);
  return std::vector<ApplyConflict>{};
}

void record_update(const json::Value* old_object, json::Value& new_object, const ApplyRequest& request,
                   json::Allocator& allocator) {
  static const json::Value no_fields(rapidjson::kObjectType);
  const bool status_subresource = request.subresource == "status";
  auto entries = starting_entries(old_object, new_object, status_subresource);
  const json::Value& before =
      old_object != nullptr ? *old_object : (request.zero_object != nullptr ? *request.zero_object : no_fields);
  Comparison changes = compare_objects(before, new_object, request.rules);
  FieldSet touched = changes.added;
  touched.merge(changes.modified);
  filter_owned(touched, request.skip_status, status_subresource);
  filter_owned(changes.removed, request.skip_status, status_subresource);
  auto is_mine = [&](const ManagedFieldsEntry& entry) {
    return entry.manager == request.manager && entry.operation == "Update" && entry.subresource == request.subresource;
  };
  for (auto& entry : entries) {
    if (!is_mine(entry)) {
      entry.fields.subtract(touched);
    }
    entry.fields.subtract(changes.removed);
  }
  if (!touched.empty()) {
    auto mine = std::find_if(entries.begin(), entries.end(), is_mine);
    if (mine == entries.end()) {
      entries.push_back({request.manager, "Update", request.api_version, request.time, request.subresource, {}});
      mine = entries.end() - 1;
    }
    mine->fields.merge(touched);
    mine->time = request.time;
    mine->api_version = request.api_version;
  }
  write_managed_fields(new_object, std::move(entries), allocator);
}

}  // namespace kstate::emulator
