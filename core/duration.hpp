// Go-style duration strings ("300ms", "5m", "1h30m", "1.5s"), the notation operators
// know from kubelet and client-go flags, so config values and state arguments (a
// wait's sleep and timeout) read the same everywhere.
// Pure parsing and formatting; no clock involved.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate {

using Duration = std::chrono::nanoseconds;

// Parses a non-negative Go duration: one or more <number><unit> parts, units ns, us
// (or µs), ms, s, m, h; "0" alone needs no unit. Errors say what was wrong.
Result<Duration> parse_duration(std::string_view text);

// The shortest Go-style spelling of a duration ("1h30m", "300ms", "0s").
std::string format_duration(Duration duration);

}  // namespace kstate
