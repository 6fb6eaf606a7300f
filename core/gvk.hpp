// Group/version/kind identity of Kubernetes objects, and the apiVersion string
// split ("apps/v1" -> group apps, version v1; "v1" -> core group "").
#pragma once

#include <string>
#include <string_view>

namespace kstate {

struct GroupVersionKind {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "Deployment.apps" / "ConfigMap": the kubectl-style qualified kind.
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
  friend bool operator==(const GroupVersionKind&, const GroupVersionKind&) = default;
  friend auto operator<=>(const GroupVersionKind&, const GroupVersionKind&) = default;
};

// Splits an apiVersion into group and version. "apps/v1" -> {"apps","v1"}; "v1" -> {"","v1"}.
GroupVersionKind make_gvk(std::string_view api_version, std::string_view kind);

}  // namespace kstate
