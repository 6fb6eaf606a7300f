// Beast server with C++20 coroutines. Every read and write has a deadline (a client
// that connects and sends nothing cannot hold a connection open), request bodies are
// capped, and stop() closes every connection so shutdown is not held up by a scraper.
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
#include <set>

#include "daemon/http_endpoints.hpp"

namespace kstate::daemon {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr auto io_deadline = std::chrono::seconds(10);
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

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  State(asio::any_io_executor executor_, Handler handler_)
      : executor(std::move(executor_)), acceptor(executor), handler(std::move(handler_)) {}

  asio::any_io_executor executor;
  tcp::acceptor acceptor;
  Handler handler;
  std::set<std::shared_ptr<beast::tcp_stream>> connections;
  bool stopped = false;

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    while (!stopped) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || stopped) {
          co_return;
        }
        spdlog::warn("http: accept failed: {}", ec.message());
        continue;
      }
      auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
      connections.insert(stream);
      asio::co_spawn(executor, serve(stream), asio::detached);
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<beast::tcp_stream> stream) {
    auto self = shared_from_this();
    beast::flat_buffer buffer;
    for (;;) {
      boost::system::error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(max_request_body);
      stream->expires_after(io_deadline);
      co_await http::async_read(*stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        break;  // closed, timed out, or malformed: nothing to answer
      }
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
      stream->expires_after(io_deadline);
      http::serializer<false, http::string_body> serializer(response);
      if (request.method() == http::verb::head) {
        co_await http::async_write_header(*stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
      } else {
        co_await http::async_write(*stream, serializer, asio::redirect_error(asio::use_awaitable, ec));
      }
      if (ec || !response.keep_alive() || stopped) {
        break;
      }
    }
    boost::system::error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream->close();
    connections.erase(stream);
  }
};

HttpServer::HttpServer(asio::any_io_executor executor, Handler handler)
    : state_(std::make_shared<State>(std::move(executor), std::move(handler))) {}

HttpServer::~HttpServer() {
  stop();
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
  for (const auto& connection : state_->connections) {
    connection->socket().shutdown(tcp::socket::shutdown_both, ignored);
    connection->cancel();
  }
}

}  // namespace kstate::daemon
