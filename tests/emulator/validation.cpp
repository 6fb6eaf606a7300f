// Validation rules (see validation.hpp), with the messages kube-apiserver uses so
// that clients printing them look the same as against a real cluster.
#include "tests/emulator/validation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <regex>

namespace kstate::emulator {

namespace {

const char* const kLabelMessage =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const char* const kSubdomainMessage =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const char* const kDns1035Message =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')";

bool is_label(std::string_view name, bool must_start_alpha) {
  if (name.empty() || name.size() > 63) {
    return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (must_start_alpha ? !(name.front() >= 'a' && name.front() <= 'z') : !alnum(name.front())) {
    return false;
  }
  if (!alnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool is_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  size_t start = 0;
  while (true) {
    auto dot = name.find('.', start);
    auto part = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!is_label(part, false)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

FieldCause invalid(std::string field, const std::string& rendered_value, const std::string& why) {
  return {"FieldValueInvalid", "Invalid value: " + rendered_value + ": " + why, std::move(field)};
}

// What a Secret's or a ConfigMap's data may hold in all (core.MaxSecretSize): 1 MiB of
// decoded bytes, whatever base64 adds on the wire.
constexpr std::size_t max_data_bytes = std::size_t{1} << 20;

// The bytes the values of object[field] hold once stored: base64 values decoded (Secret
// data, ConfigMap binaryData). Keys also present in `overridden_by` are not counted
// (stringData replaces them).
std::size_t stored_bytes(const json::Value& object, const char* field, bool base64,
                         const json::Value* overridden_by = nullptr) {
  const json::Value* values = json::find(object, field);
  if (values == nullptr || !values->IsObject()) {
    return 0;
  }
  std::size_t total = 0;
  for (const auto& member : values->GetObject()) {
    if (!member.value.IsString() || (overridden_by != nullptr && overridden_by->IsObject() &&
                                     json::find(*overridden_by, member.name.GetString()))) {
      continue;
    }
    std::string_view text(member.value.GetString(), member.value.GetStringLength());
    if (!base64) {
      total += text.size();
      continue;
    }
    // Every 4 base64 characters hold 3 bytes, less one per '=' of padding.
    std::size_t padding = 0;
    while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
      ++padding;
    }
    total += text.size() / 4 * 3 - std::min(padding, text.size() / 4 * 3);
  }
  return total;
}

FieldCause too_long(std::string field) {
  return {"FieldValueTooLong", "Too long: may not be more than " + std::to_string(max_data_bytes) + " bytes",
          std::move(field)};
}

bool equal_at(const json::Value& a, const json::Value& b, std::initializer_list<std::string_view> path) {
  const json::Value* left = json::find_path(a, path);
  const json::Value* right = json::find_path(b, path);
  if (left == nullptr || right == nullptr) {
    return left == right;
  }
  return *left == *right;
}

// A map[string]string as Go's %#v prints it in validation messages.
std::string go_string_map(const json::Value* map) {
  if (map == nullptr || !map->IsObject()) {
    return "map[string]string(nil)";
  }
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& member : map->GetObject()) {
    entries.emplace_back(member.name.GetString(), json::string_or(&member.value, ""));
  }
  std::sort(entries.begin(), entries.end());
  std::string text = "map[string]string{";
  for (size_t i = 0; i < entries.size(); ++i) {
    text += (i > 0 ? ", " : "") + quoted(entries[i].first) + ":" + quoted(entries[i].second);
  }
  return text + "}";
}

// Whether a metav1.LabelSelector selects these labels (matchLabels and matchExpressions).
bool selector_matches(const json::Value& selector, const json::Value* labels) {
  auto label = [&](std::string_view key) -> const json::Value* {
    return labels != nullptr && labels->IsObject() ? json::find(*labels, key) : nullptr;
  };
  if (const json::Value* match = json::find(selector, "matchLabels"); match != nullptr && match->IsObject()) {
    for (const auto& member : match->GetObject()) {
      const json::Value* value = label(member.name.GetString());
      if (value == nullptr || *value != member.value) {
        return false;
      }
    }
  }
  if (const json::Value* expressions = json::find(selector, "matchExpressions");
      expressions != nullptr && expressions->IsArray()) {
    for (const auto& expression : expressions->GetArray()) {
      std::string key(json::string_or(json::find(expression, "key"), ""));
      std::string op(json::string_or(json::find(expression, "operator"), ""));
      const json::Value* value = label(key);
      bool listed = false;
      if (const json::Value* values = json::find(expression, "values"); values != nullptr && values->IsArray()) {
        listed = value != nullptr && std::any_of(values->Begin(), values->End(),
                                                 [&](const json::Value& candidate) { return candidate == *value; });
      }
      if ((op == "In" && !listed) || (op == "NotIn" && listed) || (op == "Exists" && value == nullptr) ||
          (op == "DoesNotExist" && value != nullptr)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<FieldCause> validate_name(const ResourceType& type, std::string_view name) {
  std::vector<FieldCause> causes;
  if (name.empty()) {
    causes.push_back({"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"});
    return causes;
  }
  if (type.group == "rbac.authorization.k8s.io") {
    if (name == "." || name == "..") {
      causes.push_back(invalid("metadata.name", quoted(name), "may not be '" + std::string(name) + "'"));
    } else if (name.find('/') != std::string_view::npos) {
      causes.push_back(invalid("metadata.name", quoted(name), "may not contain '/'"));
    } else if (name.find('%') != std::string_view::npos) {
      causes.push_back(invalid("metadata.name", quoted(name), "may not contain '%'"));
    }
    return causes;
  }
  if (type.group.empty() && type.plural == "services") {
    if (!is_label(name, true)) {
      causes.push_back(invalid("metadata.name", quoted(name), kDns1035Message));
    }
    return causes;
  }
  if (type.group.empty() && type.plural == "namespaces") {
    if (!is_label(name, false)) {
      causes.push_back(invalid("metadata.name", quoted(name), kLabelMessage));
    }
    return causes;
  }
  if (!is_subdomain(name)) {
    causes.push_back(invalid("metadata.name", quoted(name), kSubdomainMessage));
  }
  return causes;
}

std::vector<FieldCause> validate_immutable(const ResourceType& type, const json::Value& old_object,
                                           const json::Value& new_object) {
  std::vector<FieldCause> causes;
  auto immutable = [&](std::initializer_list<std::string_view> path, const std::string& field) {
    if (!equal_at(old_object, new_object, path)) {
      const json::Value* value = json::find_path(new_object, path);
      causes.push_back(invalid(field, value == nullptr ? "null" : json::dump(*value), "field is immutable"));
    }
  };
  if (type.group.empty() && type.plural == "services") {
    // The service storage copies a changed clusterIP into clusterIPs[0], which may not
    // change once allocated; the message shows the new list as Go prints it.
    const std::string old_ip(json::string_or(json::find_path(old_object, {"spec", "clusterIP"}), ""));
    std::string new_ip(json::string_or(json::find_path(new_object, {"spec", "clusterIP"}), ""));
    std::vector<std::string> new_ips;
    if (const json::Value* ips = json::find_path(new_object, {"spec", "clusterIPs"});
        ips != nullptr && ips->IsArray()) {
      for (const auto& ip : ips->GetArray()) {
        new_ips.emplace_back(json::string_or(&ip, ""));
      }
    }
    if (new_ips.empty()) {
      new_ips.push_back(new_ip);
    } else if (!new_ip.empty()) {
      new_ips[0] = new_ip;
    }
    if (!old_ip.empty() && new_ips[0] != old_ip) {
      std::string shown = "[]string{";
      for (size_t i = 0; i < new_ips.size(); ++i) {
        shown += (i > 0 ? ", " : "") + quoted(new_ips[i]);
      }
      causes.push_back(invalid("spec.clusterIPs[0]", shown + "}", "may not change once set"));
    }
  }
  if (type.group == "apps" && type.plural != "replicasets") {
    immutable({"spec", "selector"}, "spec.selector");
  }
  if (type.group == "batch" && type.plural == "jobs") {
    immutable({"spec", "selector"}, "spec.selector");
    immutable({"spec", "template"}, "spec.template");
  }
  if (type.group.empty() && (type.plural == "configmaps" || type.plural == "secrets")) {
    const json::Value* was_immutable = json::find(old_object, "immutable");
    if (was_immutable != nullptr && was_immutable->IsBool() && was_immutable->GetBool()) {
      for (std::string_view field : {"data", "binaryData", "stringData"}) {
        if (!equal_at(old_object, new_object, {field})) {
          causes.push_back(
              {"FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", std::string(field)});
        }
      }
      if (!equal_at(old_object, new_object, {"immutable"})) {
        causes.push_back({"FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "immutable"});
      }
    }
  }
  if (type.group.empty() && type.plural == "persistentvolumeclaims") {
    const json::Value empty;
    const json::Value* old_found = json::find(old_object, "spec");
    const json::Value* new_found = json::find(new_object, "spec");
    json::Document old_spec = json::copy(old_found != nullptr ? *old_found : empty);
    json::Document new_spec = json::copy(new_found != nullptr ? *new_found : empty);
    for (auto* spec : {&old_spec, &new_spec}) {
      if (json::Value* resources = json::find(*spec, "resources"); resources != nullptr) {
        resources->RemoveMember("requests");
      }
      // The binder fills volumeName; users may set it once.
      spec->RemoveMember("volumeName");
    }
    if (old_spec != new_spec) {
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: spec is immutable after creation except resources.requests and "
                        "volumeAttributesClassName for bound claims (field is immutable)",
                        "spec"});
    }
  }
  return causes;
}

std::vector<FieldCause> validate_object(const ResourceType& type, const json::Value& object) {
  std::vector<FieldCause> causes;
  if (type.group == "apiextensions.k8s.io") {
    auto name = json::string_or(json::find_path(object, {"metadata", "name"}), "");
    auto plural = json::string_or(json::find_path(object, {"spec", "names", "plural"}), "");
    auto group = json::string_or(json::find_path(object, {"spec", "group"}), "");
    if (group.empty()) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.group"});
    }
    if (plural.empty()) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.names.plural"});
    }
    if (json::string_or(json::find_path(object, {"spec", "names", "kind"}), "").empty()) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.names.kind"});
    }
    if (!group.empty() && !plural.empty() && name != std::string(plural) + "." + std::string(group)) {
      causes.push_back(invalid("metadata.name", quoted(name), "must be spec.names.plural+\".\"+spec.group"));
    }
    const json::Value* versions = json::find_path(object, {"spec", "versions"});
    if (versions == nullptr || !versions->IsArray() || versions->Empty()) {
      causes.push_back({"FieldValueRequired", "Required value: must have exactly one version marked as storage version",
                        "spec.versions"});
    } else {
      int storage = 0;
      for (const auto& version : versions->GetArray()) {
        const json::Value* flag = json::find(version, "storage");
        storage += flag != nullptr && flag->IsBool() && flag->GetBool() ? 1 : 0;
      }
      if (storage != 1) {
        causes.push_back(invalid("spec.versions", "[]", "must have exactly one version marked as storage version"));
      }
    }
    const json::Value* scope = json::find_path(object, {"spec", "scope"});
    if (scope == nullptr || !scope->IsString() ||
        (std::string_view(scope->GetString()) != "Namespaced" && std::string_view(scope->GetString()) != "Cluster")) {
      causes.push_back({"FieldValueNotSupported",
                        "Unsupported value: " + (scope != nullptr ? json::dump(*scope) : std::string("\"\"")) +
                            ": supported values: \"Cluster\", \"Namespaced\"",
                        "spec.scope"});
    }
  }
  if (type.group == "apps" && !type.custom) {
    // The workloads' selector is required and must select the pod template (recording 36).
    const json::Value* selector = json::find_path(object, {"spec", "selector"});
    const json::Value* labels = json::find_path(object, {"spec", "template", "metadata", "labels"});
    const bool missing = selector == nullptr || !selector->IsObject();
    if (missing) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.selector"});
    }
    if (missing || !selector_matches(*selector, labels)) {
      causes.push_back(invalid("spec.template.metadata.labels", go_string_map(labels),
                               "`selector` does not match template `labels`"));
    }
  }
  if (type.group.empty() && type.plural == "services") {
    const json::Value* ports = json::find_path(object, {"spec", "ports"});
    auto service_type = json::string_or(json::find_path(object, {"spec", "type"}), "ClusterIP");
    if (service_type != "ExternalName" && (ports == nullptr || !ports->IsArray() || ports->Empty())) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.ports"});
    }
  }
  if (type.group.empty() && type.plural == "configmaps") {
    if (const json::Value* data = json::find(object, "data"); data != nullptr && data->IsObject()) {
      for (const auto& member : data->GetObject()) {
        if (!member.value.IsString()) {
          causes.push_back({"FieldValueTypeInvalid", "Invalid value: must be a string",
                            "data." + std::string(member.name.GetString())});
        }
      }
    }
    // ValidateConfigMap reports the size on the empty path, which prints as "[]".
    if (stored_bytes(object, "data", false) + stored_bytes(object, "binaryData", true) > max_data_bytes) {
      causes.push_back(too_long("[]"));
    }
  }
  if (type.group.empty() && type.plural == "secrets") {
    // kube-apiserver merges stringData into data before it validates, so both count.
    if (stored_bytes(object, "data", true, json::find(object, "stringData")) +
            stored_bytes(object, "stringData", false) >
        max_data_bytes) {
      causes.push_back(too_long("data"));
    }
  }
  return causes;
}

// ---- CRD schemas ----------------------------------------------------------------

namespace {

bool flag(const json::Value& schema, std::string_view key) {
  const json::Value* value = json::find(schema, key);
  return value != nullptr && value->IsBool() && value->GetBool();
}

std::string join(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
}

const char* json_type_name(const json::Value& value) {
  if (value.IsObject()) {
    return "object";
  }
  if (value.IsArray()) {
    return "array";
  }
  if (value.IsString()) {
    return "string";
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
  return "null";
}

void check(const json::Value& schema, json::Value& value, const std::string& path, std::vector<FieldCause>& causes,
           std::vector<std::string>& unknown) {
  if (!schema.IsObject()) {
    return;
  }
  if (value.IsNull()) {
    if (!flag(schema, "nullable") && json::find(schema, "type") != nullptr) {
      causes.push_back({"FieldValueTypeInvalid",
                        "Invalid value: \"null\": " + path + " in body must be of type " +
                            std::string(json::string_or(json::find(schema, "type"), "object")) + ": \"null\"",
                        path});
    }
    return;
  }
  bool int_or_string = flag(schema, "x-kubernetes-int-or-string");
  auto expected = json::string_or(json::find(schema, "type"), "");
  std::string actual = json_type_name(value);
  if (int_or_string) {
    if (actual != "integer" && actual != "string") {
      causes.push_back({"FieldValueTypeInvalid",
                        "Invalid value: \"" + actual + "\": " + path +
                            " in body must be of type integer,string: " + json::dump(value),
                        path});
    }
    return;
  }
  if (!expected.empty()) {
    bool matches = actual == expected || (expected == "number" && actual == "integer");
    if (!matches) {
      causes.push_back({"FieldValueTypeInvalid",
                        "Invalid value: \"" + actual + "\": " + path + " in body must be of type " +
                            std::string(expected) + ": " + json::dump(value),
                        path});
      return;
    }
  }
  if (const json::Value* allowed = json::find(schema, "enum"); allowed != nullptr && allowed->IsArray()) {
    bool found = std::any_of(allowed->Begin(), allowed->End(), [&](const json::Value& v) { return v == value; });
    if (!found) {
      std::string list;
      for (const auto& v : allowed->GetArray()) {
        list += (list.empty() ? "" : ", ") + json::dump(v);
      }
      causes.push_back(
          {"FieldValueNotSupported", "Unsupported value: " + json::dump(value) + ": supported values: " + list, path});
    }
  }
  if (value.IsNumber()) {
    if (const json::Value* minimum = json::find(schema, "minimum");
        minimum != nullptr && minimum->IsNumber() && value.GetDouble() < minimum->GetDouble()) {
      causes.push_back({"FieldValueInvalid",
                        "Invalid value: " + json::dump(value) + ": " + path +
                            " in body should be greater than or "
                            "equal to " +
                            json::dump(*minimum),
                        path});
    }
    if (const json::Value* maximum = json::find(schema, "maximum");
        maximum != nullptr && maximum->IsNumber() && value.GetDouble() > maximum->GetDouble()) {
      causes.push_back({"FieldValueInvalid",
                        "Invalid value: " + json::dump(value) + ": " + path +
                            " in body should be less than or equal to " + json::dump(*maximum),
                        path});
    }
  }
  if (value.IsString()) {
    if (const json::Value* pattern = json::find(schema, "pattern"); pattern != nullptr && pattern->IsString()) {
      try {
        if (!std::regex_search(value.GetString(), std::regex(pattern->GetString(), std::regex::ECMAScript))) {
          causes.push_back({"FieldValueInvalid",
                            "Invalid value: " + json::dump(value) + ": " + path + " in body should match '" +
                                pattern->GetString() + "'",
                            path});
        }
      } catch (const std::regex_error&) {
        // An unsupported pattern is not the object's fault.
      }
    }
  }
  if (value.IsArray()) {
    if (const json::Value* items = json::find(schema, "items"); items != nullptr) {
      for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
        check(*items, value[i], path + "[" + std::to_string(i) + "]", causes, unknown);
      }
    }
    return;
  }
  if (!value.IsObject()) {
    return;
  }
  if (const json::Value* required = json::find(schema, "required"); required != nullptr && required->IsArray()) {
    for (const auto& name : required->GetArray()) {
      if (name.IsString() && json::find(value, name.GetString()) == nullptr) {
        causes.push_back({"FieldValueRequired", "Required value", join(path, name.GetString())});
      }
    }
  }
  const json::Value* properties = json::find(schema, "properties");
  const json::Value* additional = json::find(schema, "additionalProperties");
  bool preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
  std::vector<std::string> doomed;
  for (auto& member : value.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    const json::Value* property = properties != nullptr ? json::find(*properties, name) : nullptr;
    if (path.empty() && (name == "apiVersion" || name == "kind" || name == "metadata")) {
      continue;
    }
    if (property != nullptr) {
      check(*property, member.value, join(path, name), causes, unknown);
    } else if (additional != nullptr && additional->IsObject()) {
      check(*additional, member.value, join(path, name), causes, unknown);
    } else if (!preserve && !(additional != nullptr && additional->IsBool() && additional->GetBool())) {
      doomed.emplace_back(name);
    }
  }
  for (const auto& name : doomed) {
    value.RemoveMember(name.c_str());
    unknown.push_back(join(path, name));
  }
}

}  // namespace

std::vector<FieldCause> validate_and_prune(const json::Value& schema, json::Value& object,
                                           std::vector<std::string>& unknown) {
  std::vector<FieldCause> causes;
  check(schema, object, "", causes, unknown);
  return causes;
}

}  // namespace kstate::emulator
