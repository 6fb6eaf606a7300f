// Text from outside kstate (API server messages, admission webhooks' denials, watch
// errors) made safe to print on one line of a log or a report: control characters are
// escaped, so a message holding "\n" or an ANSI escape sequence cannot forge a log
// line or repaint a terminal, and its length is capped, so a 20 MB Status message is
// not a 20 MB log line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kstate {

// What one server message may take in logs and reports.
inline constexpr std::size_t max_server_message_bytes = 4096;

// `text` with C0 controls, DEL and the C1 controls (U+0080..U+009F, which some terminals
// obey too) written as \n, \r, \t, \xHH or \u00HH, cut at a character boundary so
// that the result holds at most `max_bytes` bytes, then " ... (N more bytes)" naming
// how much of the input was left out.
std::string printable(std::string_view text, std::size_t max_bytes = max_server_message_bytes);

}  // namespace kstate
