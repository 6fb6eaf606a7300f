// ApiResources of built-in kinds, as discovery reports them, for unit tests that
// build requests or script a transport without reading discovery.
#pragma once

#include "core/api_resource.hpp"

namespace kstate::testing {

// v1 configmaps, namespaced.
inline ApiResource configmaps_resource() {
  ApiResource resource;
  resource.version = "v1";
  resource.kind = "ConfigMap";
  resource.plural = "configmaps";
  resource.namespaced = true;
  return resource;
}

// v1 namespaces, cluster-scoped.
inline ApiResource namespaces_resource() {
  ApiResource resource;
  resource.version = "v1";
  resource.kind = "Namespace";
  resource.plural = "namespaces";
  resource.namespaced = false;
  return resource;
}

// v1 serviceaccounts, namespaced.
inline ApiResource serviceaccounts_resource() {
  ApiResource resource = configmaps_resource();
  resource.kind = "ServiceAccount";
  resource.plural = "serviceaccounts";
  return resource;
}

}  // namespace kstate::testing
