// Quantity parsing in exact integer arithmetic (see quantity.hpp): the number's digits
// as an integer, scaled by its power of ten and of 1024, divided last, so "0.1" is
// 100 millis, not 100.00000001 rounded up to 101.
#include "inventory/quantity.hpp"

#include <limits>
#include <string>

namespace kstate::inventory {
namespace {

struct Parsed {
  bool negative = false;
  std::uint64_t digits = 0;  // every digit of the number, the decimal point removed
  int power_of_ten = 0;      // value = digits * 10^power_of_ten * 1024^power_of_1024
  int power_of_1024 = 0;
};

std::optional<Parsed> parse(std::string_view text) {
  Parsed parsed;
  std::size_t at = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    parsed.negative = text[at] == '-';
    ++at;
  }
  bool any_digit = false;
  bool after_point = false;
  for (; at < text.size(); ++at) {
    char c = text[at];
    if (c == '.' && !after_point) {
      after_point = true;
      continue;
    }
    if (c < '0' || c > '9') {
      break;
    }
    any_digit = true;
    if (__builtin_mul_overflow(parsed.digits, 10u, &parsed.digits) ||
        __builtin_add_overflow(parsed.digits, static_cast<unsigned>(c - '0'), &parsed.digits)) {
      return std::nullopt;
    }
    if (after_point) {
      --parsed.power_of_ten;
    }
  }
  if (!any_digit) {
    return std::nullopt;
  }
  std::string_view suffix = text.substr(at);
  static constexpr std::string_view binary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (int i = 0; i < 6; ++i) {
    if (suffix == binary[i]) {
      parsed.power_of_1024 = i + 1;
      return parsed;
    }
  }
  if ((suffix.size() > 1) && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view exponent = suffix.substr(1);
    bool negative_exponent = !exponent.empty() && exponent[0] == '-';
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      exponent.remove_prefix(1);
    }
    if (exponent.empty() || exponent.size() > 3) {
      return std::nullopt;
    }
    int value = 0;
    for (char c : exponent) {
      if (c < '0' || c > '9') {
        return std::nullopt;
      }
      value = value * 10 + (c - '0');
    }
    parsed.power_of_ten += negative_exponent ? -value : value;
    return parsed;
  }
  static constexpr std::pair<std::string_view, int> decimal[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
                                                                 {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  for (const auto& [name, power] : decimal) {
    if (suffix == name) {
      parsed.power_of_ten += power;
      return parsed;
    }
  }
  return std::nullopt;
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
