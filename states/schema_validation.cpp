// Structural-schema validation of custom resources (see schema_validation.hpp). The
// subset checked is what catches the usual manifest mistakes before the CRD exists:
// wrong types, missing required fields, values outside an enum or pattern, and
// misspelt (unknown) field names. Composition keywords (allOf, anyOf, oneOf, not)
// and formats are left to the server, which runs once the CRD exists.
#include "states/schema_validation.hpp"

#include <algorithm>
#include <optional>
#include <regex>

namespace kstate::states {
namespace {

bool flag(const json::Value& schema, std::string_view key) {
  const json::Value* value = json::find(schema, key);
  return value != nullptr && value->IsBool() && value->GetBool();
}

// The JSON type name as the API server's messages use it.
std::string type_of(const json::Value& value) {
  if (value.IsNull()) {
    return "null";
  }
  if (value.IsBool()) {
    return "boolean";
  }
  if (value.IsInt64() || value.IsUint64()) {
    return "integer";
  }
  if (value.IsNumber()) {
    return "number";
  }
  if (value.IsString()) {
    return "string";
  }
  return value.IsArray() ? "array" : "object";
}

bool has_type(const json::Value& value, std::string_view type) {
  std::string actual = type_of(value);
  return actual == type || (type == "number" && actual == "integer");
}

// A value as the server quotes it in messages: strings in quotes, the rest as JSON.
std::string shown(const json::Value& value) {
  return value.IsString() ? "\"" + std::string(value.GetString()) + "\"" : json::dump(value);
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::size_t code_points(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) {
    count += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  }
  return count;
}

double number_of(const json::Value& value) {
  return value.IsNumber() ? value.GetDouble() : 0;
}

// Whether an OpenAPI property has a default the server fills in when it is missing.
// Kubernetes gives most required fields their Go zero value as default ("" for a
// container's name, 0, {}), which only says what a missing field decodes to: the
// server's validation then refuses it (a container without a name), as kubectl's own
// validation did ("missing required field"). Only a real default makes one optional.
bool defaulted(const json::Value* properties, const json::Value& name) {
  const json::Value* property =
      properties != nullptr && properties->IsObject() ? json::find(*properties, name.GetString()) : nullptr;
  const json::Value* value = property != nullptr ? json::find(*property, "default") : nullptr;
  if (value == nullptr || value->IsNull()) {
    return false;
  }
  if (value->IsString()) {
    return value->GetStringLength() > 0;
  }
  if (value->IsNumber()) {
    return value->GetDouble() != 0;
  }
  if (value->IsBool()) {
    return value->GetBool();
  }
  return value->IsObject() ? value->MemberCount() > 0 : value->Size() > 0;
}

class Validator {
 public:
  std::vector<SchemaViolation> violations;

  // Set: validating against an OpenAPI v3 document (validate_against_openapi), whose
  // schemas point into these with $ref.
  const json::Value* components = nullptr;
  bool check_required = true;  // Completeness::whole_object

 private:
  // References being followed: bounded, so that a document whose references form a
  // cycle (A -> B -> A with no field between) cannot recurse without end. Values nest
  // at most 256 deep (manifests/yaml_to_json.hpp), a few references per level.
  static constexpr int max_reference_depth = 1024;
  int reference_depth_ = 0;

 public:
  void check(const json::Value& value, const json::Value& schema, const std::string& path, bool root) {
    if (!schema.IsObject()) {
      return;
    }
    if (components != nullptr && !follow_references(value, schema, path, root)) {
      return;
    }
    std::string type(json::string_or(json::find(schema, "type"), ""));
    if (value.IsNull()) {
      // (an OpenAPI document's fields take null: it decodes as "not set", as
      // `creationTimestamp: null` in generated manifests)
      if (components == nullptr && !flag(schema, "nullable") && !type.empty()) {
        type_error(path, type, value);
      }
      return;
    }
    if (components != nullptr && !one_of_types(value, schema, path)) {
      return;
    }
    if (flag(schema, "x-kubernetes-int-or-string") ||
        json::string_or(json::find(schema, "format"), "") == "int-or-string") {
      if (!has_type(value, "integer") && !has_type(value, "string")) {
        add(path, "Invalid value: " + shown(value) + ": " + path + " in body must be of type integer or string: \"" +
                      type_of(value) + "\"");
        return;
      }
    } else if (!type.empty() && !has_type(value, type)) {
      type_error(path, type, value);
      return;
    }
    check_enum(value, schema, path);
    if (value.IsString()) {
      check_string(value, schema, path);
    } else if (value.IsNumber()) {
      check_number(value, schema, path);
    } else if (value.IsArray()) {
      check_array(value, schema, path);
    } else if (value.IsObject()) {
      check_object(value, schema, path, root);
    }
  }

 private:
  // An OpenAPI schema's `$ref` and `allOf` (Kubernetes wraps each reference in a
  // one-element allOf, with description and default beside it): the value is checked
  // against each referenced schema. False when `schema` was only a reference.
  bool follow_references(const json::Value& value, const json::Value& schema, const std::string& path, bool root) {
    bool only_references = false;
    ++reference_depth_;
    if (const json::Value* reference = json::find(schema, "$ref"); reference != nullptr && reference->IsString()) {
      if (const json::Value* target = referenced(reference->GetString())) {
        check(value, *target, path, root);
      }
      only_references = true;
    }
    if (const json::Value* all = json::find(schema, "allOf"); all != nullptr && all->IsArray()) {
      for (const auto& part : all->GetArray()) {
        if (reference_depth_ <= max_reference_depth) {
          check(value, part, path, root);
        }
      }
      only_references = json::find(schema, "type") == nullptr && json::find(schema, "properties") == nullptr;
    }
    --reference_depth_;
    return !only_references;
  }

  // "#/components/schemas/<name>" in the document's components.schemas.
  const json::Value* referenced(std::string_view reference) const {
    constexpr std::string_view prefix = "#/components/schemas/";
    if (!reference.starts_with(prefix) || reference_depth_ > max_reference_depth) {
      return nullptr;
    }
    return json::find(*components, reference.substr(prefix.size()));
  }

  // oneOf/anyOf of plain types (Kubernetes' IntOrString: integer or string; Quantity:
  // string or number): the value must have one of them. Alternatives that are not
  // plain types are left to the server. False after reporting a mismatch.
  bool one_of_types(const json::Value& value, const json::Value& schema, const std::string& path) {
    for (const char* keyword : {"oneOf", "anyOf"}) {
      const json::Value* alternatives = json::find(schema, keyword);
      if (alternatives == nullptr || !alternatives->IsArray() || alternatives->Empty()) {
        continue;
      }
      std::string types;
      for (const auto& alternative : alternatives->GetArray()) {
        const json::Value* type = json::find(alternative, "type");
        if (type == nullptr || !type->IsString() || alternative.MemberCount() != 1) {
          return true;
        }
        if (has_type(value, type->GetString())) {
          return true;
        }
        types += (types.empty() ? "" : " or ") + std::string(type->GetString());
      }
      add(path, "Invalid value: " + shown(value) + ": " + path + " in body must be of type " + types + ": \"" +
                    type_of(value) + "\"");
      return false;
    }
    return true;
  }

  void add(const std::string& field, std::string message) {
    violations.push_back({field, field.empty() ? message : field + ": " + message});
  }

  void type_error(const std::string& path, const std::string& type, const json::Value& value) {
    std::string actual = type_of(value);
    add(path, "Invalid value: \"" + actual + "\": " + (path.empty() ? std::string("body") : path + " in body") +
                  " must be of type " + type + ": \"" + actual + "\"");
  }

  void check_enum(const json::Value& value, const json::Value& schema, const std::string& path) {
    const json::Value* allowed = json::find(schema, "enum");
    if (allowed == nullptr || !allowed->IsArray() || allowed->Empty()) {
      return;
    }
    std::string listed;
    for (const auto& option : allowed->GetArray()) {
      if (option == value) {
        return;
      }
      listed += (listed.empty() ? "" : ", ") + shown(option);
    }
    add(path, "Unsupported value: " + shown(value) + ": supported values: " + listed);
  }

  void check_string(const json::Value& value, const json::Value& schema, const std::string& path) {
    std::string_view text(value.GetString(), value.GetStringLength());
    if (const json::Value* pattern = json::find(schema, "pattern"); pattern != nullptr && pattern->IsString()) {
      // Kubernetes uses Go's RE2 syntax; ECMAScript agrees on the patterns CRDs use in
      // practice. A pattern this engine cannot read is left to the server.
      try {
        std::regex expression(pattern->GetString(), std::regex::ECMAScript);
        if (!std::regex_search(text.begin(), text.end(), expression)) {
          add(path,
              "Invalid value: " + shown(value) + ": " + path + " in body should match '" + pattern->GetString() + "'");
        }
      } catch (const std::regex_error&) {
      }
    }
    std::size_t length = code_points(text);
    if (const json::Value* most = json::find(schema, "maxLength");
        most != nullptr && most->IsUint64() && length > most->GetUint64()) {
      add(path, "Too long: may not be longer than " + json::dump(*most));
    }
    if (const json::Value* least = json::find(schema, "minLength");
        least != nullptr && least->IsUint64() && length < least->GetUint64()) {
      add(path, "Invalid value: " + shown(value) + ": " + path + " in body should be at least " + json::dump(*least) +
                    " chars long");
    }
  }

  void check_number(const json::Value& value, const json::Value& schema, const std::string& path) {
    double number = number_of(value);
    if (const json::Value* minimum = json::find(schema, "minimum"); minimum != nullptr && minimum->IsNumber()) {
      bool exclusive = flag(schema, "exclusiveMinimum");
      if (exclusive ? number <= number_of(*minimum) : number < number_of(*minimum)) {
        add(path, "Invalid value: " + shown(value) + ": " + path + " in body should be greater than " +
                      (exclusive ? "" : "or equal to ") + json::dump(*minimum));
      }
    }
    if (const json::Value* maximum = json::find(schema, "maximum"); maximum != nullptr && maximum->IsNumber()) {
      bool exclusive = flag(schema, "exclusiveMaximum");
      if (exclusive ? number >= number_of(*maximum) : number > number_of(*maximum)) {
        add(path, "Invalid value: " + shown(value) + ": " + path + " in body should be less than " +
                      (exclusive ? "" : "or equal to ") + json::dump(*maximum));
      }
    }
  }

  void check_array(const json::Value& value, const json::Value& schema, const std::string& path) {
    std::size_t size = value.Size();
    if (const json::Value* most = json::find(schema, "maxItems");
        most != nullptr && most->IsUint64() && size > most->GetUint64()) {
      add(path, "Too many: " + std::to_string(size) + ": must have at most " + json::dump(*most) + " items");
    }
    if (const json::Value* least = json::find(schema, "minItems");
        least != nullptr && least->IsUint64() && size < least->GetUint64()) {
      add(path, "Invalid value: " + std::to_string(size) + ": " + path + " in body should have at least " +
                    json::dump(*least) + " items");
    }
    const json::Value* items = json::find(schema, "items");
    if (items == nullptr || !items->IsObject()) {
      return;
    }
    for (std::size_t i = 0; i < size; ++i) {
      check(value[static_cast<rapidjson::SizeType>(i)], *items, path + "[" + std::to_string(i) + "]", false);
    }
  }

  void check_object(const json::Value& value, const json::Value& schema, const std::string& path, bool root) {
    const json::Value* properties = json::find(schema, "properties");
    const json::Value* additional = json::find(schema, "additionalProperties");
    bool preserve_unknown = flag(schema, "x-kubernetes-preserve-unknown-fields") ||
                            (additional != nullptr && additional->IsBool() && additional->GetBool());
    // Objects that are themselves Kubernetes objects keep apiVersion/kind/metadata.
    bool object_fields_allowed = root || flag(schema, "x-kubernetes-embedded-resource");
    // An OpenAPI object schema that lists no fields takes any (RawExtension, FieldsV1).
    preserve_unknown = preserve_unknown || (components != nullptr && properties == nullptr);
    for (const auto& member : value.GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      std::string field = child(path, key);
      if (object_fields_allowed && key == "metadata" && components == nullptr) {
        continue;  // the server checks a custom resource's metadata itself
      }
      const json::Value* property =
          properties != nullptr && properties->IsObject() ? json::find(*properties, key) : nullptr;
      if (property != nullptr) {
        check(member.value, *property, field, false);
      } else if (additional != nullptr && additional->IsObject()) {
        check(member.value, *additional, field, false);
      } else if (!preserve_unknown && !(object_fields_allowed && (key == "apiVersion" || key == "kind"))) {
        violations.push_back({field, "unknown field \"" + field + "\""});
      }
    }
    if (const json::Value* required = json::find(schema, "required");
        check_required && required != nullptr && required->IsArray()) {
      for (const auto& name : required->GetArray()) {
        if (name.IsString() && json::find(value, name.GetString()) == nullptr && !defaulted(properties, name)) {
          add(child(path, name.GetString()), "Required value");
        }
      }
    }
  }
};

}  // namespace

std::vector<SchemaViolation> validate_against_schema(const json::Value& object, const json::Value& schema,
                                                     Completeness completeness) {
  Validator validator;
  validator.check_required = completeness == Completeness::whole_object;
  validator.check(object, schema, "", true);
  return std::move(validator.violations);
}

std::vector<SchemaViolation> validate_against_openapi(const json::Value& object, const json::Value& schema,
                                                      const json::Value& components, Completeness completeness) {
  Validator validator;
  validator.check_required = completeness == Completeness::whole_object;
  validator.components = &components;
  validator.check(object, schema, "", true);
  return std::move(validator.violations);
}

namespace {

// One `[...]` of a structured-merge-diff path, matched against a list: the index of the
// item it names, or nullopt. `[3]` is an index, `[=value]` an item of a set,
// `[k="v",n=80]` the item whose fields have these JSON values.
std::optional<std::size_t> item_named(std::string_view selector, const json::Value& list) {
  if (!list.IsArray()) {
    return std::nullopt;
  }
  if (!selector.empty() && std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::size_t index = std::stoul(std::string(selector));
    return index < list.Size() ? std::optional<std::size_t>(index) : std::nullopt;
  }
  // (key, JSON text of its value) pairs; one with an empty key for a set's `=value`.
  std::vector<std::pair<std::string, std::string>> wanted;
  std::size_t at = 0;
  while (at < selector.size()) {
    std::size_t equals = selector.find('=', at);
    if (equals == std::string_view::npos) {
      return std::nullopt;
    }
    std::string key(selector.substr(at, equals - at));
    std::size_t end = equals + 1;
    if (end < selector.size() && selector[end] == '"') {
      for (++end; end < selector.size() && selector[end] != '"'; ++end) {
        end += selector[end] == '\\' ? 1 : 0;
      }
      ++end;
    } else {
      end = std::min(selector.find(',', end), selector.size());
    }
    wanted.emplace_back(std::move(key), std::string(selector.substr(equals + 1, end - equals - 1)));
    at = end + 1;
  }
  // A key the item does not set matches: the server named the item with its defaults
  // (`ports[containerPort=80,protocol="TCP"]` for a port the manifest gives no protocol).
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
    bool matches = true;
    bool any_set = false;
    for (const auto& [key, value] : wanted) {
      const json::Value* field = key.empty() ? &list[i] : json::find(list[i], key);
      any_set = any_set || field != nullptr;
      matches = matches && (field == nullptr || json::dump(*field) == value);
    }
    if (matches && any_set) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string manifest_field_path(std::string_view server_path, const json::Value& object) {
  std::string path;
  const json::Value* at = &object;  // nullptr once the walk left the object
  std::size_t i = 0;
  if (server_path.starts_with('.')) {
    i = 1;
  }
  while (i < server_path.size()) {
    if (server_path[i] == '[') {
      // The closing bracket, skipping quoted values (which may hold `]`).
      std::size_t end = i + 1;
      for (bool quoted = false; end < server_path.size() && (quoted || server_path[end] != ']'); ++end) {
        if (server_path[end] == '\\') {
          ++end;
        } else if (server_path[end] == '"') {
          quoted = !quoted;
        }
      }
      std::string_view selector = server_path.substr(i + 1, end - i - 1);
      auto index = at != nullptr ? item_named(selector, *at) : std::nullopt;
      if (index) {
        path += "[" + std::to_string(*index) + "]";
        at = &(*at)[static_cast<rapidjson::SizeType>(*index)];
      } else {
        path += "[" + std::string(selector) + "]";
        at = nullptr;
      }
      i = end + 1;
      continue;
    }
    if (server_path[i] == '.') {
      ++i;
    }
    std::size_t end = server_path.find_first_of(".[", i);
    end = end == std::string_view::npos ? server_path.size() : end;
    std::string_view field = server_path.substr(i, end - i);
    path += (path.empty() ? "" : ".") + std::string(field);
    at = at != nullptr && at->IsObject() ? json::find(*at, field) : nullptr;
    i = end;
  }
  return path;
}

Result<const json::Value*> crd_version_schema(const json::Value& crd, std::string_view version) {
  const json::Value* versions = json::find_path(crd, {"spec", "versions"});
  std::string defined;
  if (versions != nullptr && versions->IsArray()) {
    for (const auto& entry : versions->GetArray()) {
      std::string_view name = json::string_or(json::find(entry, "name"), "");
      if (name == version) {
        return json::find_path(entry, {"schema", "openAPIV3Schema"});
      }
      defined += (defined.empty() ? "" : ", ") + std::string(name);
    }
  }
  return Error(ErrorKind::not_found, "CustomResourceDefinition " + json::string_at(crd, {"metadata", "name"}) +
                                         " defines no version " + std::string(version) +
                                         (defined.empty() ? "" : " (it defines " + defined + ")"));
}

}  // namespace kstate::states
