// What discovery knows about one resource. The struct itself lives in
// core/api_resource.hpp (request building in core needs it and core must not depend on
// discovery); this header keeps the discovery:: spelling working.
#pragma once

#include "core/api_resource.hpp"

namespace kstate::discovery {

using ApiResource = kstate::ApiResource;

}  // namespace kstate::discovery
