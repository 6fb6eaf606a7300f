// Renders JSON values as block YAML for diffs and text reports, the way
// `kubectl get -o yaml` shows objects: keys sorted, strings quoted whenever a
// plain scalar would read back as something other than a string.
#pragma once

#include <string>

#include "core/json.hpp"

namespace kstate::states {

std::string to_yaml(const json::Value& value);

// True when `text` written as a plain YAML scalar would not read back as the same
// string (numbers, booleans and nulls of YAML 1.1 and 1.2, empty, leading/trailing
// space, indicators). Errs on the side of quoting: this is for display.
bool needs_quotes(std::string_view text);

}  // namespace kstate::states
