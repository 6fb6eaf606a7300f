// Request bodies in YAML (application/apply-patch+yaml, application/yaml) turned
// into JSON the rest of the emulator works on. JSON input takes a fast path.
#pragma once

#include <string_view>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

Result<json::Document> parse_json_or_yaml(std::string_view text);

}  // namespace kstate::emulator
