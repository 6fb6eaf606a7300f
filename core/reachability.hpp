// Whether the API server answers, as the transport sees it: a small state machine fed
// with the outcome of every attempt and asked before every attempt, with time passed
// in (no clock, no I/O), so its rules are tested without a network or a sleep.
//
//  - Any HTTP answer (even a 5xx or a 429) means the server is there: `answering`.
//  - An attempt that got no answer in a way that says "nobody is there" (connect or TLS
//    handshake failed, or the deadline passed) makes the server `not_answering`,
//    unless another request got an answer after that attempt started (one slow LIST
//    timing out while the rest are answered is not an outage). A reused pooled
//    connection that the server had closed says nothing about the server and does not
//    count. The daemon's /readyz says so at once, so a frozen server is noticed within
//    one request deadline.
//  - A request that gave up on such failures (its retries spent) while nothing
//    answered makes the server `down`: further attempts fail at once without being
//    sent ("fail fast"), except one probe at a time, at most one per probe interval,
//    whose answer brings the server back. So 1,000 states against a dead server fail
//    in a second instead of each one waiting out its own retries.
//  - While the server is not known to answer (before its first answer, or once it
//    stopped), failures of that kind are retried only `retries_while_not_answering`
//    times (RetryPolicy): the first contact of `kstate apply` fails within two attempts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace kstate {

enum class Reachability {
  unknown,        // nothing sent or answered yet
  answering,      // the last word was an answer
  not_answering,  // an attempt found nobody there, nothing answered since
  down,           // a request gave up finding nobody there: attempts fail fast
};

const char* to_string(Reachability reachability);

// What to do with an attempt about to be made.
enum class Admission {
  send,       // the server answers (or may): send it
  probe,      // the server is down: send this one to find out whether it is back
  fail_fast,  // the server is down and a probe is in flight or was made recently
};

// Whether a failed attempt says the server is not there (see the rules above).
// `request_sent`: the request was written (false: connect or handshake failed).
// `reused_connection`: it went over a pooled connection.
bool failure_means_unreachable(const Error& error, bool request_sent, bool reused_connection);

class ServerReachability {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ServerReachability(std::chrono::milliseconds probe_interval = std::chrono::seconds(1))
      : probe_interval_(probe_interval) {}

  Reachability state() const { return state_; }
  // Whether the server ever answered this transport.
  bool ever_answered() const { return ever_answered_; }
  // The failure that made it not_answering or down ("" otherwise), and since when.
  const std::string& reason() const { return reason_; }
  Clock::time_point since() const { return since_; }
  // Attempts refused by fail_fast since the server went down.
  std::uint64_t failed_fast() const { return failed_fast_; }

  // Before an attempt. A `probe` must be followed by answered() or attempt_failed().
  Admission admit(Clock::time_point now);
  // An HTTP answer arrived.
  void answered(Clock::time_point now);
  // An attempt that started at `started` got no answer; `means_unreachable` from
  // failure_means_unreachable.
  void attempt_failed(Clock::time_point now, Clock::time_point started, bool means_unreachable,
                      const std::string& reason);
  // A request stopped retrying after an attempt that found nobody there.
  void gave_up(Clock::time_point now, Clock::time_point request_started, const std::string& reason);

 private:
  std::chrono::milliseconds probe_interval_;
  Reachability state_ = Reachability::unknown;
  bool ever_answered_ = false;
  Clock::time_point last_answer_{};
  std::string reason_;
  Clock::time_point since_{};
  bool probe_in_flight_ = false;
  Clock::time_point last_probe_{};
  std::uint64_t failed_fast_ = 0;
};

}  // namespace kstate
