// Implementation of object_validation.hpp: the API server's name formats
// (k8s.io/apimachinery/pkg/util/validation) written out by hand, plus the checks of
// the fields kstate needs to address an object.
#include "manifests/object_validation.hpp"

namespace kstate::manifests {

namespace {

bool is_lower_alphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool is_label_shape(std::string_view value) {
  if (value.empty() || !is_lower_alphanumeric(value.front()) || !is_lower_alphanumeric(value.back())) {
    return false;
  }
  for (char c : value) {
    if (!is_lower_alphanumeric(c) && c != '-') {
      return false;
    }
  }
  return true;
}

std::string double_quoted(std::string_view value) {
  return "\"" + std::string(value) + "\"";
}

}  // namespace

std::string check_dns1123_label(std::string_view value) {
  if (value.size() > 63) {
    return "must be no more than 63 characters";
  }
  if (!is_label_shape(value)) {
    return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
           "and end with an alphanumeric character";
  }
  return {};
}

std::string check_dns1035_label(std::string_view value) {
  if (value.size() > 63) {
    return "must be no more than 63 characters";
  }
  if (!is_label_shape(value) || !(value.front() >= 'a' && value.front() <= 'z')) {
    return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character";
  }
  return {};
}

std::string check_dns1123_subdomain(std::string_view value) {
  if (value.size() > 253) {
    return "must be no more than 253 characters";
  }
  std::string_view rest = value;
  bool valid = !rest.empty();
  while (valid) {
    std::size_t dot = rest.find('.');
    valid = is_label_shape(rest.substr(0, dot));
    if (dot == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(dot + 1);
  }
  if (!valid) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
           "start and end with an alphanumeric character";
  }
  return {};
}

namespace {

std::string check_path_segment(std::string_view value) {
  if (value == "." || value == "..") {
    return "may not be '.' or '..'";
  }
  if (value.find('/') != std::string_view::npos || value.find('%') != std::string_view::npos) {
    return "may not contain '/' or '%'";
  }
  return {};
}

bool is_rbac_kind(std::string_view api_version, std::string_view kind) {
  return api_version.substr(0, api_version.find('/')) == "rbac.authorization.k8s.io" &&
         (kind == "Role" || kind == "ClusterRole" || kind == "RoleBinding" || kind == "ClusterRoleBinding");
}

std::string check_name(std::string_view api_version, std::string_view kind, std::string_view name) {
  bool core = api_version.find('/') == std::string_view::npos;
  if (core && kind == "Namespace") {
    return check_dns1123_label(name);
  }
  if (core && kind == "Service") {
    return check_dns1035_label(name);
  }
  if (is_rbac_kind(api_version, kind)) {
    return check_path_segment(name);
  }
  return check_dns1123_subdomain(name);
}

// [A-Za-z][A-Za-z0-9]*: kinds are Go type names.
bool is_kind_shape(std::string_view kind) {
  if (kind.empty() || !((kind[0] >= 'A' && kind[0] <= 'Z') || (kind[0] >= 'a' && kind[0] <= 'z'))) {
    return false;
  }
  for (char c : kind) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

std::string check_api_version(std::string_view api_version) {
  std::size_t slash = api_version.find('/');
  std::string_view version = slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  if (slash != std::string_view::npos) {
    std::string_view group = api_version.substr(0, slash);
    if (std::string problem = check_dns1123_subdomain(group); !problem.empty()) {
      return "the group " + double_quoted(group) + " is not valid: " + problem;
    }
  }
  if (version.empty() || version.size() > 63 || !is_label_shape(version) ||
      version.find('/') != std::string_view::npos) {
    return "expected \"v1\" or \"group/version\" (e.g. apps/v1)";
  }
  return {};
}

}  // namespace

std::vector<ObjectProblem> validate_object(const json::Value& object, const YamlLocator& at) {
  std::vector<ObjectProblem> problems;
  auto add = [&](TextPosition position, std::string field, std::string message) {
    problems.push_back({position, field, field + " " + message});
  };
  const json::Value* api_version = json::find(object, "apiVersion");
  std::string_view api_version_text;
  if (api_version == nullptr || !api_version->IsString() || api_version->GetStringLength() == 0) {
    add(at.child("apiVersion").position(), "apiVersion", "must be a non-empty string");
  } else {
    api_version_text = {api_version->GetString(), api_version->GetStringLength()};
    if (std::string problem = check_api_version(api_version_text); !problem.empty()) {
      add(at.child("apiVersion").position(), "apiVersion", double_quoted(api_version_text) + ": " + problem);
    }
  }
  const json::Value* kind = json::find(object, "kind");
  std::string_view kind_text;
  if (kind == nullptr || !kind->IsString() || kind->GetStringLength() == 0) {
    add(at.child("kind").position(), "kind", "must be a non-empty string");
  } else {
    kind_text = {kind->GetString(), kind->GetStringLength()};
    if (!is_kind_shape(kind_text)) {
      add(at.child("kind").position(), "kind", double_quoted(kind_text) + ": must be a type name such as Deployment");
    }
  }
  const json::Value* metadata = json::find(object, "metadata");
  YamlLocator metadata_at = at.child("metadata");
  if (metadata == nullptr || !metadata->IsObject()) {
    add(metadata_at.position(), "metadata.name", "is required (metadata is missing or not a mapping)");
    return problems;
  }
  const json::Value* name = json::find(*metadata, "name");
  const json::Value* generate_name = json::find(*metadata, "generateName");
  if (name != nullptr && !name->IsString()) {
    add(metadata_at.child("name").position(), "metadata.name", "must be a string");
  } else if (name != nullptr) {
    std::string_view text(name->GetString(), name->GetStringLength());
    if (std::string problem = check_name(api_version_text, kind_text, text); !problem.empty()) {
      add(metadata_at.child("name").position(), "metadata.name", double_quoted(text) + ": " + problem);
    }
  } else if (generate_name != nullptr && generate_name->IsString() && generate_name->GetStringLength() > 0) {
    // A prefix: validated as a name with its trailing '-' standing for the suffix.
    std::string text(generate_name->GetString(), generate_name->GetStringLength());
    std::string masked = text;
    if (masked.back() == '-') {
      masked.back() = 'a';
    }
    if (std::string problem = check_name(api_version_text, kind_text, masked); !problem.empty()) {
      add(metadata_at.child("generateName").position(), "metadata.generateName", double_quoted(text) + ": " + problem);
    }
  } else {
    add(metadata_at.position(), "metadata.name", "is required (or metadata.generateName)");
  }
  if (const json::Value* namespace_name = json::find(*metadata, "namespace"); namespace_name != nullptr) {
    if (!namespace_name->IsString()) {
      add(metadata_at.child("namespace").position(), "metadata.namespace", "must be a string");
    } else {
      std::string_view text(namespace_name->GetString(), namespace_name->GetStringLength());
      if (std::string problem = check_dns1123_label(text); !problem.empty()) {
        add(metadata_at.child("namespace").position(), "metadata.namespace", double_quoted(text) + ": " + problem);
      }
    }
  }
  for (std::string_view map_name : {"labels", "annotations"}) {
    const json::Value* map = json::find(*metadata, map_name);
    if (map == nullptr || map->IsNull()) {
      continue;
    }
    std::string field = "metadata." + std::string(map_name);
    YamlLocator map_at = metadata_at.child(map_name);
    if (!map->IsObject()) {
      add(map_at.position(), field, "must be a mapping of strings");
      continue;
    }
    for (const auto& member : map->GetObject()) {
      if (!member.value.IsString()) {
        std::string key(member.name.GetString(), member.name.GetStringLength());
        add(map_at.child(key).position(), field + "." + key,
            "must be a string (quote the value: an unquoted true, 1 or 1.10 is not a string)");
      }
    }
  }
  return problems;
}

}  // namespace kstate::manifests
