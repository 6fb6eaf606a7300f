// The label on an object a generateName state created: the hash of the state ID, so
// that a later run of that state (engine.cpp) and the inventory's prune candidates
// (reconcile.cpp) find the object the state made, whose name the server chose.
#pragma once

#include <string_view>

namespace kstate::states {

inline constexpr std::string_view state_id_label = "kstate.io/state-id";

}  // namespace kstate::states
