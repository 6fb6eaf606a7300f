// Which file names are manifests: one rule for the loader's directory walk and the
// daemon's watcher, so the watcher never wakes for a file the loader would not read.
#pragma once

#include <string_view>

namespace kstate::manifests {

// .yaml, .yml or .json: what a directory walk reads (a file named explicitly is read
// whatever its name).
bool has_manifest_extension(std::string_view name);

// Names that are never manifests: dotfiles (ConfigMap volumes' ..data included) and
// editor leftovers (f~, .f.swp, #f#, vim's write probe 4913).
bool is_skipped_name(std::string_view name);

}  // namespace kstate::manifests
