// The daemon's HTTP endpoints on the listen address (plain HTTP, meant for 127.0.0.1):
// /healthz (the event loop answers), /readyz (first reconcile done and API server
// reachable, else 503 with the reason), /metrics (Prometheus text). Routing is a pure
// function; HttpServer is a small Beast server that runs on the daemon's own event
// loop, so a stuck loop also stops /healthz from answering.
//
// Any local user can connect, so the server is built not to let them starve the
// daemon: connections are capped (the oldest one waiting for a request is closed to
// make room for a new one, so a flood of idle connections cannot lock out a probe), a
// request must arrive whole within a short deadline, and accept() failures (out of
// file descriptors) back off instead of spinning, logged at most once per interval.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "daemon/metrics.hpp"

namespace kstate::daemon {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct ProbeState {
  bool ready = false;
  std::string not_ready_reason = "first reconcile not done yet";
};

inline constexpr std::string_view prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

// GET/HEAD /healthz, /readyz, /metrics; 404 for other paths, 405 for other methods.
HttpResponse route_endpoint(std::string_view method, std::string_view target, const ProbeState& probes,
                            const MetricsRegistry& metrics);

struct HttpServerOptions {
  // Open connections at most; at the cap, a new one replaces the oldest connection that
  // waits for a request (a scraper or probe sends its request at once).
  std::size_t max_connections = 64;
  // A request must arrive whole (and an answer be written) within this; a kept-alive
  // connection idle this long is closed. Prometheus and kubelet-style probes send
  // their request as soon as they connect.
  std::chrono::milliseconds request_timeout{5'000};
  // After accept() fails (e.g. out of file descriptors), wait this long before the next
  // try, doubling up to accept_backoff_max while it keeps failing.
  std::chrono::milliseconds accept_backoff_initial{10};
  std::chrono::milliseconds accept_backoff_max{1'000};
  // accept() failures are logged at most once per this interval, with a count.
  std::chrono::milliseconds failure_log_interval{10'000};
  // The accept backoff's timer and the failure log's interval (the request deadlines
  // are Beast's, on the real clock); the real clock when null.
  std::shared_ptr<const Clock> clock;
};

// Counts of what the server did, for tests and figures.
struct HttpServerStats {
  std::uint64_t accepted = 0;
  std::uint64_t evicted = 0;    // closed to make room under the cap
  std::uint64_t timed_out = 0;  // closed because no whole request came in time
  std::uint64_t accept_failures = 0;
  std::uint64_t failures_logged = 0;  // log lines about accept failures
  std::size_t open = 0;
};

// At most one log line per interval for an event that may repeat very fast: the first
// occurrence is logged, the ones in the interval after it are counted and their number
// goes with the next line. Time is passed in.
class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}
  // Whether to log this occurrence; if so, `held_back` is how many were not logged since.
  bool should_log(Clock::time_point now, std::uint64_t& held_back);

 private:
  Clock::duration interval_;
  bool logged_ = false;
  Clock::time_point last_{};
  std::uint64_t held_back_ = 0;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(std::string_view method, std::string_view target)>;

  HttpServer(boost::asio::any_io_executor executor, Handler handler, HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0 picks a free port) and starts accepting; returns the bound port.
  Result<unsigned short> listen(const std::string& host, unsigned short port);
  // Stops accepting and closes open connections.
  void stop();
  HttpServerStats stats() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kstate::daemon
