// File-name rules of manifests (file_names.hpp).
#include "manifests/file_names.hpp"

namespace kstate::manifests {

bool has_manifest_extension(std::string_view name) {
  return name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json");
}

bool is_skipped_name(std::string_view name) {
  if (name.empty() || name[0] == '.') {
    return true;
  }
  if (name.back() == '~' || name.ends_with(".swp") || name.ends_with(".swo") || name.ends_with(".swx")) {
    return true;
  }
  if (name.size() >= 2 && name.front() == '#' && name.back() == '#') {
    return true;
  }
  return name == "4913";  // vim's write-permission probe
}

}  // namespace kstate::manifests
