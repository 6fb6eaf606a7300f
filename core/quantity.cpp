// parseQuantityString's split of a quantity into sign, digits and suffix (quantity.hpp).
#include "core/quantity.hpp"

#include <charconv>

namespace kstate::quantity {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<Suffix> interpret_suffix(std::string_view suffix) {
  for (const auto& [text, exponent] : decimal_suffixes) {
    if (suffix == text) {
      return Suffix{10, exponent, Format::decimal_si};
    }
  }
  for (const auto& [text, exponent] : binary_suffixes) {
    if (!text.empty() && suffix == text) {
      return Suffix{2, exponent, Format::binary_si};
    }
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view digits = suffix.substr(1);
    if (digits[0] == '+') {
      digits.remove_prefix(1);  // strconv.ParseInt takes a '+', from_chars does not
    }
    int exponent = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
      return std::nullopt;
    }
    return Suffix{10, exponent, Format::decimal_exponent};
  }
  return std::nullopt;
}

std::optional<Parts> split(std::string_view text) {
  Parts parts;
  std::size_t position = 0;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    parts.negative = text[0] == '-';
    ++position;
  }
  const std::size_t digits_start = position;
  while (position < text.size() && text[position] == '0') {
    ++position;
  }
  const std::size_t whole_start = position;
  while (position < text.size() && is_digit(text[position])) {
    ++position;
  }
  parts.whole = text.substr(whole_start, position - whole_start);
  const bool any_whole_digit = position > digits_start;
  if (position < text.size() && text[position] == '.') {
    ++position;
    const std::size_t fraction_start = position;
    while (position < text.size() && is_digit(text[position])) {
      ++position;
    }
    parts.fraction = text.substr(fraction_start, position - fraction_start);
  }
  if (!any_whole_digit && parts.fraction.empty()) {
    return std::nullopt;  // no digits at all ("", "-", ".", "Gi")
  }
  auto suffix = interpret_suffix(text.substr(position));
  if (!suffix) {
    return std::nullopt;
  }
  parts.suffix = *suffix;
  return parts;
}

}  // namespace kstate::quantity
