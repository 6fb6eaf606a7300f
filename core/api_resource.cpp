// Verb and subresource queries on ApiResource.
#include "core/api_resource.hpp"

#include <algorithm>

namespace kstate {

bool ApiResource::supports(std::string_view verb) const {
  return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

bool ApiResource::has_subresource(std::string_view name) const {
  return std::find(subresources.begin(), subresources.end(), name) != subresources.end();
}

}  // namespace kstate
