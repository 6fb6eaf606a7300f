// Quantity parsing in exact integer arithmetic (see quantity.hpp): the number's digits
// as an integer, scaled by its power of ten and of 1024, divided last, so "0.1" is
// 100 millis, not 100.00000001 rounded up to 101.
#include "inventory/quantity.hpp"

#include <cstdlib>
#include <limits>
#include <string>

#include "core/quantity.hpp"

namespace kstate::inventory {
namespace {

struct Parsed {
  bool negative = false;
  std::uint64_t digits = 0;  // every digit of the number, the decimal point removed
  int power_of_ten = 0;      // value = digits * 10^power_of_ten * 1024^power_of_1024
  int power_of_1024 = 0;
};

// Exponents (2e3) beyond this many digits are refused, as any such value overflows.
constexpr int largest_exponent = 999;

std::optional<Parsed> parse(std::string_view text) {
  auto parts = quantity::split(text);
  if (!parts || std::abs(parts->suffix.exponent) > largest_exponent) {
    return std::nullopt;
  }
  Parsed parsed;
  parsed.negative = parts->negative;
  for (std::string_view digits : {parts->whole, parts->fraction}) {
    for (char c : digits) {
      if (__builtin_mul_overflow(parsed.digits, 10u, &parsed.digits) ||
          __builtin_add_overflow(parsed.digits, static_cast<unsigned>(c - '0'), &parsed.digits)) {
        return std::nullopt;
      }
    }
  }
  parsed.power_of_ten = -static_cast<int>(parts->fraction.size());
  if (parts->suffix.base == 2) {
    parsed.power_of_1024 = parts->suffix.exponent / 10;
  } else {
    parsed.power_of_ten += parts->suffix.exponent;
  }
  return parsed;
}

// digits * 10^power_of_ten * 1024^power_of_1024, rounded towards +infinity.
std::optional<std::int64_t> scaled(Parsed parsed, int extra_power_of_ten) {
  std::uint64_t value = parsed.digits;
  for (int i = 0; i < parsed.power_of_1024; ++i) {
    if (__builtin_mul_overflow(value, 1024u, &value)) {
      return std::nullopt;
    }
  }
  int power = parsed.power_of_ten + extra_power_of_ten;
  bool remainder = false;
  for (; power > 0; --power) {
    if (__builtin_mul_overflow(value, 10u, &value)) {
      return std::nullopt;
    }
  }
  for (; power < 0 && value > 0; ++power) {
    remainder = remainder || value % 10 != 0;
    value /= 10;
  }
  if (!parsed.negative && remainder) {
    ++value;  // rounding up; for a negative value, truncation is rounding up
  }
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  auto result = static_cast<std::int64_t>(value);
  return parsed.negative ? -result : result;
}

}  // namespace

std::optional<std::int64_t> quantity_millis(std::string_view text) {
  auto parsed = parse(text);
  return parsed ? scaled(*parsed, 3) : std::nullopt;
}

std::optional<std::int64_t> quantity_units(std::string_view text) {
  auto parsed = parse(text);
  return parsed ? scaled(*parsed, 0) : std::nullopt;
}

}  // namespace kstate::inventory
