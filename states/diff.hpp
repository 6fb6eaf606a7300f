// Unified diffs of YAML renderings, as `kubectl diff` prints them: `---`/`+++`
// headers naming the object, hunks with three lines of context.
#pragma once

#include <string>

#include "core/json.hpp"

namespace kstate::states {

// Unified diff of two texts (split on newlines). Empty when they are equal.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_label,
                         const std::string& after_label);

// Diff of two objects (either may be Null: create / delete) after normalisation and
// secret masking. `object_name` (e.g. "apps/v1 Deployment ns/web") labels the headers.
std::string object_diff(const json::Value& live, const json::Value& desired, const std::string& object_name);

}  // namespace kstate::states
