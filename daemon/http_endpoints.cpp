// Beast server with C++20 coroutines. Every read and write has a deadline (a client
// that connects and sends nothing cannot hold a connection open), connections are
// capped, request bodies too, accept() failures back off, and stop() closes every
// connection so shutdown is not held up by a scraper.
#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <map>

#include "daemon/http_endpoints.hpp"

namespace kstate::daemon {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::size_t max_request_body = 16 * 1024;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace

HttpResponse route_endpoint(std::string_view method, std::string_view target, const ProbeState& probes,
                            const MetricsRegistry& metrics) {
  const std::string_view path = path_of(target);
  if (path != "/healthz" && path != "/readyz" && path != "/metrics") {
    return {404, "text/plain; charset=utf-8", "not found: try /healthz, /readyz or /metrics\n"};
  }
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  if (path == "/healthz") {
    return {200, "text/plain; charset=utf-8", "ok\n"};
  }
  if (path == "/readyz") {
    if (probes.ready) {
      return {200, "text/plain; charset=utf-8", "ok\n"};
    }
    return {503, "text/plain; charset=utf-8", "not ready: " + probes.not_ready_reason + "\n"};
  }
  return {200, std::string(prometheus_content_type), metrics.render()};
}

bool LogThrottle::should_log(Clock::time_point now, std::uint64_t& held_back) {
  if (logged_ && now - last_ < interval_) {
    ++held_back_;
    return false;
  }
  logged_ = true;
  last_ = now;
  held_back = std::exchange(held_back_, 0);
  return true;
}

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  State(asio::any_io_executor executor_, Handler handler_, HttpServerOptions options_)
      : executor(std::move(executor_)),
        acceptor(executor),
        handler(std::move(handler_)),
        options(options_),
        failure_log(options.failure_log_interval),
        clock(options.clock ? options.clock : real_clock()),
        pause(clock->make_timer(executor)) {}

  struct Connection {
    explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
    beast::tcp_stream stream;
    bool waiting = true;  // for (the rest of) a request, not writing an answer
  };

  asio::any_io_executor executor;
  tcp::acceptor acceptor;
  Handler handler;
  HttpServerOptions options;
  LogThrottle failure_log;
  std::shared_ptr<const Clock> clock;
  std::unique_ptr<Timer> pause;  // the accept loop's backoff after a failure
  HttpServerStats counts;
  // Open connections by arrival: the oldest waiting one makes room under the cap.
  std::map<std::uint64_t, std::shared_ptr<Connection>> connections;
  std::uint64_t next_id = 0;
  bool stopped = false;

  static void close(Connection& connection) {
    boost::system::error_code ignored;
    connection.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    connection.stream.socket().close(ignored);  // frees the descriptor now
  }

  // At the cap: closes the oldest connection that waits for a request. False when
  // every connection is busy answering (the new one is then turned away).
  bool make_room() {
    for (auto& [id, connection] : connections) {
      if (connection->waiting && connection->stream.socket().is_open()) {
        close(*connection);
        ++counts.evicted;
        return true;
      }
    }
    return false;
  }

  void accept_failed(const boost::system::error_code& ec) {
    ++counts.accept_failures;
    std::uint64_t held_back = 0;
    if (failure_log.should_log(clock->steady_now(), held_back)) {
      ++counts.failures_logged;
      if (held_back > 0) {
        spdlog::warn("http: accept failed: {} ({} more failures since the last report; retrying with backoff)",
                     ec.message(), held_back);
      } else {
        spdlog::warn("http: accept failed: {} (retrying with backoff)", ec.message());
      }
    }
  }

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    auto backoff = options.accept_backoff_initial;
    while (!stopped) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (stopped || ec == asio::error::operation_aborted) {
        co_return;
      }
      if (ec) {
        // Out of file descriptors, typically: the connection stays queued and accept()
        // would fail again at once. Wait, so that this loop does not spin.
        accept_failed(ec);
        pause->expires_after(backoff);
        co_await pause->wait();
        backoff = std::min(backoff * 2, options.accept_backoff_max);
        continue;
      }
      backoff = options.accept_backoff_initial;
      ++counts.accepted;
      if (connections.size() >= options.max_connections && !make_room()) {
        boost::system::error_code ignored;
        socket.close(ignored);
        continue;
      }
      auto connection = std::make_shared<Connection>(std::move(socket));
      const std::uint64_t id = next_id++;
      connections.emplace(id, connection);
      asio::co_spawn(executor, serve(id, connection), asio::detached);
    }
  }

  asio::awaitable<void> serve(std::uint64_t id, std::shared_ptr<Connection> connection) {
    auto self = shared_from_this();
    auto& stream = connection->stream;
    beast::flat_buffer buffer;
    for (;;) {
      boost::system::error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(max_request_body);
      connection->waiting = true;
      stream.expires_after(options.request_timeout);
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        counts.timed_out += ec == beast::error::timeout ? 1 : 0;
        break;  // closed, timed out, evicted or malformed: nothing to answer
      }
      connection->waiting = false;
      const auto& request = parser.get();
      HttpResponse answer = handler(std::string_view(request.method_string().data(), request.method_string().size()),
                                    std::string_view(request.target().data(), request.target().size()));
      http::response<http::string_body> response{static_cast<http::status>(answer.status), request.version()};
      response.set(http::field::server, "kstate");
      response.set(http::field::content_type, answer.content_type);
      response.keep_alive(request.keep_alive());
      if (request.method() == http::verb::head) {
        response.content_length(answer.body.size());
      } else {
        response.body() = std::move(answer.body);
        response.prepare_payload();
      }
      stream.expires_after(options.request_timeout);
      http::serializer<false, http::string_body> serializer(response);
      if (request.method() == http::verb::head) {
        co_await http::async_write_header(stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
      } else {
        co_await http::async_write(stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
      }
      if (ec || !response.keep_alive() || stopped) {
        break;
      }
    }
    close(*connection);
    connections.erase(id);
  }
};

HttpServer::HttpServer(asio::any_io_executor executor, Handler handler, HttpServerOptions options)
    : state_(std::make_shared<State>(std::move(executor), std::move(handler), options)) {}

HttpServer::~HttpServer() {
  stop();
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats stats = state_->counts;
  stats.open = state_->connections.size();
  return stats;
}

Result<unsigned short> HttpServer::listen(const std::string& host, unsigned short port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) {
    return Error(ErrorKind::invalid_input, "listen address: \"" + host + "\" is not an IP address");
  }
  const tcp::endpoint endpoint(address, port);
  auto& acceptor = state_->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); !ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return Error(ErrorKind::io, "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  }
  const unsigned short bound = acceptor.local_endpoint(ec).port();
  asio::co_spawn(state_->executor, state_->accept_loop(), asio::detached);
  return bound;
}

void HttpServer::stop() {
  if (!state_ || state_->stopped) {
    return;
  }
  state_->stopped = true;
  boost::system::error_code ignored;
  state_->acceptor.close(ignored);
  state_->pause->cancel();
  for (const auto& [id, connection] : state_->connections) {
    connection->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    connection->stream.cancel();
  }
}

}  // namespace kstate::daemon
