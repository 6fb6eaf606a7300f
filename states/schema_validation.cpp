// Structural-schema validation of custom resources (see schema_validation.hpp). The
// subset checked is what catches the usual manifest mistakes before the CRD exists:
// wrong types, missing required fields, values outside an enum or pattern, and
// misspelt (unknown) field names. Composition keywords (allOf, anyOf, oneOf, not)
// and formats are left to the server, which runs once the CRD exists.
#include "states/schema_validation.hpp"

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

class Validator {
 public:
  std::vector<SchemaViolation> violations;

  void check(const json::Value& value, const json::Value& schema, const std::string& path, bool root) {
    if (!schema.IsObject()) {
      return;
    }
    std::string type(json::string_or(json::find(schema, "type"), ""));
    if (value.IsNull()) {
      if (!flag(schema, "nullable") && !type.empty()) {
        type_error(path, type, value);
      }
      return;
    }
    if (flag(schema, "x-kubernetes-int-or-string")) {
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
    for (const auto& member : value.GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      std::string field = child(path, key);
      if (object_fields_allowed && key == "metadata") {
        continue;  // the server checks metadata itself
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
    if (const json::Value* required = json::find(schema, "required"); required != nullptr && required->IsArray()) {
      for (const auto& name : required->GetArray()) {
        if (name.IsString() && json::find(value, name.GetString()) == nullptr) {
          add(child(path, name.GetString()), "Required value");
        }
      }
    }
  }
};

}  // namespace

std::vector<SchemaViolation> validate_against_schema(const json::Value& object, const json::Value& schema) {
  Validator validator;
  validator.check(object, schema, "", true);
  return std::move(validator.violations);
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
  return Error(ErrorKind::not_found, "CustomResourceDefinition " +
                                         std::string(json::string_or(json::find_path(crd, {"metadata", "name"}), "")) +
                                         " defines no version " + std::string(version) +
                                         (defined.empty() ? "" : " (it defines " + defined + ")"));
}

}  // namespace kstate::states
