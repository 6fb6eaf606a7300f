// GVK -> ApiResource mapping over discovered resources: exact GVK look-up, the
// preferred version of a group/kind, and kubectl-style name look-up (plural,
// singular, kind, short name, optionally qualified with ".group" or ".version.group").
#pragma once

#include <string_view>
#include <vector>

#include "core/api_resource.hpp"
#include "core/gvk.hpp"

namespace kstate::discovery {

class ResourceMapper {
 public:
  ResourceMapper() = default;
  explicit ResourceMapper(std::vector<ApiResource> resources);

  const std::vector<ApiResource>& resources() const { return resources_; }
  // The resource serving exactly this GVK; nullptr when the server does not offer it.
  const ApiResource* find(const GroupVersionKind& gvk) const;
  // The preferred version's resource for a group and kind (any version if none preferred).
  const ApiResource* find_preferred(std::string_view group, std::string_view kind) const;
  // kubectl-style: "deploy", "deployments", "deployment", "Deployment", "deployments.apps",
  // "deployments.v1.apps". Preferred versions first.
  std::vector<const ApiResource*> lookup(std::string_view name) const;

 private:
  std::vector<ApiResource> resources_;
};

}  // namespace kstate::discovery
