// /healthz, /readyz and /metrics: the routing rules, then a real HTTP/1.1 exchange with
// the Beast server on 127.0.0.1 (keep-alive, HEAD, 404, 503 with the reason, shutdown).
#include "daemon/http_endpoints.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "tests/daemon/http_client.hpp"

namespace http_endpoints_test {

using kstate::daemon::HttpServer;
using kstate::daemon::MetricsRegistry;
using kstate::daemon::ProbeState;
using kstate::daemon::route_endpoint;

TEST_CASE("endpoint routing: health, readiness with reason, metrics, 404 and 405") {
  MetricsRegistry registry;
  registry.gauge("kstate_leader", "leader").set({}, 1);
  ProbeState probes;
  probes.ready = false;
  probes.not_ready_reason = "API server unreachable: connection refused";

  CHECK(route_endpoint("GET", "/healthz", probes, registry).status == 200);
  auto not_ready = route_endpoint("GET", "/readyz", probes, registry);
  CHECK(not_ready.status == 503);
  CHECK(not_ready.body == "not ready: API server unreachable: connection refused\n");
  probes.ready = true;
  CHECK(route_endpoint("GET", "/readyz?verbose", probes, registry).status == 200);
  auto metrics = route_endpoint("GET", "/metrics", probes, registry);
  CHECK(metrics.status == 200);
  CHECK(metrics.content_type == "text/plain; version=0.0.4; charset=utf-8");
  CHECK_THAT(metrics.body, Catch::Contains("kstate_leader 1\n"));
  CHECK(route_endpoint("GET", "/", probes, registry).status == 404);
  CHECK(route_endpoint("POST", "/metrics", probes, registry).status == 405);
}

TEST_CASE("http server answers real HTTP/1.1 requests on 127.0.0.1 and stops cleanly") {
  boost::asio::io_context io;
  MetricsRegistry registry;
  auto& requests = registry.counter("kstate_api_requests_total", "API requests", {"verb", "code"});
  requests.add({"GET", "200"});
  ProbeState probes;  // touched only on the io thread
  HttpServer server(io.get_executor(), [&](std::string_view method, std::string_view target) {
    return route_endpoint(method, target, probes, registry);
  });
  auto port = server.listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  REQUIRE(*port != 0);
  std::thread loop([&] { io.run(); });

  auto health = kstate::testing::http_get(*port, "/healthz");
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");

  auto not_ready = kstate::testing::http_get(*port, "/readyz");
  CHECK(not_ready.status == 503);
  CHECK(not_ready.body == "not ready: first reconcile not done yet\n");

  std::promise<void> marked;
  boost::asio::post(io, [&] {
    probes.ready = true;
    marked.set_value();
  });
  marked.get_future().wait();

  {
    kstate::testing::HttpConnection connection(*port);  // several requests, one connection
    CHECK(connection.request("/readyz").status == 200);
    auto metrics = connection.request("/metrics");
    CHECK(metrics.status == 200);
    CHECK(metrics.content_type == "text/plain; version=0.0.4; charset=utf-8");
    CHECK_THAT(metrics.body, Catch::Contains("kstate_api_requests_total{verb=\"GET\",code=\"200\"} 1\n"));
    auto head = connection.request("/metrics", boost::beast::http::verb::head);
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(connection.request("/nothing").status == 404);
  }

  // An idle kept-alive connection does not hold up shutdown.
  kstate::testing::HttpConnection idle(*port);
  CHECK(idle.request("/healthz").status == 200);
  boost::asio::post(io, [&] { server.stop(); });
  CHECK(idle.closed_by_server());
  loop.join();  // io.run() returned: nothing left running
}

TEST_CASE("http server reports an address already in use") {
  boost::asio::io_context io;
  MetricsRegistry registry;
  ProbeState probes;
  auto handler = [&](std::string_view method, std::string_view target) {
    return route_endpoint(method, target, probes, registry);
  };
  HttpServer first(io.get_executor(), handler);
  auto port = first.listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  HttpServer second(io.get_executor(), handler);
  auto clash = second.listen("127.0.0.1", *port);
  REQUIRE_FALSE(clash.ok());
  CHECK_THAT(clash.error().message, Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(*port)));
  auto bad = second.listen("not-an-ip", 0);
  REQUIRE_FALSE(bad.ok());
}

}  // namespace http_endpoints_test
