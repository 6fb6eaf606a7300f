// Text kstate did not write itself (API server messages, Warning headers, admission
// webhooks' words) made safe to put on one log line or into a report: a newline or an
// ANSI escape in it must not forge a log line or repaint a terminal, and a megabyte
// of it must not become one line. One helper, used wherever such text is shown.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kstate {

// Warning texts are short sentences; the API server itself keeps each under 4 KB.
inline constexpr std::size_t max_warning_bytes = 512;

// `text` with control characters escaped (\n, \r, \t, \e and other C0/C1 controls and
// DEL as \n, \r, \t, \x1b, \u0085 ...), bytes that are not UTF-8 as \xNN, and cut
// after `max_bytes` bytes of input at a character boundary, saying how much was left
// out. Printable text, UTF-8 included, passes unchanged.
std::string printable(std::string_view text, std::size_t max_bytes);

}  // namespace kstate
