// Errors as values (in the style of Boost.MySQL's error_code + diagnostics): every
// fallible operation returns Result<T>, which holds either the value or an Error
// that says what kind of failure it was (so callers can classify: retry, report,
// hold back prune) and, for API server errors, the decoded Kubernetes Status.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kstate {

enum class ErrorKind {
  invalid_input,      // bad manifest, bad flag, bad config: the user must fix something
  config,             // kubeconfig/config file problems
  io,                 // local file system
  connection,         // could not connect, connection dropped
  tls,                // handshake or certificate verification failed
  timeout,            // a deadline fired
  unauthorized,       // 401
  forbidden,          // 403
  not_found,          // 404
  conflict,           // 409 Conflict (stale resourceVersion, apply conflict)
  already_exists,     // 409 AlreadyExists
  gone,               // 410 (watch resourceVersion too old)
  invalid,            // 422 Invalid / 400 BadRequest from the server
  too_many_requests,  // 429
  server_error,       // 5xx
  unsupported,        // a feature the server or kstate does not offer
  internal,           // a bug in kstate
};

const char* to_string(ErrorKind kind);

// One field-level cause from a Kubernetes Status (details.causes[]).
struct StatusCause {
  std::string reason;   // e.g. FieldValueInvalid
  std::string message;  // e.g. "field is immutable"
  std::string field;    // e.g. spec.selector
};

struct Error {
  ErrorKind kind = ErrorKind::internal;
  std::string message;
  // Filled for API server responses (decoded from the Status body).
  int http_status = 0;
  std::string reason;  // Status.reason, e.g. NotFound, Conflict, Invalid
  std::vector<StatusCause> causes;
  int retry_after_seconds = -1;  // from Retry-After or Status.details.retryAfterSeconds
  // A 404 about the path rather than an object: the server serves no such resource
  // there (an unknown group or version, a custom resource whose CRD is not served yet
  // or any more). It answers so with Go's text/plain "404 page not found" (recordings
  // 08 and 60) or a NotFound Status naming no object; a missing object or namespace
  // gets a NotFound Status naming it (recordings 13 and 41).
  bool resource_not_served = false;
  // The server's Warning headers on the failed answer (Response::warnings).
  std::vector<std::string> warnings;

  Error() = default;
  Error(ErrorKind k, std::string msg) : kind(k), message(std::move(msg)) {}

  bool retryable() const {
    return kind == ErrorKind::connection || kind == ErrorKind::timeout || kind == ErrorKind::too_many_requests ||
           kind == ErrorKind::server_error;
  }
  // The server said the object itself does not exist (a NotFound naming it), as opposed
  // to a path it does not serve, which says nothing about the object: only this may be
  // read as "gone" where that leads to forgetting, claiming or deleting something.
  bool object_missing() const { return kind == ErrorKind::not_found && !resource_not_served; }
  // "reason: message" plus causes, the way kubectl prints server errors.
  std::string describe() const;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() {
  return Ok{};
}

}  // namespace kstate
