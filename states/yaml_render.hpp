// Renders JSON values as block YAML for diffs and text reports, the way
// `kubectl get -o yaml` shows objects: keys sorted, strings quoted whenever a
// plain scalar would read back as something other than a string.
#pragma once

#include <string>
#include <string_view>

#include "core/json.hpp"

namespace kstate::states {

std::string to_yaml(const json::Value& value);

// True when `text` written as a plain YAML scalar would not read back as the same
// string (numbers, booleans and nulls of YAML 1.1 and 1.2, empty, leading/trailing
// space, indicators). Errs on the side of quoting: this is for display.
bool needs_quotes(std::string_view text);

// Whether a YAML 1.1 or 1.2 reader might take `text` as a number: decimal, octal,
// hex, binary, floats with exponents, underscores, sexagesimal, infinities, NaN.
bool looks_numeric(std::string_view text);

}  // namespace kstate::states
