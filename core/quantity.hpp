// The grammar of a Kubernetes resource quantity ("500m", "1.5Gi", "-2e3"), read once
// for everything that needs a quantity's parts: states/quantity (the form the API
// server stores, so re-applies do not write) and inventory/quantity (millicores and
// bytes for `kstate inventory`). It follows apimachinery's parseQuantityString: an
// optional sign, digits with at most one '.', then a suffix (decimal SI n u m "" k M
// G T P E, binary SI Ki..Ei, or an exponent e<int>/E<int>). Pure; what a quantity's
// value is, and how it is rounded, is left to the callers.
#pragma once

#include <optional>
#include <string_view>

namespace kstate::quantity {

enum class Format { decimal_si, binary_si, decimal_exponent };

// The suffix as a power: value = number * base^exponent (base 2 for Ki..Ei).
struct Suffix {
  int base = 10;
  int exponent = 0;
  Format format = Format::decimal_si;
};

struct Parts {
  bool negative = false;
  std::string_view whole;     // the digits before '.', leading zeros removed (may be empty)
  std::string_view fraction;  // the digits after '.' (may be empty)
  Suffix suffix;
};

// The parts of `text`; nullopt when it is not a quantity (no digits, an unknown suffix).
std::optional<Parts> split(std::string_view text);

// What a suffix means; nullopt when it is none of the above.
std::optional<Suffix> interpret_suffix(std::string_view suffix);

// The decimal SI suffixes with their powers of ten, "n" (-9) to "E" (18), and the
// binary ones with their powers of two, Ki (10) to Ei (60).
struct NamedPower {
  std::string_view suffix;
  int exponent;
};
inline constexpr NamedPower decimal_suffixes[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
                                                  {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
inline constexpr NamedPower binary_suffixes[] = {{"", 0},    {"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                 {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};

}  // namespace kstate::quantity
