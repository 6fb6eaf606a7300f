// Canonical forms of resource quantities (quantity.hpp), following apimachinery's
// ParseQuantity (a fast path that keeps a string already in canonical form, a slow
// path rounding up to nano units) and CanonicalizeBytes (mantissa and a suffix of the
// same family). Magnitudes are held in 128 bits: anything larger has no answer here.
#include "states/quantity.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>

#include "core/quantity.hpp"

namespace kstate::states {
namespace {

// (__extension__: GCC's 128-bit integer under -Wpedantic)
__extension__ typedef unsigned __int128 Magnitude;

using quantity::Format;
using quantity::Suffix;

// Exponents beyond these are left to the server (no canonical form here).
constexpr int largest_exponent = 40;
constexpr Magnitude max_int64 = (Magnitude{1} << 63) - 1;
constexpr Magnitude max_magnitude = ~Magnitude{0} >> 2;

std::optional<Magnitude> to_magnitude(std::string_view digits) {
  Magnitude value = 0;
  for (char c : digits) {
    if (value > max_magnitude / 10) {
      return std::nullopt;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value;
}

std::optional<Magnitude> power_of_ten(int exponent) {
  Magnitude value = 1;
  for (int i = 0; i < exponent; ++i) {
    if (value > max_magnitude / 10) {
      return std::nullopt;
    }
    value *= 10;
  }
  return value;
}

std::string to_text(Magnitude value) {
  if (value == 0) {
    return "0";
  }
  std::string text;
  while (value > 0) {
    text.insert(text.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  }
  return text;
}

// The canonical text of magnitude * 10^exponent (not zero) in `format`.
std::optional<std::string> canonical_text(bool negative, Magnitude magnitude, int exponent, Format format) {
  const std::string sign = negative ? "-" : "";
  if (format == Format::binary_si) {
    // Below 1024, or not a whole number: shown as DecimalSI (no rounding).
    std::optional<Magnitude> whole;
    if (exponent >= 0) {
      auto scale = power_of_ten(exponent);
      if (scale && magnitude <= max_magnitude / *scale) {
        whole = magnitude * *scale;
      }
    } else if (auto scale = power_of_ten(-exponent); scale && magnitude % *scale == 0) {
      whole = magnitude / *scale;
    }
    if (exponent >= 0 && !whole) {
      return std::nullopt;
    }
    if (whole && *whole >= 1024) {
      Magnitude amount = *whole;
      std::size_t power = 0;
      while (amount % 1024 == 0 && power + 1 < std::size(quantity::binary_suffixes)) {
        amount /= 1024;
        ++power;
      }
      if (amount % 1024 == 0) {
        return std::nullopt;
      }
      return sign + to_text(amount) + std::string(quantity::binary_suffixes[power].suffix);
    }
    format = Format::decimal_si;
  }
  while (magnitude % 10 == 0) {
    magnitude /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    if (magnitude > max_magnitude / 10) {
      return std::nullopt;
    }
    magnitude *= 10;
    --exponent;
  }
  if (format == Format::decimal_exponent) {
    return sign + to_text(magnitude) + (exponent == 0 ? "" : "e" + std::to_string(exponent));
  }
  for (const auto& [text, suffix_exponent] : quantity::decimal_suffixes) {
    if (suffix_exponent == exponent) {
      return sign + to_text(magnitude) + std::string(text);
    }
  }
  return std::nullopt;  // beyond E or below n: the server's own answer is odd there
}

}  // namespace

std::optional<std::string> canonical_quantity(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  if (text == "0") {
    return std::string(text);
  }
  auto parts = quantity::split(text);
  if (!parts ||
      (parts->suffix.format == Format::decimal_exponent && std::abs(parts->suffix.exponent) > largest_exponent)) {
    return std::nullopt;
  }
  const bool negative = parts->negative;
  const std::string num = parts->whole.empty() ? std::string("0") : std::string(parts->whole);
  const std::string denom(parts->fraction);
  const Suffix* suffix = &parts->suffix;
  const std::string shifted = num + denom;
  auto magnitude = to_magnitude(shifted);
  if (!magnitude || shifted.size() > 36) {
    return std::nullopt;
  }

  // The fast path, which keeps a string already in canonical form as it is.
  int precision = 0;
  int scale = 0;
  int binary_shift = 0;
  if (suffix->format == Format::binary_si) {
    if (denom.empty()) {
      binary_shift = suffix->exponent;
      precision =
          15 - static_cast<int>(num.size()) - static_cast<int>(static_cast<float>(suffix->exponent) * 3 / 10) - 1;
    } else {
      precision = -1;
    }
  } else {
    scale = suffix->exponent;
    precision = 18 - static_cast<int>(num.size() + denom.size());
  }
  if (precision >= 0) {
    scale -= static_cast<int>(denom.size());
    if (scale >= -9 && *magnitude <= max_int64 && *magnitude <= (max_int64 >> binary_shift)) {
      const bool canonical_as_written =
          suffix->format == Format::binary_si
              ? (*magnitude & 7) != 0
              : scale % 3 == 0 && !(shifted.size() >= 3 && shifted.compare(shifted.size() - 3, 3, "000") == 0) &&
                    shifted[0] != '0';
      if (canonical_as_written) {
        return std::string(text);
      }
    }
  }

  // The value: magnitude * 10^exponent (binary suffixes multiplied in).
  int exponent = -static_cast<int>(denom.size());
  Magnitude amount = *magnitude;
  if (suffix->base == 10) {
    exponent += suffix->exponent;
  } else {
    if (amount > (max_magnitude >> suffix->exponent)) {
      return std::nullopt;
    }
    amount <<= suffix->exponent;
  }
  if (amount == 0) {
    return std::string("0");
  }
  // Rounded up to nano units (away from zero).
  if (exponent < -9) {
    auto scale_down = power_of_ten(-9 - exponent);
    if (!scale_down) {
      return std::nullopt;
    }
    const bool inexact = amount % *scale_down != 0;
    amount = amount / *scale_down + (inexact ? 1 : 0);
    exponent = -9;
  }
  Format format = suffix->format;
  if (format == Format::binary_si) {
    // Capped at the largest int64 by the server: not followed here.
    auto whole_limit = power_of_ten(std::max(0, -exponent));
    if (!whole_limit || exponent > 0 || amount / *whole_limit > max_int64) {
      return std::nullopt;
    }
    if (amount < *whole_limit) {
      format = Format::decimal_si;  // between 0 and 1
    }
  }
  return canonical_text(negative, amount, exponent, format);
}

std::optional<std::string> canonical_quantity(const json::Value& value) {
  if (value.IsString()) {
    return canonical_quantity(std::string_view(value.GetString(), value.GetStringLength()));
  }
  if (value.IsInt64()) {
    return canonical_quantity(std::to_string(value.GetInt64()));
  }
  if (value.IsUint64()) {
    return canonical_quantity(std::to_string(value.GetUint64()));
  }
  if (value.IsDouble()) {
    const double number = value.GetDouble();
    // The API server reads integral JSON numbers as integers, others in Go's shortest
    // form, which is what json::dump writes too unless it needs an exponent.
    if (std::isfinite(number) && std::trunc(number) == number && std::fabs(number) < 9.2e18) {
      return canonical_quantity(std::to_string(static_cast<std::int64_t>(number)));
    }
    std::string text = json::dump(value);
    if (text.find_first_of("eE") != std::string::npos) {
      return std::nullopt;
    }
    return canonical_quantity(text);
  }
  return std::nullopt;
}

}  // namespace kstate::states
