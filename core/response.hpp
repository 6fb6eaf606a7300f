// An HTTP response from the API server and the decoding of non-2xx responses into a
// kstate::Error: the body is read as a Kubernetes `Status` (reason, message,
// details.causes, details.retryAfterSeconds) so callers can classify failures (not
// found, conflict, invalid, forbidden, retryable) without parsing text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace kstate {

struct Response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  // The first header with this (lower-case) name, or "" when absent.
  std::string_view header(std::string_view lower_case_name) const;
  // The texts of every Warning header (parse_warning_header), in the order sent.
  std::vector<std::string> warnings() const;
};

// The texts of the warnings in one Warning header value: RFC 7234's
// `code SP agent SP "quoted text" [SP "date"]`, comma-separated, of which the API
// server sends code 299 only (`299 - "unknown field \"x\""`, recordings 27 and 73).
// As client-go, only code 299 is kept; the text is unquoted but not made printable
// (core/untrusted_text.hpp). A malformed part ends the parse: the texts before it are kept.
std::vector<std::string> parse_warning_header(std::string_view value);

// What one warning may take when shown: they are short sentences (the API server caps
// all of a response's warnings at 4 KB), so a longer one is cut.
inline constexpr std::size_t max_warning_bytes = 512;

// The ErrorKind of an HTTP status code and Status.reason (409 AlreadyExists vs Conflict).
ErrorKind error_kind_of(int http_status, std::string_view reason);

// Decodes a non-2xx response. A body that is not a Status still gives a useful
// message (the status line and the first bytes of the body). `retry_after` is the
// Retry-After header value (seconds; HTTP dates are not sent by the API server).
Error error_from_response(int http_status, std::string_view body, std::string_view retry_after = {});

}  // namespace kstate
