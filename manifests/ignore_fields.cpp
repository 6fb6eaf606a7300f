// Implementation of fields left to other writers (ignore_fields.hpp), on RapidJSON's
// JSON pointers.
#include "manifests/ignore_fields.hpp"

#include <rapidjson/pointer.h>

#include <algorithm>

namespace kstate::manifests {
namespace {

using Pointer = rapidjson::GenericPointer<json::Value>;

std::string trimmed(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) {
    return {};
  }
  return std::string(text.substr(begin, text.find_last_not_of(" \t\n") - begin + 1));
}

}  // namespace

Result<std::vector<std::string>> parse_ignore_fields(std::string_view text) {
  std::vector<std::string> pointers;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string pointer = trimmed(text.substr(0, comma));
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
    parts.push_back(trimmed(object.substr(0, slash)));
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

void leave_fields_to_others(json::Document& desired, const json::Value& live,
                            const std::vector<std::string>& pointers) {
  for (const auto& text : pointers) {
    Pointer pointer(text.c_str(), text.size());
    if (!pointer.IsValid() || pointer.Get(desired) == nullptr) {
      continue;
    }
    if (const json::Value* live_value = pointer.Get(live)) {
      pointer.Set(desired, json::Value(*live_value, desired.GetAllocator()), desired.GetAllocator());
    } else {
      pointer.Erase(desired);
    }
  }
}

bool owned_by_another_manager(const json::Value& live, const std::string& pointer, std::string_view field_manager) {
  Pointer parsed(pointer.c_str(), pointer.size());
  if (!parsed.IsValid() || parsed.GetTokenCount() == 0) {
    return false;
  }
  for (std::size_t i = 0; i < parsed.GetTokenCount(); ++i) {
    if (parsed.GetTokens()[i].index != rapidjson::kPointerInvalidIndex) {
      return false;  // a list item: its key in fieldsV1 depends on the list's merge keys
    }
  }
  const json::Value* entries = json::find_path(live, {"metadata", "managedFields"});
  if (entries == nullptr || !entries->IsArray()) {
    return false;
  }
  for (const auto& entry : entries->GetArray()) {
    if (json::string_or(json::find(entry, "manager"), "") == field_manager &&
        json::string_or(json::find(entry, "operation"), "") == "Apply") {
      continue;
    }
    const json::Value* fields = json::find(entry, "fieldsV1");
    for (std::size_t i = 0; fields != nullptr && i < parsed.GetTokenCount(); ++i) {
      const std::string key = "f:" + std::string(parsed.GetTokens()[i].name, parsed.GetTokens()[i].length);
      fields = fields->IsObject() ? json::find(*fields, key) : nullptr;
    }
    if (fields != nullptr) {
      return true;
    }
  }
  return false;
}

void give_up_fields(json::Document& desired, const json::Value& live, const std::vector<std::string>& pointers,
                    std::string_view field_manager) {
  for (const auto& text : pointers) {
    if (owned_by_another_manager(live, text, field_manager)) {
      Pointer(text.c_str(), text.size()).Erase(desired);
    }
  }
}

}  // namespace kstate::manifests
