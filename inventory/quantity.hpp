// Kubernetes resource quantities ("4", "3800m", "16331016Ki", "1.5G", "2e3") as numbers,
// so that `kstate inventory -o json` gives tools CPU in millicores and memory in bytes
// next to the strings the API returns. Pure; rounding up as the API server's
// Quantity.MilliValue() and Value() do.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kstate::inventory {

// The quantity times 1000, rounded up ("3800m" -> 3800, "4" -> 4000); nullopt when
// the text is not a quantity or the result does not fit in 64 bits.
std::optional<std::int64_t> quantity_millis(std::string_view text);
// The quantity rounded up to a whole unit ("16Ki" -> 16384, "100m" -> 1).
std::optional<std::int64_t> quantity_units(std::string_view text);

}  // namespace kstate::inventory
