// Names for error kinds and the kubectl-like rendering of an Error.
#include "core/error.hpp"

namespace kstate {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_input:
      return "invalid input";
    case ErrorKind::config:
      return "configuration error";
    case ErrorKind::io:
      return "I/O error";
    case ErrorKind::connection:
      return "connection error";
    case ErrorKind::tls:
      return "TLS error";
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::unauthorized:
      return "Unauthorized";
    case ErrorKind::forbidden:
      return "Forbidden";
    case ErrorKind::not_found:
      return "NotFound";
    case ErrorKind::conflict:
      return "Conflict";
    case ErrorKind::already_exists:
      return "AlreadyExists";
    case ErrorKind::gone:
      return "Gone";
    case ErrorKind::invalid:
      return "Invalid";
    case ErrorKind::too_many_requests:
      return "TooManyRequests";
    case ErrorKind::server_error:
      return "InternalError";
    case ErrorKind::unsupported:
      return "unsupported";
    case ErrorKind::internal:
      return "internal error";
  }
  return "error";
}

std::string Error::describe() const {
  std::string out;
  if (!reason.empty()) {
    out = reason + ": ";
  }
  out += message;
  for (const auto& cause : causes) {
    out += "\n  * ";
    if (!cause.field.empty()) {
      out += cause.field + ": ";
    }
    out += cause.message;
  }
  return out;
}

}  // namespace kstate
