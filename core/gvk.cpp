// apiVersion parsing for GroupVersionKind.
#include "core/gvk.hpp"

namespace kstate {

GroupVersionKind make_gvk(std::string_view api_version, std::string_view kind) {
  GroupVersionKind gvk;
  auto slash = api_version.find('/');
  if (slash == std::string_view::npos) {
    gvk.version = std::string(api_version);
  } else {
    gvk.group = std::string(api_version.substr(0, slash));
    gvk.version = std::string(api_version.substr(slash + 1));
  }
  gvk.kind = std::string(kind);
  return gvk;
}

}  // namespace kstate
