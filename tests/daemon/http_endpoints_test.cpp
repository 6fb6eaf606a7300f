// /healthz, /readyz and /metrics: the routing rules, then a real HTTP/1.1 exchange with
// the Beast server on 127.0.0.1 (keep-alive, HEAD, 404, 503 with the reason, shutdown),
// then what a local user could do to it: a flood of idle connections (capped: the
// oldest idle one makes room, so a probe still gets in; idle ones time out) and
// accept() failing for want of file descriptors (backoff, one log line per interval).
#include "daemon/http_endpoints.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "tests/daemon/http_client.hpp"
#include "tests/support/manual_clock.hpp"

namespace http_endpoints_test {

using kstate::daemon::HttpServer;
using kstate::daemon::HttpServerOptions;
using kstate::daemon::LogThrottle;
using namespace std::chrono_literals;
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

TEST_CASE("log throttle: one line per interval, with the count of those held back") {
  using Clock = LogThrottle::Clock;
  LogThrottle throttle(10s);
  const auto t0 = Clock::time_point{} + 1h;
  std::uint64_t held_back = 99;
  CHECK(throttle.should_log(t0, held_back));
  CHECK(held_back == 0);
  int logged = 0;
  for (int i = 1; i <= 1000; ++i) {
    logged += throttle.should_log(t0 + i * 1ms, held_back) ? 1 : 0;
  }
  CHECK(logged == 0);
  CHECK(throttle.should_log(t0 + 10s, held_back));
  CHECK(held_back == 1000);
  CHECK_FALSE(throttle.should_log(t0 + 19s, held_back));
  CHECK(throttle.should_log(t0 + 20s, held_back));
  CHECK(held_back == 1);
}

namespace {

HttpServerOptions on_clock(HttpServerOptions options, std::shared_ptr<const kstate::Clock> clock) {
  options.clock = std::move(clock);
  return options;
}

struct Served {
  boost::asio::io_context io;
  std::shared_ptr<kstate::testing::ManualClock> clock = std::make_shared<kstate::testing::ManualClock>(io);
  MetricsRegistry registry;
  ProbeState probes;
  HttpServer server;
  unsigned short port = 0;
  // `simulated_time`: the accept backoff and the failure log's interval on `clock`,
  // which the test advances (the request deadlines are real socket timeouts).
  explicit Served(HttpServerOptions options, bool simulated_time = false)
      : server(
            io.get_executor(),
            [this](std::string_view method, std::string_view target) {
              return route_endpoint(method, target, probes, registry);
            },
            on_clock(std::move(options), simulated_time ? clock : nullptr)) {
    auto bound = server.listen("127.0.0.1", 0);
    REQUIRE(bound.ok());
    port = *bound;
  }
};

// A TCP connection that sends nothing (a blocking connect: the kernel completes it
// from the listen backlog, whether or not the server accepted it yet).
int idle_connection(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

TEST_CASE("http server: a flood of idle connections cannot lock a probe out; idle ones time out") {
  HttpServerOptions options;
  options.max_connections = 8;
  options.request_timeout = 300ms;
  Served served(options);
  std::thread loop([&] { served.io.run(); });
  std::vector<int> flood;
  for (int i = 0; i < 200; ++i) {
    flood.push_back(idle_connection(served.port));
  }
  // The probe gets in while 200 idle connections are open.
  const auto start = std::chrono::steady_clock::now();
  auto health = kstate::testing::http_get(served.port, "/healthz");
  const double probe_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(health.status == 200);
  auto read_stats = [&] {
    std::promise<kstate::daemon::HttpServerStats> stats;
    boost::asio::post(served.io, [&] { stats.set_value(served.server.stats()); });
    return stats.get_future().get();
  };
  // The last ones are closed at their request deadline (a real socket timeout, Beast's):
  // polled for, bounded.
  auto seen = read_stats();
  for (const auto deadline = std::chrono::steady_clock::now() + 5s;
       (seen.open != 0 || seen.timed_out == 0) && std::chrono::steady_clock::now() < deadline; seen = read_stats()) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(seen.accepted >= 201);
  CHECK(seen.evicted >= 190);
  CHECK(seen.timed_out >= 1);
  CHECK(seen.open == 0);
  for (int fd : flood) {
    ::close(fd);
  }
  boost::asio::post(served.io, [&] { served.server.stop(); });
  loop.join();
  WARN("200 idle connections against a cap of 8: /healthz answered in "
       << probe_ms << " ms; " << seen.accepted << " accepted, " << seen.evicted << " closed to make room, "
       << seen.timed_out << " timed out, " << seen.open << " open");
}

TEST_CASE("http server: accept() failing for want of descriptors backs off and is logged once per interval") {
#if defined(KSTATE_SANITIZED)
  // The sanitizers probe memory with pipe(), which fails with no descriptor left, and
  // UBSan then reports the logger's vptr as invalid: this case runs in the default
  // preset only.
  WARN("not run under the sanitizers: they need descriptors of their own");
  return;
#endif
  HttpServerOptions options;
  options.accept_backoff_initial = 10ms;
  options.accept_backoff_max = 200ms;
  options.failure_log_interval = 1s;
  Served served(options, true);
  // Connections wait in the backlog while the loop is not running; then this process
  // runs out of descriptors, so every accept() fails with EMFILE.
  std::vector<int> waiting;
  for (int i = 0; i < 20; ++i) {
    waiting.push_back(idle_connection(served.port));
  }
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  // New descriptors take the lowest free number: a limit at that number leaves none.
  const int lowest_free = ::dup(0);
  REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  const double cpu_before = cpu_seconds();
  served.io.poll();           // the first accept fails, the backoff starts
  served.clock->advance(3s);  // each retry when its backoff ends
  const double cpu_used = cpu_seconds() - cpu_before;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  const auto starved = served.server.stats();
  CHECK(starved.accept_failures >= 5);
  CHECK(starved.accept_failures <= 30);  // 10, 20, ... 200 ms apart: ~20 in 3 s
  CHECK(starved.failures_logged >= 2);
  CHECK(starved.failures_logged <= 4);  // once per second
  CHECK(cpu_used < 0.5);
  // Descriptors back: at the end of its backoff (200 ms at most) the loop accepts the
  // waiting connections, and a probe is answered.
  served.clock->advance(200ms);
  served.io.restart();
  std::thread loop([&] { served.io.run(); });
  auto health = kstate::testing::http_get(served.port, "/healthz");
  CHECK(health.status == 200);
  for (int fd : waiting) {
    ::close(fd);
  }
  boost::asio::post(served.io, [&] { served.server.stop(); });
  loop.join();
  WARN("accept() failing for 3 s (EMFILE): " << starved.accept_failures << " attempts, " << starved.failures_logged
                                             << " log lines, " << cpu_used << " CPU seconds; then /healthz "
                                             << health.status);
}

}  // namespace http_endpoints_test
