// The API server's reachability as the transport tracks it (core/reachability.hpp):
// which failures say "nobody is there", when the server counts as down, how attempts
// are admitted then (one probe per interval, the others fail fast), and how the retry
// decision caps retries while the server does not answer. Time is passed in.
#include "core/reachability.hpp"

#include <catch2/catch.hpp>

#include "core/retry.hpp"

namespace reachability_test {

using namespace kstate;
using namespace std::chrono_literals;
using Clock = ServerReachability::Clock;

namespace {

Error failure(ErrorKind kind, int http_status = 0) {
  Error error(kind, "failure");
  error.http_status = http_status;
  return error;
}

}  // namespace

TEST_CASE("reachability: which failed attempts say that nobody is there", "[reachability]") {
  struct Row {
    const char* what;
    Error error;
    bool sent;
    bool reused;
    bool unreachable;
  };
  const std::vector<Row> table = {
      {"connect refused", failure(ErrorKind::connection), false, false, true},
      {"TLS handshake failed", failure(ErrorKind::tls), false, false, true},
      {"connect or handshake deadline", failure(ErrorKind::timeout), false, false, true},
      {"no answer within the request deadline", failure(ErrorKind::timeout), true, true, true},
      {"new connection dropped after the request", failure(ErrorKind::connection), true, false, true},
      {"pooled connection the server had closed", failure(ErrorKind::connection), true, true, false},
      {"an HTTP answer (503)", failure(ErrorKind::server_error, 503), true, true, false},
      {"an HTTP answer (504 is a timeout kind)", failure(ErrorKind::timeout, 504), true, false, false},
      {"a response over the size limit", failure(ErrorKind::unsupported), true, false, false},
      {"credentials refused locally", failure(ErrorKind::config), false, false, false},
  };
  for (const auto& row : table) {
    INFO(row.what);
    CHECK(failure_means_unreachable(row.error, row.sent, row.reused) == row.unreachable);
  }
}

TEST_CASE("reachability: states and admissions over a server's life", "[reachability]") {
  const auto t0 = Clock::time_point{} + 1h;
  ServerReachability server(1s);
  CHECK(server.state() == Reachability::unknown);
  CHECK(server.admit(t0) == Admission::send);

  // First contact fails, its one retry too: down.
  server.attempt_failed(t0 + 10s, t0, true, "connect refused");
  CHECK(server.state() == Reachability::not_answering);
  CHECK(server.reason() == "connect refused");
  CHECK(server.since() == t0 + 10s);
  server.gave_up(t0 + 20s, t0, "connect refused");
  CHECK(server.state() == Reachability::down);

  // Down: one probe at a time, at most one per interval; the rest fail fast.
  CHECK(server.admit(t0 + 20s + 500ms) == Admission::fail_fast);
  CHECK(server.admit(t0 + 21s) == Admission::probe);
  CHECK(server.admit(t0 + 21s + 1ms) == Admission::fail_fast);  // the probe is in flight
  CHECK(server.admit(t0 + 23s) == Admission::fail_fast);        // still in flight
  server.attempt_failed(t0 + 24s, t0 + 21s, true, "connect refused again");
  CHECK(server.state() == Reachability::down);
  CHECK(server.reason() == "connect refused again");
  CHECK(server.failed_fast() == 3);
  CHECK(server.admit(t0 + 24s + 500ms) == Admission::probe);  // a second since the last probe started
  server.answered(t0 + 25s);
  CHECK(server.state() == Reachability::answering);
  CHECK(server.reason().empty());
  CHECK(server.admit(t0 + 25s) == Admission::send);
  CHECK(server.failed_fast() == 0);

  // A stale pooled connection says nothing; nor does a timeout of an attempt that
  // started before another request got its answer (a slow LIST among quick GETs).
  server.attempt_failed(t0 + 26s, t0 + 25s, false, "pooled connection closed");
  CHECK(server.state() == Reachability::answering);
  server.attempt_failed(t0 + 60s, t0 + 24s, true, "deadline exceeded");
  CHECK(server.state() == Reachability::answering);
  server.gave_up(t0 + 61s, t0 + 24s, "deadline exceeded");
  CHECK(server.state() == Reachability::answering);

  // Frozen: an attempt started after the last answer times out: not answering at once
  // (the daemon's /readyz says so within one request deadline), down when a request
  // gives up.
  server.attempt_failed(t0 + 95s, t0 + 65s, true, "deadline exceeded");
  CHECK(server.state() == Reachability::not_answering);
  CHECK(server.since() == t0 + 95s);
  CHECK(server.admit(t0 + 95s) == Admission::send);  // not down yet: requests still go
  server.attempt_failed(t0 + 96s, t0 + 66s, true, "deadline exceeded");
  CHECK(server.since() == t0 + 95s);  // since the first failure
  server.gave_up(t0 + 105s, t0 + 65s, "deadline exceeded");
  CHECK(server.state() == Reachability::down);
  CHECK(server.since() == t0 + 95s);
  CHECK(server.admit(t0 + 105s + 10ms) == Admission::fail_fast);
}

TEST_CASE("retry decision: connection failures are retried once while the server does not answer",
          "[reachability][retry]") {
  RetryPolicy policy;  // max_retries 5, retries_while_not_answering 1
  Request get;
  get.verb = "GET";
  get.idempotent = true;
  auto attempts = [&](const Error& error, bool answering) {
    int retries = 0;
    while (retry_delay(policy, get, error, true, retries, 0.0, answering)) {
      ++retries;
    }
    return retries + 1;
  };
  const Error refused = failure(ErrorKind::connection);
  const Error timed_out = failure(ErrorKind::timeout);
  Error throttled = failure(ErrorKind::too_many_requests, 429);
  throttled.retry_after_seconds = 1;
  Error unavailable = failure(ErrorKind::server_error, 503);
  unavailable.retry_after_seconds = 1;
  CHECK(attempts(refused, true) == 6);
  CHECK(attempts(refused, false) == 2);
  CHECK(attempts(timed_out, true) == 6);
  CHECK(attempts(timed_out, false) == 2);
  // An overloaded server answers: 429 and 503 with Retry-After keep their retries.
  CHECK(attempts(throttled, false) == 6);
  CHECK(attempts(unavailable, false) == 6);
  WARN("attempts for a connection failure: " << attempts(refused, true) << " while the server answers, "
                                             << attempts(refused, false) << " while it does not");
}

}  // namespace reachability_test
