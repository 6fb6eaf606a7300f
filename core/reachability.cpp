// The API server's reachability as the transport sees it (see reachability.hpp).
#include "core/reachability.hpp"

namespace kstate {

const char* to_string(Reachability reachability) {
  switch (reachability) {
    case Reachability::unknown:
      return "unknown";
    case Reachability::answering:
      return "answering";
    case Reachability::not_answering:
      return "not answering";
    case Reachability::down:
      return "down";
  }
  return "unknown";
}

bool failure_means_unreachable(const Error& error, bool request_sent, bool reused_connection) {
  if (error.http_status != 0) {
    return false;  // an answer
  }
  if (error.kind == ErrorKind::timeout) {
    return true;  // connect, handshake or answer: nothing in time
  }
  if (error.kind != ErrorKind::connection && error.kind != ErrorKind::tls) {
    return false;  // e.g. credentials or a response over the size limit: the server is there
  }
  // A pooled connection the server closed while it sat idle fails on first use; a new
  // connection (or a connection attempt) that fails says the server is not there.
  return !(request_sent && reused_connection);
}

Admission ServerReachability::admit(Clock::time_point now) {
  if (state_ != Reachability::down) {
    return Admission::send;
  }
  if (!probe_in_flight_ && now - last_probe_ >= probe_interval_) {
    probe_in_flight_ = true;
    last_probe_ = now;
    return Admission::probe;
  }
  ++failed_fast_;
  return Admission::fail_fast;
}

void ServerReachability::answered(Clock::time_point now) {
  state_ = Reachability::answering;
  ever_answered_ = true;
  last_answer_ = now;
  reason_.clear();
  since_ = now;
  probe_in_flight_ = false;
  failed_fast_ = 0;
}

void ServerReachability::attempt_failed(Clock::time_point now, Clock::time_point started, bool means_unreachable,
                                        const std::string& reason) {
  if (state_ == Reachability::down) {
    probe_in_flight_ = false;
    if (means_unreachable) {
      reason_ = reason;
    }
    return;
  }
  if (!means_unreachable || (ever_answered_ && last_answer_ > started)) {
    return;  // something answered while this attempt waited: the server is there
  }
  if (state_ != Reachability::not_answering) {
    since_ = now;
  }
  state_ = Reachability::not_answering;
  reason_ = reason;
}

void ServerReachability::gave_up(Clock::time_point now, Clock::time_point request_started, const std::string& reason) {
  if (state_ == Reachability::down || (ever_answered_ && last_answer_ > request_started)) {
    return;
  }
  if (state_ != Reachability::not_answering) {
    since_ = now;
  }
  state_ = Reachability::down;
  reason_ = reason;
  last_probe_ = now;  // the request that gave up was the last try
  probe_in_flight_ = false;
  failed_fast_ = 0;
}

}  // namespace kstate
