// Implementation of fields left to other writers (ignore_fields.hpp), on RapidJSON's
// JSON pointers.
#include "manifests/ignore_fields.hpp"

#include <rapidjson/pointer.h>

#include <algorithm>
#include <optional>

#include "core/strings.hpp"

namespace kstate::manifests {
namespace {

using Pointer = rapidjson::GenericPointer<json::Value>;

}  // namespace

Result<std::vector<std::string>> parse_ignore_fields(std::string_view text) {
  std::vector<std::string> pointers;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string pointer = std::string(strings::trim(text.substr(0, comma)));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (pointer.empty()) {
      continue;
    }
    Pointer parsed(pointer.c_str(), pointer.size());
    if (pointer.front() != '/' || !parsed.IsValid() || parsed.GetTokenCount() == 0) {
      return Error(ErrorKind::invalid_input,
                   pointer +
                       ": not a JSON pointer to a field (it starts with /, e.g. /spec/replicas; ~1 for a / in a "
                       "key, ~0 for a ~)");
    }
    const std::string_view first(parsed.GetTokens()[0].name, parsed.GetTokens()[0].length);
    if (first == "apiVersion" || first == "kind" ||
        (first == "metadata" && parsed.GetTokenCount() >= 2 &&
         (std::string_view(parsed.GetTokens()[1].name, parsed.GetTokens()[1].length) == "name" ||
          std::string_view(parsed.GetTokens()[1].name, parsed.GetTokens()[1].length) == "namespace"))) {
      return Error(ErrorKind::invalid_input, pointer + ": names the object itself, which cannot be left to others");
    }
    pointers.push_back(std::move(pointer));
  }
  return pointers;
}

bool IgnoreFieldsRule::matches(std::string_view object_group, std::string_view object_kind, std::string_view object_ns,
                               std::string_view object_name) const {
  return object_kind == kind && (!group_given || object_group == group) && (ns.empty() || object_ns == ns) &&
         (name.empty() || object_name == name);
}

Result<IgnoreFieldsRule> parse_ignore_fields_rule(std::string_view text) {
  const std::size_t equals = text.find('=');
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::invalid_input, "\"" + std::string(text) + "\": " + why +
                                               " (expected KIND[.GROUP][/NAME | /NAMESPACE/NAME]=/json/pointer,...)");
  };
  if (equals == std::string_view::npos) {
    return fail("no =");
  }
  IgnoreFieldsRule rule;
  std::vector<std::string> parts;
  std::string_view object = text.substr(0, equals);
  while (true) {
    const std::size_t slash = object.find('/');
    parts.push_back(std::string(strings::trim(object.substr(0, slash))));
    if (slash == std::string_view::npos) {
      break;
    }
    object.remove_prefix(slash + 1);
  }
  if (parts.size() > 3 || std::any_of(parts.begin(), parts.end(), [](const auto& part) { return part.empty(); })) {
    return fail("the object is KIND, KIND/NAME or KIND/NAMESPACE/NAME");
  }
  const std::size_t dot = parts[0].find('.');
  rule.kind = parts[0].substr(0, dot);
  if (dot != std::string::npos) {
    rule.group = parts[0].substr(dot + 1);
    rule.group_given = true;
  }
  if (parts.size() == 2) {
    rule.name = parts[1];
  } else if (parts.size() == 3) {
    rule.ns = parts[1] == "*" ? "" : parts[1];
    rule.name = parts[2];
  }
  auto pointers = parse_ignore_fields(text.substr(equals + 1));
  if (!pointers.ok()) {
    return fail(pointers.error().message);
  }
  if (pointers->empty()) {
    return fail("no field");
  }
  rule.pointers = std::move(*pointers);
  return rule;
}

namespace {

// Whether the managedFields path element `element` names `item`, the live list item at
// `index`: "k:{...}" (an associative list: the item's key fields as a JSON object;
// every one equals the live item's, which the server has defaulted), "v:<json>" (a set:
// the item's value) or "i:<n>" (its position).
bool names_item(std::string_view element, const json::Value& item, std::size_t index) {
  if (element.size() < 2 || element[1] != ':' || (element[0] != 'k' && element[0] != 'v' && element[0] != 'i')) {
    return false;
  }
  auto parsed = json::parse(element.substr(2));
  if (!parsed.ok()) {
    return false;
  }
  if (element[0] == 'v') {
    return item == *parsed;
  }
  if (element[0] == 'i') {
    return parsed->IsUint64() && parsed->GetUint64() == index;
  }
  if (!parsed->IsObject() || !item.IsObject()) {
    return false;
  }
  return std::all_of(parsed->MemberBegin(), parsed->MemberEnd(), [&](const auto& key) {
    const json::Value* value = json::find(item, std::string_view(key.name.GetString(), key.name.GetStringLength()));
    return value != nullptr && *value == key.value;
  });
}

// The path of `pointer` in `fields` (one managedFields entry's fieldsV1), element by
// element ("f:webhooks", "k:{\"name\":\"a\"}", "f:clientConfig", ...): a number in the
// pointer picks the item in `live`, and the element naming that item is looked for.
// None when `fields` does not reach the pointer, or a number crosses no live list.
std::optional<std::vector<std::string>> owned_path(const json::Value& fields, const json::Value& live,
                                                   const Pointer& pointer) {
  std::vector<std::string> path;
  const json::Value* owned = &fields;
  const json::Value* value = &live;
  for (std::size_t i = 0; i < pointer.GetTokenCount(); ++i) {
    const auto& token = pointer.GetTokens()[i];
    if (!owned->IsObject()) {
      return std::nullopt;
    }
    if (value != nullptr && value->IsArray()) {
      if (token.index == rapidjson::kPointerInvalidIndex || token.index >= value->Size()) {
        return std::nullopt;
      }
      const json::Value& item = (*value)[token.index];
      const auto named = std::find_if(owned->MemberBegin(), owned->MemberEnd(), [&](const auto& member) {
        return names_item(std::string_view(member.name.GetString(), member.name.GetStringLength()), item, token.index);
      });
      if (named == owned->MemberEnd()) {
        return std::nullopt;
      }
      path.emplace_back(named->name.GetString(), named->name.GetStringLength());
      owned = &named->value;
      value = &item;
      continue;
    }
    if (token.index != rapidjson::kPointerInvalidIndex && (value == nullptr || !value->IsObject())) {
      return std::nullopt;  // a number where the live object has nothing: a list item or a key, unknown
    }
    const std::string_view name(token.name, token.length);
    path.push_back("f:" + std::string(name));
    owned = json::find(*owned, path.back());
    if (owned == nullptr) {
      return std::nullopt;
    }
    value = value != nullptr && value->IsObject() ? json::find(*value, name) : nullptr;
  }
  return path;
}

// The path of `pointer` in the fieldsV1 of a manager other than `field_manager`'s
// Apply entry, or none.
std::optional<std::vector<std::string>> path_owned_by_another_manager(const json::Value& live, const Pointer& pointer,
                                                                      std::string_view field_manager) {
  const json::Value* entries = json::find_path(live, {"metadata", "managedFields"});
  if (!pointer.IsValid() || pointer.GetTokenCount() == 0 || entries == nullptr || !entries->IsArray()) {
    return std::nullopt;
  }
  for (const auto& entry : entries->GetArray()) {
    if (json::string_or(json::find(entry, "manager"), "") == field_manager &&
        json::string_or(json::find(entry, "operation"), "") == "Apply") {
      continue;
    }
    if (const json::Value* fields = json::find(entry, "fieldsV1"); fields != nullptr) {
      if (auto path = owned_path(*fields, live, pointer)) {
        return path;
      }
    }
  }
  return std::nullopt;
}

// A key field a desired item may leave out and still be the live item: the server
// defaults it before it computes the item's key (recording 34: a Service port without
// protocol is k:{"port":80,"protocol":"TCP"}).
bool is_server_default(std::string_view key_field, const json::Value& value) {
  return key_field == "protocol" && value.IsString() && std::string_view(value.GetString()) == "TCP";
}

// The position in `desired_list` of the item the path element `element` names, or
// none when no desired item or more than one is that item: then the field is not given
// up and keeps its live value (safety first: removing it from another item would make
// server-side apply drop or reset a field the manifest sets there). "k:": the desired
// item whose key fields equal the element's (one left out only when it is the server's
// default); "v:": the desired item with that value; "i:": the same position.
std::optional<std::size_t> desired_item(const json::Value& desired_list, std::string_view element) {
  auto parsed = json::parse(element.substr(2));
  if (!parsed.ok() || !desired_list.IsArray()) {
    return std::nullopt;
  }
  if (element[0] == 'i') {
    if (parsed->IsUint64() && parsed->GetUint64() < desired_list.Size()) {
      return static_cast<std::size_t>(parsed->GetUint64());
    }
    return std::nullopt;
  }
  const auto is_the_item = [&](const json::Value& item) {
    if (element[0] == 'v') {
      return item == *parsed;
    }
    return parsed->IsObject() && item.IsObject() &&
           std::all_of(parsed->MemberBegin(), parsed->MemberEnd(), [&](const auto& key) {
             const std::string_view key_field(key.name.GetString(), key.name.GetStringLength());
             const json::Value* value = json::find(item, key_field);
             return value != nullptr ? *value == key.value : is_server_default(key_field, key.value);
           });
  };
  std::optional<std::size_t> found;
  for (std::size_t i = 0; i < desired_list.Size(); ++i) {
    if (is_the_item(desired_list[static_cast<rapidjson::SizeType>(i)])) {
      if (found) {
        return std::nullopt;  // ambiguous
      }
      found = i;
    }
  }
  return found;
}

// Removes from `desired` the field `path` (managedFields elements) names: object
// members by name, list items matched by desired_item. Nothing when a step is not in
// `desired` or its item cannot be matched.
void remove_owned_path(json::Value& desired, const std::vector<std::string>& path) {
  json::Value* current = &desired;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::string_view element(path[i]);
    const bool last = i + 1 == path.size();
    if (element.starts_with("f:")) {
      const std::string_view name = element.substr(2);
      json::Value* child = current->IsObject() ? json::find(*current, name) : nullptr;
      if (child == nullptr) {
        return;
      }
      if (last) {
        current->EraseMember(current->FindMember(json::Value(rapidjson::StringRef(name.data(), name.size()))));
        return;
      }
      current = child;
      continue;
    }
    const auto index = desired_item(*current, element);
    if (!index) {
      return;
    }
    if (last) {
      current->Erase(current->Begin() + *index);
      return;
    }
    current = &(*current)[static_cast<rapidjson::SizeType>(*index)];
  }
}

// Where `pointer` (whose numbers pick live list items) lands in `desired`: an object
// member by name; a list item by its counterpart in the manifest's list, the item with
// the same `name` (containers, env, volumes, webhooks... are lists keyed by name), or
// the same position for items without one. None when a step is not in `desired`, or
// no single desired item is the live one.
std::optional<Pointer> counterpart_in(const json::Value& desired, const json::Value& live, const Pointer& pointer) {
  Pointer found;
  const json::Value* in_desired = &desired;
  const json::Value* in_live = &live;
  for (std::size_t i = 0; i < pointer.GetTokenCount(); ++i) {
    const auto& token = pointer.GetTokens()[i];
    if (in_desired->IsArray()) {
      if (token.index == rapidjson::kPointerInvalidIndex) {
        return std::nullopt;
      }
      std::string element = "i:" + std::to_string(token.index);
      const json::Value* live_item = in_live != nullptr && in_live->IsArray() && token.index < in_live->Size()
                                         ? &(*in_live)[static_cast<rapidjson::SizeType>(token.index)]
                                         : nullptr;
      if (const json::Value* name = live_item != nullptr ? json::find(*live_item, "name") : nullptr;
          name != nullptr && name->IsString()) {
        json::Document key;
        key.SetObject();
        key.AddMember("name", json::Value(*name, key.GetAllocator()), key.GetAllocator());
        element = "k:" + json::dump(key);
      }
      const auto index = desired_item(*in_desired, element);
      if (!index) {
        return std::nullopt;
      }
      found = found.Append(static_cast<rapidjson::SizeType>(*index));
      in_desired = &(*in_desired)[static_cast<rapidjson::SizeType>(*index)];
      in_live = live_item;
      continue;
    }
    const std::string_view name(token.name, token.length);
    in_desired = json::find(*in_desired, name);
    if (in_desired == nullptr) {
      return std::nullopt;
    }
    found = found.Append(token.name, token.length);
    in_live = in_live != nullptr ? json::find(*in_live, name) : nullptr;
  }
  return found;
}

}  // namespace

void leave_fields_to_others(json::Document& desired, const json::Value& live,
                            const std::vector<std::string>& pointers) {
  for (const auto& text : pointers) {
    Pointer pointer(text.c_str(), text.size());
    if (!pointer.IsValid()) {
      continue;
    }
    const auto target = counterpart_in(desired, live, pointer);
    if (!target) {
      continue;
    }
    if (const json::Value* live_value = pointer.Get(live)) {
      target->Set(desired, json::Value(*live_value, desired.GetAllocator()), desired.GetAllocator());
    } else {
      target->Erase(desired);
    }
  }
}

bool owned_by_another_manager(const json::Value& live, const std::string& pointer, std::string_view field_manager) {
  return path_owned_by_another_manager(live, Pointer(pointer.c_str(), pointer.size()), field_manager).has_value();
}

void give_up_fields(json::Document& desired, const json::Value& live, const std::vector<std::string>& pointers,
                    std::string_view field_manager) {
  for (const auto& text : pointers) {
    if (auto path = path_owned_by_another_manager(live, Pointer(text.c_str(), text.size()), field_manager)) {
      remove_owned_path(desired, *path);
    }
  }
}

}  // namespace kstate::manifests
