// Pure pieces of the transport's flow control, unit-tested without a network or a
// sleeping test: the token bucket behind --qps/--burst and the retry decision (which
// failures are retried, after how long).
#pragma once

#include <chrono>
#include <optional>

#include "core/error.hpp"
#include "core/request.hpp"

namespace kstate {

// Token bucket with reservations: every caller takes a token now and is told how long
// to wait for it, so callers are served in order and the long-run rate is `qps` with
// bursts up to `burst`.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double qps, int burst, Clock::time_point now);
  // Reserves one token; returns how long the caller must wait before using it.
  Clock::duration reserve(Clock::time_point now);

 private:
  double qps_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

struct RetryPolicy {
  int max_retries = 5;
  std::chrono::milliseconds backoff_base{200};
  std::chrono::milliseconds backoff_max{10'000};
  std::chrono::milliseconds max_retry_after{60'000};  // a longer Retry-After is capped
  // Connection failures and timeouts while the server is not known to answer (before
  // its first answer, or once it stopped answering: reachability.hpp) are retried this
  // often only, so that a dead server is reported in seconds, not after every retry.
  int retries_while_not_answering = 1;
};

// Whether to retry `request` after `error`, and after how long; nullopt: give up
// (always when `request.retry` is false).
//  - 429, and 503 with Retry-After: the server did not process the request, so any
//    request is retried, after Retry-After (or backoff when it is absent);
//  - connection failures, timeouts and other 5xx (but not one decoded as the request's
//    fault, error_from_response): retried with jittered exponential
//    backoff only when the request is idempotent, or when it never left this process
//    (`request_sent` false: connect or handshake failed); while the server is not
//    known to answer (`server_answering` false), at most retries_while_not_answering
//    times;
//  - everything else (4xx): not retried.
// `random01` in [0,1) picks the jitter: the delay is in [d/2, d) for d = base * 2^retries.
std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, const Request& request,
                                                     const Error& error, bool request_sent, int retries_so_far,
                                                     double random01, bool server_answering = true);

}  // namespace kstate
