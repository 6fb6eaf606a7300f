// resource.Quantity as kube-apiserver reads and writes it: "0.5" is stored as
// "500m", "1000m" as "1", "1024Mi" as "1Gi", while "1073741824" stays as it is
// (a quantity keeps its suffix family: binary SI, decimal SI or decimal
// exponent). The rules are those of k8s.io/apimachinery's ParseQuantity and
// CanonicalizeBytes: values are exact (arbitrary precision here), rounded up
// to nano units, and a string already in canonical form is kept verbatim
// (which is why "+1" and "01" come back unchanged). Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate::emulator {

// Why a quantity does not parse, as kube-apiserver words it.
enum class QuantityError { format, suffix, numeric };
std::string quantity_error_message(QuantityError error);

// The text kube-apiserver stores for a quantity given as `text` (a JSON string's
// content, or a JSON number's text); an error when it is not a quantity.
struct CanonicalQuantity {
  std::optional<std::string> text;
  QuantityError error = QuantityError::format;
};
CanonicalQuantity canonical_quantity(std::string_view text);

}  // namespace kstate::emulator
