// The transport's pure flow control: token bucket timing and retry decisions.
#include "core/retry.hpp"

#include <catch2/catch.hpp>

#include "core/response.hpp"
#include "tests/support/recordings.hpp"

namespace retry_test {

using namespace kstate;
using namespace std::chrono_literals;

namespace {

Request read_request() {
  Request request;
  request.verb = "GET";
  request.idempotent = true;
  return request;
}

Request create_request() {
  Request request;
  request.verb = "POST";
  request.idempotent = false;
  return request;
}

Error http_error(int status, int retry_after = -1) {
  Error error(status == 429 ? ErrorKind::too_many_requests : ErrorKind::server_error, "x");
  error.http_status = status;
  error.retry_after_seconds = retry_after;
  return error;
}

}  // namespace

TEST_CASE("the token bucket allows a burst, then paces at qps", "[retry]") {
  auto start = TokenBucket::Clock::time_point{} + 1h;
  TokenBucket bucket(10.0, 3, start);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  CHECK(bucket.reserve(start) == 0ns);
  // Fourth and fifth requests wait 100 ms and 200 ms at 10 qps.
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 100ms);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve(start)) == 200ms);
  // After a long pause the bucket is full again, but never above the burst.
  auto later = start + 10s;
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) == 0ns);
  CHECK(bucket.reserve(later) > 0ns);
}

TEST_CASE("429 and 503 honour Retry-After for every verb", "[retry]") {
  RetryPolicy policy;
  CHECK(retry_delay(policy, create_request(), http_error(429, 2), true, 0, 0.5) == 2000ms);
  CHECK(retry_delay(policy, read_request(), http_error(503, 1), true, 0, 0.5) == 1000ms);
  // A huge Retry-After is capped.
  CHECK(retry_delay(policy, read_request(), http_error(429, 3600), true, 0, 0.5) == policy.max_retry_after);
  // 429 without Retry-After backs off.
  CHECK(retry_delay(policy, create_request(), http_error(429), true, 0, 0.0) == 100ms);
}

TEST_CASE("a request marked not to be retried gets one attempt, whatever the failure", "[retry]") {
  RetryPolicy policy;
  Request probe = read_request();
  probe.retry = false;
  CHECK_FALSE(retry_delay(policy, probe, Error(ErrorKind::connection, "connection refused"), false, 0, 0.5));
  CHECK_FALSE(retry_delay(policy, probe, http_error(503, 1), true, 0, 0.5));
  CHECK_FALSE(retry_delay(policy, probe, http_error(429, 1), true, 0, 0.5));
  CHECK(retry_delay(policy, read_request(), http_error(503, 1), true, 0, 0.5) == 1000ms);
}

TEST_CASE("5xx and connection failures are retried with jittered exponential backoff for idempotent requests only",
          "[retry]") {
  RetryPolicy policy;
  policy.backoff_base = 100ms;
  policy.backoff_max = 1000ms;
  Error dropped(ErrorKind::connection, "connection reset");
  CHECK(retry_delay(policy, read_request(), dropped, true, 0, 0.0) == 50ms);
  CHECK(retry_delay(policy, read_request(), dropped, true, 0, 0.999) == 99ms);
  CHECK(retry_delay(policy, read_request(), dropped, true, 2, 0.0) == 200ms);
  CHECK(retry_delay(policy, read_request(), dropped, true, 4, 0.0) == 500ms);  // capped at backoff_max
  CHECK(retry_delay(policy, read_request(), http_error(500), true, 0, 0.0) == 50ms);
  // A POST that may have reached the server is never repeated...
  CHECK_FALSE(retry_delay(policy, create_request(), dropped, true, 0, 0.0));
  CHECK_FALSE(retry_delay(policy, create_request(), http_error(500), true, 0, 0.0));
  CHECK_FALSE(retry_delay(policy, create_request(), http_error(503), true, 0, 0.0));
  // ...but one that never left (connect refused) is.
  CHECK(retry_delay(policy, create_request(), dropped, false, 0, 0.0) == 50ms);
  // Client errors are final, and retries stop at the limit.
  Error not_found(ErrorKind::not_found, "x");
  not_found.http_status = 404;
  CHECK_FALSE(retry_delay(policy, read_request(), not_found, true, 0, 0.0));
  CHECK_FALSE(retry_delay(policy, read_request(), dropped, true, policy.max_retries, 0.0));
}

TEST_CASE("server-side apply's 500 for a field the schema does not declare is the request's fault: never retried",
          "[retry]") {
  RetryPolicy policy;
  Request apply;
  apply.verb = "PATCH";
  apply.idempotent = true;  // an apply may be repeated: only the decoding keeps it from it
  auto recorded = kstate::testing::recorded_response("26-apply-unknown-field-strict-500.json");
  Error unknown_field = error_from_response(recorded.status, recorded.body);
  CHECK(unknown_field.http_status == 500);
  CHECK_FALSE(retry_delay(policy, apply, unknown_field, true, 0, 0.0));
  // A 500 that is the server's (InternalError) is still retried.
  CHECK(retry_delay(policy, apply, http_error(500), true, 0, 0.0));
}

}  // namespace retry_test
