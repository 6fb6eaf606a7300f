// Kubernetes resource quantities ("500m", "1Gi", cpu: 0.5) as a kube-apiserver stores
// them. Built-in kinds keep quantities in Go's resource.Quantity, which re-serialises
// what it parsed: `cpu: 0.5` is stored "500m", "1000m" is stored "1", "1024Mi" is
// stored "1Gi" (recordings 31-33). A manifest that says 0.5 is therefore unchanged
// when the live object says "500m", and kstate must know that without asking the
// server, or every re-apply writes. The rules follow apimachinery's ParseQuantity and
// CanonicalizeBytes: a string already in canonical form is kept as written, anything
// else is rebuilt from its value (decimal or binary suffix family kept). Whatever these
// rules do not cover exactly (values beyond int64, exotic exponents) has no canonical
// form here, and callers then compare the text as written, which can only cause a
// write, never hide one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"

namespace kstate::states {

// The text the API server stores for the quantity `text`; nullopt when it is not a
// quantity, or one whose stored form these rules do not know for certain.
std::optional<std::string> canonical_quantity(std::string_view text);

// The same for a manifest value: a string, or a number (as the API server reads a
// JSON number: integral values as integers). nullopt for anything else.
std::optional<std::string> canonical_quantity(const json::Value& value);

}  // namespace kstate::states
