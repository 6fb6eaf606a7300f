// Checks a Kubernetes object is well-formed before anything is sent: apiVersion, kind,
// metadata.name (or generateName) and namespace, using the API server's own name rules
// so that a typo is reported with its file:line instead of as a 422 mid-reconcile.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "manifests/yaml_to_json.hpp"

namespace kstate::manifests {

struct ObjectProblem {
  TextPosition position;  // of the offending value (or of the mapping lacking it)
  std::string field;      // "apiVersion", "kind", "metadata.name", "metadata.namespace", ...
  std::string message;    // starts with the field: "metadata.name \"Foo\": ..."
};

// Name rules by kind, as the API server applies them: Namespace names are DNS-1123
// labels, Service names DNS-1035 labels, RBAC kinds (Role, ClusterRole, RoleBinding,
// ClusterRoleBinding) path segments ("system:controller:x" is fine), everything else
// DNS-1123 subdomains. Also: annotation and label values must be strings (an unquoted
// `true` is a boolean the server rejects).
std::vector<ObjectProblem> validate_object(const json::Value& object, const YamlLocator& at);

// Empty when valid, else the reason (Kubernetes' wording).
std::string check_dns1123_subdomain(std::string_view value);
std::string check_dns1123_label(std::string_view value);
std::string check_dns1035_label(std::string_view value);

}  // namespace kstate::manifests
