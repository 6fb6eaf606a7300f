// Go duration parsing: kept strict (no sign, no spaces, a unit on every part) so that
// a typo in the config file is an error instead of a surprising interval.
#include "core/duration.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kstate {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t nanoseconds;
};

// Longest suffixes first so "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 8> units{{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // µs (micro sign)
    {"\xCE\xBCs", 1'000},  // μs (Greek mu), which Go accepts too
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

Error invalid(std::string_view text, std::string_view why) {
  return Error(ErrorKind::invalid_input,
               "invalid duration \"" + std::string(text) + "\": " + std::string(why) + " (examples: 300ms, 5m, 1h30m)");
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text.empty()) {
    return invalid(text, "empty");
  }
  if (text == "0") {
    return Duration::zero();
  }
  long double total = 0;
  std::size_t position = 0;
  while (position < text.size()) {
    const std::size_t number_start = position;
    while (position < text.size() && (std::isdigit(static_cast<unsigned char>(text[position])) != 0)) {
      ++position;
    }
    std::size_t fraction_start = position;
    std::size_t fraction_end = position;
    if (position < text.size() && text[position] == '.') {
      ++position;
      fraction_start = position;
      while (position < text.size() && (std::isdigit(static_cast<unsigned char>(text[position])) != 0)) {
        ++position;
      }
      fraction_end = position;
    }
    const bool has_integer = fraction_start > number_start && text[number_start] != '.';
    const bool has_fraction = fraction_end > fraction_start;
    if (!has_integer && !has_fraction) {
      return invalid(text, "expected a number at \"" + std::string(text.substr(number_start)) + "\"");
    }
    long double value = 0;
    for (std::size_t i = number_start; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0; ++i) {
      value = value * 10 + (text[i] - '0');
    }
    long double scale = 0.1L;
    for (std::size_t i = fraction_start; i < fraction_end; ++i) {
      value += (text[i] - '0') * scale;
      scale /= 10;
    }
    const Unit* matched = nullptr;
    for (const auto& unit : units) {
      if (text.substr(position).starts_with(unit.suffix) &&
          (matched == nullptr || unit.suffix.size() > matched->suffix.size())) {
        matched = &unit;
      }
    }
    if (matched == nullptr) {
      return invalid(text, "missing or unknown unit after the number (use ns, us, ms, s, m, h)");
    }
    position += matched->suffix.size();
    total += value * static_cast<long double>(matched->nanoseconds);
    if (total > static_cast<long double>(std::numeric_limits<std::int64_t>::max())) {
      return invalid(text, "too large");
    }
  }
  return Duration(static_cast<std::int64_t>(std::llround(total)));
}

std::string format_duration(Duration duration) {
  std::int64_t ns = duration.count();
  if (ns == 0) {
    return "0s";
  }
  std::string out;
  if (ns < 0) {
    out = "-";
    ns = -ns;
  }
  if (ns < 1'000'000'000) {
    // Sub-second values read best in the largest unit that divides them.
    if (ns % 1'000'000 == 0) {
      return out + std::to_string(ns / 1'000'000) + "ms";
    }
    if (ns % 1'000 == 0) {
      return out + std::to_string(ns / 1'000) + "us";
    }
    return out + std::to_string(ns) + "ns";
  }
  const std::int64_t hours = ns / 3'600'000'000'000;
  ns %= 3'600'000'000'000;
  const std::int64_t minutes = ns / 60'000'000'000;
  ns %= 60'000'000'000;
  if (hours > 0) {
    out += std::to_string(hours) + "h";
  }
  if (minutes > 0) {
    out += std::to_string(minutes) + "m";
  }
  if (ns > 0) {
    const std::int64_t seconds = ns / 1'000'000'000;
    const std::int64_t rest = ns % 1'000'000'000;
    out += std::to_string(seconds);
    if (rest > 0) {
      std::string fraction = std::to_string(rest);
      fraction.insert(0, 9 - fraction.size(), '0');
      while (!fraction.empty() && fraction.back() == '0') {
        fraction.pop_back();
      }
      out += "." + fraction;
    }
    out += "s";
  }
  return out;
}

}  // namespace kstate
