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

}  // namespace kstate::testing
