// Token bucket and retry decisions (see retry.hpp).
#include "core/retry.hpp"

#include <algorithm>
#include <cmath>

namespace kstate {

TokenBucket::TokenBucket(double qps, int burst, Clock::time_point now)
    : qps_(qps > 0 ? qps : 1e9), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(now) {}

TokenBucket::Clock::duration TokenBucket::reserve(Clock::time_point now) {
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1.0;
  if (tokens_ >= 0) {
    return Clock::duration::zero();
  }
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

namespace {

std::chrono::milliseconds backoff(const RetryPolicy& policy, int retries_so_far, double random01) {
  double full = static_cast<double>(policy.backoff_base.count()) * std::pow(2.0, std::min(retries_so_far, 30));
  full = std::min(full, static_cast<double>(policy.backoff_max.count()));
  double jittered = full * (0.5 + 0.5 * std::clamp(random01, 0.0, 1.0));
  return std::chrono::milliseconds(static_cast<std::int64_t>(jittered));
}

}  // namespace

std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, const Request& request,
                                                     const Error& error, bool request_sent, int retries_so_far,
                                                     double random01, bool server_answering) {
  if (!request.retry || retries_so_far >= policy.max_retries) {
    return std::nullopt;
  }
  auto retry_after = [&]() -> std::chrono::milliseconds {
    return std::min(std::chrono::milliseconds(std::int64_t{error.retry_after_seconds} * 1000), policy.max_retry_after);
  };
  if (error.http_status == 429 || (error.http_status == 503 && error.retry_after_seconds >= 0)) {
    return error.retry_after_seconds >= 0 ? retry_after() : backoff(policy, retries_so_far, random01);
  }
  bool transport_failure =
      error.http_status == 0 && (error.kind == ErrorKind::connection || error.kind == ErrorKind::timeout);
  // (a 5xx the decoding classified as the request's fault, such as server-side apply's
  // 500 for a field the schema does not declare, is not a server failure)
  bool server_failure = error.http_status >= 500 && error.retryable();
  if (!transport_failure && !server_failure) {
    return std::nullopt;
  }
  if (!request.idempotent && (request_sent || server_failure)) {
    return std::nullopt;  // the server may have acted on it: never repeat a create blindly
  }
  if (transport_failure && !server_answering && retries_so_far >= policy.retries_while_not_answering) {
    return std::nullopt;
  }
  if (server_failure && error.retry_after_seconds >= 0) {
    return retry_after();
  }
  return backoff(policy, retries_so_far, random01);
}

}  // namespace kstate
