// The daemon's HTTP endpoints on the listen address (plain HTTP, meant for 127.0.0.1):
// /healthz (the event loop answers), /readyz (first reconcile done and API server
// reachable, else 503 with the reason), /metrics (Prometheus text). Routing is a pure
// function; HttpServer is a small Beast server that runs on the daemon's own event
// loop, so a stuck loop also stops /healthz from answering.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

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

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(std::string_view method, std::string_view target)>;

  HttpServer(boost::asio::any_io_executor executor, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0 picks a free port) and starts accepting; returns the bound port.
  Result<unsigned short> listen(const std::string& host, unsigned short port);
  // Stops accepting and closes open connections.
  void stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kstate::daemon
