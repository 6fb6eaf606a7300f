// Quantity parsing and canonical printing (see quantity.hpp). Values are kept as
// a decimal digit string times a power of ten, so that binary suffixes (up to
// 2^60), long fractions and huge numbers are all exact without a big-number
// library.
#include "tests/emulator/quantity.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>

namespace kstate::emulator {

namespace {

// A non-negative decimal: digits (no leading zeros, "0" for zero) x 10^exponent.
struct Decimal {
  std::string digits = "0";
  long exponent = 0;
  bool zero() const { return digits == "0"; }
};

std::string strip_leading_zeros(std::string digits) {
  auto first = digits.find_first_not_of('0');
  return first == std::string::npos ? "0" : digits.substr(first);
}

std::string times_small(const std::string& digits, int factor) {
  std::string out(digits.size(), '0');
  int carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    int value = (digits[i] - '0') * factor + carry;
    out[i] = static_cast<char>('0' + value % 10);
    carry = value / 10;
  }
  while (carry > 0) {
    out.insert(out.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
  return strip_leading_zeros(out);
}

// digits / divisor when exact.
std::optional<std::string> divide_exactly(const std::string& digits, int divisor) {
  std::string out;
  long remainder = 0;
  for (char c : digits) {
    remainder = remainder * 10 + (c - '0');
    out += static_cast<char>('0' + remainder / divisor);
    remainder %= divisor;
  }
  if (remainder != 0) {
    return std::nullopt;
  }
  return strip_leading_zeros(out);
}

// Compares a decimal integer (no exponent) with a small number.
bool less_than(const std::string& digits, long limit) {
  auto text = std::to_string(limit);
  return digits.size() != text.size() ? digits.size() < text.size() : digits < text;
}

// Moves trailing zeros of the digits into the exponent.
void normalize(Decimal& value) {
  value.digits = strip_leading_zeros(value.digits);
  if (value.zero()) {
    value.exponent = 0;
    return;
  }
  while (value.digits.size() > 1 && value.digits.back() == '0') {
    value.digits.pop_back();
    ++value.exponent;
  }
}

// The value as an integer string when it has no fractional part.
std::optional<std::string> as_integer(const Decimal& value) {
  if (value.exponent < 0) {
    return std::nullopt;
  }
  return value.zero() ? "0" : value.digits + std::string(static_cast<size_t>(value.exponent), '0');
}

constexpr long kNanoExponent = -9;

// Rounds away from zero to whole nano units, as ParseQuantity does ("if you want some
// resources, you should get some resources").
void round_up_to_nano(Decimal& value) {
  if (value.zero() || value.exponent >= kNanoExponent) {
    return;
  }
  auto dropped = static_cast<size_t>(kNanoExponent - value.exponent);
  bool remainder = false;
  if (dropped >= value.digits.size()) {
    remainder = true;
    value.digits = "0";
  } else {
    remainder = value.digits.find_first_not_of('0', value.digits.size() - dropped) != std::string::npos;
    value.digits.resize(value.digits.size() - dropped);
  }
  value.exponent = kNanoExponent;
  if (remainder) {
    // + 1 nano
    std::string digits = value.digits;
    int carry = 1;
    for (size_t i = digits.size(); i-- > 0 && carry > 0;) {
      int sum = (digits[i] - '0') + carry;
      digits[i] = static_cast<char>('0' + sum % 10);
      carry = sum / 10;
    }
    if (carry > 0) {
      digits.insert(digits.begin(), '1');
    }
    value.digits = strip_leading_zeros(digits);
  }
}

enum class Format { decimal_si, binary_si, decimal_exponent };

struct Suffix {
  std::string_view text;
  int base;  // 10 or 2
  int exponent;
};

constexpr std::array<Suffix, 16> kSuffixes = {{{"n", 10, -9},
                                               {"u", 10, -6},
                                               {"m", 10, -3},
                                               {"", 10, 0},
                                               {"k", 10, 3},
                                               {"M", 10, 6},
                                               {"G", 10, 9},
                                               {"T", 10, 12},
                                               {"P", 10, 15},
                                               {"E", 10, 18},
                                               {"Ki", 2, 10},
                                               {"Mi", 2, 20},
                                               {"Gi", 2, 30},
                                               {"Ti", 2, 40},
                                               {"Pi", 2, 50},
                                               {"Ei", 2, 60}}};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// parseQuantityString: sign, numerator (leading zeros dropped), denominator, suffix.
struct Pieces {
  bool positive = true;
  std::string numerator;
  std::string denominator;
  std::string suffix;
};

std::optional<Pieces> split(std::string_view text) {
  Pieces pieces;
  size_t pos = 0;
  const size_t end = text.size();
  if (pos < end && (text[0] == '-' || text[0] == '+')) {
    pieces.positive = text[0] == '+';
    ++pos;
  }
  while (pos < end && text[pos] == '0') {
    ++pos;
  }
  if (pos >= end) {
    pieces.numerator = "0";
    return pieces;
  }
  size_t start = pos;
  while (pos < end && is_digit(text[pos])) {
    ++pos;
  }
  pieces.numerator = std::string(text.substr(start, pos - start));
  if (pieces.numerator.empty()) {
    pieces.numerator = "0";
  }
  if (pos < end && text[pos] == '.') {
    ++pos;
    start = pos;
    while (pos < end && is_digit(text[pos])) {
      ++pos;
    }
    pieces.denominator = std::string(text.substr(start, pos - start));
  }
  const size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(text[pos]) != std::string_view::npos) {
    ++pos;
  }
  if (pos < end && (text[pos] == '-' || text[pos] == '+')) {
    ++pos;
  }
  while (pos < end && is_digit(text[pos])) {
    ++pos;
  }
  if (pos != end) {
    return std::nullopt;
  }
  pieces.suffix = std::string(text.substr(suffix_start));
  return pieces;
}

struct Interpretation {
  int base = 10;
  long exponent = 0;
  Format format = Format::decimal_si;
};

std::optional<Interpretation> interpret(std::string_view suffix) {
  for (const auto& known : kSuffixes) {
    if (known.text == suffix) {
      return Interpretation{known.base, known.exponent, known.base == 2 ? Format::binary_si : Format::decimal_si};
    }
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    long exponent = 0;
    auto digits = suffix.substr(1);
    auto [end, error] =
        std::from_chars(digits.data() + (digits[0] == '+' ? 1 : 0), digits.data() + digits.size(), exponent);
    if (error != std::errc() || end != digits.data() + digits.size()) {
      return std::nullopt;
    }
    return Interpretation{10, exponent, Format::decimal_exponent};
  }
  return std::nullopt;
}

// Whether ParseQuantity keeps the input string as the quantity's printed form (its
// fast path: the number fits an int64 and already looks canonical).
bool kept_verbatim(const Pieces& pieces, const Interpretation& meaning) {
  const std::string shifted = pieces.numerator + pieces.denominator;
  if (meaning.format == Format::binary_si) {
    if (!pieces.denominator.empty() || meaning.exponent < 0) {
      return false;
    }
    // precision = 15 - digits - exponent*3/10 - 1 must stay non-negative
    const long precision = 15 - static_cast<long>(pieces.numerator.size()) - (meaning.exponent * 3 / 10) - 1;
    if (precision < 0) {
      return false;
    }
    long value = 0;
    std::from_chars(shifted.data(), shifted.data() + shifted.size(), value);
    return (value & 0x07) != 0;
  }
  if (18 - static_cast<long>(shifted.size()) < 0) {
    return false;
  }
  const long scale = meaning.exponent - static_cast<long>(pieces.denominator.size());
  if (scale < kNanoExponent) {
    return false;
  }
  return scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
}

std::string decimal_text(Decimal value, bool positive, Format format) {
  normalize(value);
  if (value.zero()) {
    return "0";
  }
  // The exponent goes down to a multiple of three (the mantissa grows).
  while (value.exponent % 3 != 0) {
    value.digits += '0';
    --value.exponent;
  }
  std::string suffix;
  if (format == Format::decimal_exponent) {
    suffix = value.exponent == 0 ? "" : "e" + std::to_string(value.exponent);
  } else {
    while (value.exponent > 18) {  // beyond "E": no suffix exists, so the mantissa grows
      value.digits += "000";
      value.exponent -= 3;
    }
    for (const auto& known : kSuffixes) {
      if (known.base == 10 && known.exponent == value.exponent) {
        suffix = std::string(known.text);
      }
    }
  }
  return (positive ? "" : "-") + value.digits + suffix;
}

}  // namespace

std::string quantity_error_message(QuantityError error) {
  switch (error) {
    case QuantityError::format:
      return "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    case QuantityError::suffix:
      return "unable to parse quantity's suffix";
    case QuantityError::numeric:
      return "unable to parse quantity's numeric part";
  }
  return "invalid quantity";
}

CanonicalQuantity canonical_quantity(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n')) {
    text.remove_suffix(1);
  }
  if (text.empty()) {
    return {std::nullopt, QuantityError::format};
  }
  auto pieces = split(text);
  if (!pieces) {
    return {std::nullopt, QuantityError::format};
  }
  auto meaning = interpret(pieces->suffix);
  if (!meaning) {
    return {std::nullopt, QuantityError::suffix};
  }
  if (kept_verbatim(*pieces, *meaning)) {
    return {std::string(text), QuantityError::format};
  }
  Decimal value{strip_leading_zeros(pieces->numerator + pieces->denominator),
                -static_cast<long>(pieces->denominator.size())};
  Format format = meaning->format;
  if (meaning->base == 10) {
    value.exponent += meaning->exponent;
  } else {
    for (long i = 0; i < meaning->exponent; ++i) {
      value.digits = times_small(value.digits, 2);
    }
  }
  normalize(value);
  round_up_to_nano(value);
  normalize(value);
  if (value.zero()) {
    return {std::string("0"), QuantityError::format};
  }
  if (format == Format::binary_si) {
    // Between -1024 and 1024, or with a fraction: printed as decimal SI.
    auto integer = as_integer(value);
    if (!integer || less_than(*integer, 1024)) {
      format = Format::decimal_si;
    } else {
      std::string mantissa = *integer;
      size_t power = 0;
      while (power < 6) {
        auto divided = divide_exactly(mantissa, 1024);
        if (!divided) {
          break;
        }
        mantissa = *divided;
        ++power;
      }
      static constexpr std::array<std::string_view, 7> binary = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
      return {(pieces->positive ? "" : "-") + mantissa + std::string(binary[power]), QuantityError::format};
    }
  }
  return {decimal_text(value, pieces->positive, format), QuantityError::format};
}

}  // namespace kstate::emulator
