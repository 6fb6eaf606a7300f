// The real Transport: HTTP/1.1 over TLS (Boost.Beast on Asio, C++20 coroutines) with
// a keep-alive connection pool, a bound on requests in flight, a token bucket, a
// deadline on every network operation, retries (retry.hpp) and credential refresh on
// 401. Never logs headers or bodies: they carry tokens and Secret values.
#include <poll.h>
#include <spdlog/spdlog.h>

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <limits>
#include <random>

#include "core/encoding.hpp"
#include "core/http_response.hpp"
#include "core/signal.hpp"
#include "core/transport.hpp"
#include "kstate/build_info.hpp"

namespace kstate {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
constexpr auto use_awaitable = asio::use_awaitable;

// One connection to the server, TLS or plain, with its read buffer.
struct Connection {
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  std::unique_ptr<beast::tcp_stream> plain;
  beast::flat_buffer buffer;
  std::string identity;  // which client certificate it was opened with
  SteadyClock::time_point idle_since{};
  bool session_offered = false;  // its TLS session was kept for later connections to resume

  beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  // A pooled connection the server closed (or wrote to) while idle is useless.
  bool looks_alive() {
    auto& socket = tcp().socket();
    if (!socket.is_open()) {
      return false;
    }
    pollfd descriptor{socket.native_handle(), POLLIN, 0};
    return ::poll(&descriptor, 1, 0) == 0;
  }
};

Error connection_error(ErrorKind kind, const std::string& what, const beast::error_code& ec) {
  if (ec == beast::error::timeout) {
    return Error(ErrorKind::timeout, what + ": deadline exceeded");
  }
  return Error(kind, what + ": " + ec.message());
}

// What failed when reading an answer broke off.
RequestFailure read_failure(const beast::error_code& ec) {
  if (ec == http::error::body_limit || ec == http::error::header_limit) {
    return RequestFailure::response_too_large;
  }
  return ec == beast::error::timeout ? RequestFailure::timeout : RequestFailure::read;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  auto tenths = (duration.count() + 50) / 100;
  return std::to_string(tenths / 10) + (tenths % 10 != 0 ? "." + std::to_string(tenths % 10) : "") + " s";
}

// A counting semaphore for coroutines on one thread.
class AsyncSemaphore {
 public:
  explicit AsyncSemaphore(std::size_t count) : available_(count) {}
  asio::awaitable<void> acquire() {
    if (available_ > 0) {
      --available_;
      co_return;
    }
    auto woken = std::make_shared<Signal>(co_await asio::this_coro::executor);
    waiters_.push_back(woken);
    co_await woken->wait();
    // Woken by release(), which handed its slot over.
  }
  void release() {
    if (!waiters_.empty()) {
      auto waiter = waiters_.front();
      waiters_.pop_front();
      waiter->notify();
    } else {
      ++available_;
    }
  }

 private:
  std::size_t available_;
  std::deque<std::shared_ptr<Signal>> waiters_;
};

class HttpTransport;

// A watch body read from a dedicated connection.
class BeastResponseStream final : public ResponseStream {
 public:
  BeastResponseStream(std::unique_ptr<Connection> connection,
                      std::unique_ptr<http::response_parser<http::buffer_body>> parser,
                      std::chrono::milliseconds idle_timeout)
      : connection_(std::move(connection)), parser_(std::move(parser)), idle_timeout_(idle_timeout) {}

  asio::awaitable<Result<std::string>> read_some() override {
    if (parser_->is_done()) {
      co_return std::string();
    }
    char chunk[16 * 1024];
    parser_->get().body().data = chunk;
    parser_->get().body().size = sizeof chunk;
    connection_->tcp().expires_after(idle_timeout_);
    beast::error_code ec;
    if (connection_->tls) {
      co_await http::async_read_some(*connection_->tls, connection_->buffer, *parser_,
                                     asio::redirect_error(use_awaitable, ec));
    } else {
      co_await http::async_read_some(*connection_->plain, connection_->buffer, *parser_,
                                     asio::redirect_error(use_awaitable, ec));
    }
    if (ec == http::error::need_buffer) {
      ec = {};
    }
    std::size_t used = sizeof chunk - parser_->get().body().size;
    if (ec && used == 0) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof) {
        co_return std::string();
      }
      co_return connection_error(ErrorKind::connection, "watch stream", ec);
    }
    if (used == 0) {
      // Only framing was read (a chunk header, say): no body byte yet, and an empty
      // string would read as the end of the stream, so read again unless it ended.
      if (parser_->is_done()) {
        co_return std::string();
      }
      co_return co_await read_some();
    }
    co_return std::string(chunk, used);
  }

 private:
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  std::chrono::milliseconds idle_timeout_;
};

// The name of a header whose value holds a control character ("" when none does). Such
// a value would end the header early and forge others (CR LF), so the request is not
// sent. Credentials are checked where they are read (kubeconfig.hpp); this is the last
// line of defence for every header.
std::string header_with_control_character(const Request& request, const Credentials& credentials) {
  auto has_control = [](std::string_view value) {
    return std::any_of(value.begin(), value.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte < 0x20 || byte == 0x7f;
    });
  };
  if (has_control(credentials.authorization)) {
    return "Authorization";
  }
  for (const auto& [name, value] : request.headers) {
    if (has_control(name) || has_control(value)) {
      return name;
    }
  }
  return {};
}

// Is `host` an IP address literal (no SNI, IP SAN verification)?
bool is_ip_address(const std::string& host) {
  beast::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

class HttpTransport final : public Transport {
 public:
  HttpTransport(asio::any_io_executor executor, ServerAddress address, ClientConfig config,
                std::unique_ptr<CredentialSource> credentials, TransportOptions options)
      : executor_(std::move(executor)),
        address_(std::move(address)),
        config_(std::move(config)),
        credentials_(std::move(credentials)),
        options_(std::move(options)),
        in_flight_(options_.max_in_flight == 0 ? 1 : options_.max_in_flight),
        bucket_(options_.qps, options_.burst, now()) {
    if (!options_.random) {
      options_.random = [engine = std::make_shared<std::mt19937_64>(std::random_device{}())]() {
        return std::uniform_real_distribution<double>(0.0, 1.0)(*engine);
      };
    }
    if (options_.user_agent.empty()) {
      options_.user_agent = std::string("kstate/") + build_info::version;
    }
  }

  // Builds the TLS context for a client certificate (empty: none).
  Result<std::shared_ptr<ssl::context>> tls_context(const Credentials& credentials) {
    std::string identity = credentials.client_certificate_pem.empty()
                               ? std::string()
                               : encoding::sha256_hex(credentials.client_certificate_pem);
    if (context_ && identity == context_identity_) {
      return context_;
    }
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    beast::error_code ec;
    if (config_.insecure_skip_tls_verify) {
      context->set_verify_mode(ssl::verify_none);
    } else {
      context->set_verify_mode(ssl::verify_peer);
      if (!config_.certificate_authority_pem.empty()) {
        context->add_certificate_authority(asio::buffer(config_.certificate_authority_pem), ec);
        if (ec) {
          return Error(ErrorKind::config, "the certificate authority is not valid PEM: " + ec.message());
        }
      } else {
        context->set_default_verify_paths(ec);
      }
    }
    if (!credentials.client_certificate_pem.empty()) {
      context->use_certificate_chain(asio::buffer(credentials.client_certificate_pem), ec);
      if (ec) {
        return Error(ErrorKind::config, "the client certificate is not valid PEM: " + ec.message());
      }
      // Never include the key or OpenSSL's rendering of it in a message.
      context->use_private_key(asio::buffer(credentials.client_key_pem), ssl::context::pem, ec);
      if (ec) {
        return Error(ErrorKind::config, "the client key is not a valid PEM private key matching the certificate");
      }
    }
    if (context_identity_ != identity) {
      idle_.clear();  // connections made with another certificate
    }
    context_ = context;
    context_identity_ = identity;
    return context;
  }

  // On failure, `failure` says which step failed.
  asio::awaitable<Result<std::unique_ptr<Connection>>> connect(const Credentials& credentials,
                                                               SteadyClock::time_point deadline,
                                                               RequestFailure& failure) {
    failure = RequestFailure::client;
    auto connection = std::make_unique<Connection>();
    bool https = address_.scheme == "https";
    if (https) {
      auto context = tls_context(credentials);
      if (!context) {
        co_return context.error();
      }
      connection->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(executor_, *context.value());
      connection->identity = context_identity_;
    } else {
      connection->plain = std::make_unique<beast::tcp_stream>(executor_);
    }
    beast::error_code ec;
    tcp::resolver resolver(executor_);
    auto endpoints =
        co_await resolver.async_resolve(address_.host, address_.port, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      failure = RequestFailure::resolve;
      co_return connection_error(ErrorKind::connection, "resolving " + address_.host, ec);
    }
    // Connect and handshake have their own, shorter deadline: a server that accepts
    // connections and never answers is given up on in seconds.
    const bool connect_deadline_first = now() + options_.connect_timeout < deadline;
    connection->tcp().expires_at(connect_deadline_first ? now() + options_.connect_timeout : deadline);
    const std::string within =
        " within " + seconds_text(connect_deadline_first ? options_.connect_timeout : options_.request_timeout);
    co_await connection->tcp().async_connect(endpoints, asio::redirect_error(use_awaitable, ec));
    failure = ec == beast::error::timeout ? RequestFailure::connect_timeout : RequestFailure::connect;
    if (ec == beast::error::timeout) {
      co_return Error(ErrorKind::timeout, "connecting to " + config_.server + ": no connection" + within);
    }
    if (ec) {
      co_return connection_error(ErrorKind::connection, "connecting to " + config_.server, ec);
    }
    // A request is written whole and answered before the next one on this connection:
    // Nagle's algorithm would only hold its last segment back until the server's
    // delayed ACK (up to 40 ms on Linux; seen on the ~200 KB inventory PATCH). Go's
    // net/http, so kubectl and client-go, turns it off too. Best effort.
    beast::error_code no_delay_ignored;
    connection->tcp().socket().set_option(tcp::no_delay(true), no_delay_ignored);
    if (https) {
      SSL* handle = connection->tls->native_handle();
      std::string name = config_.tls_server_name.empty() ? address_.host : config_.tls_server_name;
      if (!is_ip_address(name)) {
        // SSL_set_tlsext_host_name without its C cast.
        SSL_ctrl(handle, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, name.data());
      }
      failure = RequestFailure::tls;
      if (!config_.insecure_skip_tls_verify) {
        X509_VERIFY_PARAM* param = SSL_get0_param(handle);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        int set = is_ip_address(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                                      : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
        if (set != 1) {
          co_return Error(ErrorKind::tls, "cannot verify the server name " + name);
        }
      }
      // Resuming the last session skips the certificate signature and chain
      // verification: a cold apply opens up to --concurrency connections at once,
      // each a full handshake otherwise. The server falls back to a full handshake
      // when it does not accept the ticket.
      if (session_ && session_identity_ == connection->identity) {
        SSL_set_session(handle, session_.get());
      }
      co_await connection->tls->async_handshake(ssl::stream_base::client, asio::redirect_error(use_awaitable, ec));
      failure = ec == beast::error::timeout ? RequestFailure::tls_timeout : RequestFailure::tls;
      if (ec == beast::error::timeout) {
        session_.reset();
        co_return Error(ErrorKind::timeout,
                        "TLS handshake with " + config_.server + ": the server did not complete it" + within);
      }
      if (ec) {
        session_.reset();
        co_return connection_error(ErrorKind::tls, "TLS handshake with " + config_.server, ec);
      }
    }
    co_return connection;
  }

  template <class Stream>
  static asio::awaitable<beast::error_code> write_request(Stream& stream, http::request<http::string_body>& message) {
    beast::error_code ec;
    co_await http::async_write(stream, message, asio::redirect_error(use_awaitable, ec));
    co_return ec;
  }

  template <class Stream, class Parser>
  static asio::awaitable<beast::error_code> read_response(Stream& stream, beast::flat_buffer& buffer, Parser& parser) {
    beast::error_code ec;
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
    co_return ec;
  }

  template <class Stream, class Parser>
  static asio::awaitable<beast::error_code> read_header(Stream& stream, beast::flat_buffer& buffer, Parser& parser) {
    beast::error_code ec;
    co_await http::async_read_header(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
    co_return ec;
  }

  http::request<http::string_body> make_message(const Request& request, const Credentials& credentials) const {
    http::request<http::string_body> message;
    message.method_string(request.verb);
    message.target(address_.path_prefix + request.target());
    message.version(11);
    bool default_port =
        (address_.scheme == "https" && address_.port == "443") || (address_.scheme == "http" && address_.port == "80");
    bool ipv6 = address_.host.find(':') != std::string::npos;
    std::string host = ipv6 ? "[" + address_.host + "]" : address_.host;
    message.set(http::field::host, default_port ? host : host + ":" + address_.port);
    message.set(http::field::user_agent, options_.user_agent);
    message.set(http::field::accept, request.accept);
    if (!credentials.authorization.empty()) {
      message.set(http::field::authorization, credentials.authorization);
    }
    for (const auto& [name, value] : request.headers) {
      message.set(name, value);
    }
    if (!request.content_type.empty()) {
      message.set(http::field::content_type, request.content_type);
    }
    message.keep_alive(!request.streaming);
    message.body() = request.body;
    message.prepare_payload();
    return message;
  }

  std::unique_ptr<Connection> take_idle(const std::string& identity) {
    while (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      bool fresh = now() - connection->idle_since < options_.idle_connection_timeout;
      if (fresh && connection->identity == identity && connection->looks_alive()) {
        return connection;
      }
    }
    return nullptr;
  }

  void give_back(std::unique_ptr<Connection> connection) {
    connection->idle_since = now();
    keep_session(*connection);
    if (idle_.size() < options_.max_idle_connections) {
      idle_.push_back(std::move(connection));
    }
  }

  // Keeps the TLS session of a connection that completed a request (with TLS 1.3 the
  // server's session ticket only arrives with the first response) for the next
  // connections to resume; the newest one wins.
  void keep_session(Connection& connection) {
    if (!connection.tls || connection.session_offered) {
      return;
    }
    connection.session_offered = true;
    std::shared_ptr<SSL_SESSION> session(SSL_get1_session(connection.tls->native_handle()), SSL_SESSION_free);
    if (session && SSL_SESSION_is_resumable(session.get()) == 1) {
      session_ = std::move(session);
      session_identity_ = connection.identity;
    }
  }

  // Outcome of one attempt: the response, or an error and whether the request may
  // have reached the server.
  struct Attempt {
    std::optional<Response> response;
    Error error;
    bool request_sent = false;
    bool reused_connection = false;                   // sent over a pooled connection
    RequestFailure failure = RequestFailure::client;  // without a response: what failed
  };

  asio::awaitable<Attempt> attempt(const Request& request, const Credentials& credentials) {
    Attempt outcome;
    if (auto header = header_with_control_character(request, credentials); !header.empty()) {
      outcome.error = Error(ErrorKind::config, request.verb + " " + request.path + ": the " + header +
                                                   " header holds a control character; not sent");
      co_return outcome;
    }
    auto deadline = now() + options_.request_timeout;
    std::string identity = credentials.client_certificate_pem.empty()
                               ? std::string()
                               : encoding::sha256_hex(credentials.client_certificate_pem);
    if (address_.scheme == "https") {
      if (auto context = tls_context(credentials); !context) {
        outcome.error = context.error();
        co_return outcome;
      }
    }
    auto connection = take_idle(identity);
    outcome.reused_connection = connection != nullptr;
    if (!connection) {
      auto connected = co_await connect(credentials, deadline, outcome.failure);
      if (!connected) {
        outcome.error = std::move(connected).error();
        co_return outcome;
      }
      connection = std::move(connected.value());
    }
    auto message = make_message(request, credentials);
    connection->tcp().expires_at(deadline);
    outcome.request_sent = true;
    beast::error_code ec;
    // (if/else, not ?: — GCC 12 miscompiles co_await inside a conditional expression)
    if (connection->tls) {
      ec = co_await write_request(*connection->tls, message);
    } else {
      ec = co_await write_request(*connection->plain, message);
    }
    if (ec) {
      outcome.failure = ec == beast::error::timeout ? RequestFailure::timeout : RequestFailure::write;
      outcome.error = connection_error(ErrorKind::connection, request.verb + " " + request.path, ec);
      co_return outcome;
    }
    ResponseParser parser;
    limit_response(parser, options_.max_response_bytes);
    // (if/else, not ?: — GCC 12 miscompiles co_await inside a conditional expression)
    if (connection->tls) {
      ec = co_await read_response(*connection->tls, connection->buffer, parser);
    } else {
      ec = co_await read_response(*connection->plain, connection->buffer, parser);
    }
    if (ec) {
      // (memory running out for the body is an error here too, not an exception)
      outcome.failure = read_failure(ec);
      outcome.error = response_read_error(request.verb + " " + request.path, ec, options_.max_response_bytes);
      co_return outcome;
    }
    outcome.response = to_response(parser.get());
    if (parser.get().keep_alive()) {
      give_back(std::move(connection));
    }
    co_return outcome;
  }

  // Credentials for the next attempt. One caller at a time: when a request got 401
  // with generation G of the credentials, the source is asked to refresh only if no
  // other request refreshed them since (so a burst of 401s re-runs an exec plugin
  // once). A source that may block (exec plugin) is called on the worker thread, so
  // the io thread keeps serving other requests, watches and timers meanwhile.
  struct FetchedCredentials {
    Result<Credentials> credentials;
    std::uint64_t generation = 0;
  };
  asio::awaitable<FetchedCredentials> fetch_credentials(bool after_unauthorized, std::uint64_t used_generation) {
    co_await credential_lock_.acquire();
    bool refresh = after_unauthorized && used_generation == credential_generation_;
    Result<Credentials> result = Error(ErrorKind::internal, "no credentials");
    if (credentials_->may_block(refresh)) {
      result = co_await get_credentials_off_thread(refresh);
    } else {
      result = credentials_->get(refresh);
    }
    if (refresh) {
      ++credential_generation_;
    }
    FetchedCredentials fetched{std::move(result), credential_generation_};
    credential_lock_.release();
    co_return fetched;
  }

  asio::awaitable<Result<Credentials>> get_credentials_off_thread(bool after_unauthorized) {
    struct Call {
      explicit Call(const asio::any_io_executor& executor) : done(executor) {}
      Signal done;
      std::optional<Result<Credentials>> result;
    };
    auto call = std::make_shared<Call>(executor_);
    CredentialSource* source = credentials_.get();
    asio::post(worker_, [call, source, after_unauthorized, executor = executor_] {
      auto result = source->get(after_unauthorized);
      asio::post(executor, [call, result = std::move(result)]() mutable {
        call->result.emplace(std::move(result));
        call->done.notify();
      });
    });
    while (!call->result) {
      co_await call->done.wait();
    }
    co_return std::move(*call->result);
  }

  asio::awaitable<void> sleep_for(std::chrono::milliseconds delay) {
    asio::steady_timer timer(executor_, delay);
    beast::error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
  }

  asio::awaitable<void> wait_for_token() {
    auto wait = bucket_.reserve(now());
    if (wait > SteadyClock::duration::zero()) {
      co_await sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(wait) + std::chrono::milliseconds(1));
    }
  }

  // The final error of a request that was retried says so, with the number of attempts.
  static Error gave_up(Error error, int retries) {
    if (retries > 0) {
      error.message += " (gave up after " + std::to_string(retries + 1) + " attempts)";
    }
    return error;
  }

  void count(const std::string& verb, int status) { ++stats_.requests[verb + " " + std::to_string(status)]; }
  void count(const std::string& verb, RequestFailure failure) {
    ++stats_.failures[verb + " " + std::string(to_string(failure))];
  }

  // --- the server's reachability (reachability.hpp) ----------------------------------

  // Runs `change` on the reachability and reports a change of state.
  template <class Change>
  void update_reachability(Change change) {
    const Reachability before = reachability_.state();
    change(reachability_);
    if (reachability_.state() != before && options_.on_server_status) {
      options_.on_server_status(server_status());
    }
  }
  void note_answer() {
    update_reachability([&](ServerReachability& reachability) { reachability.answered(now()); });
  }
  void note_failure(SteadyClock::time_point attempt_started, const Error& error, bool sent, bool reused) {
    const bool means_unreachable = failure_means_unreachable(error, sent, reused);
    update_reachability([&](ServerReachability& reachability) {
      reachability.attempt_failed(now(), attempt_started, means_unreachable, error.message);
    });
  }
  // A request stopped retrying: when its last failure said nobody is there, the server
  // is down and further attempts fail fast.
  void note_gave_up(SteadyClock::time_point request_started, const Error& error, bool sent, bool reused) {
    if (failure_means_unreachable(error, sent, reused)) {
      update_reachability(
          [&](ServerReachability& reachability) { reachability.gave_up(now(), request_started, error.message); });
    }
  }
  // The error of an attempt not made because the server is down.
  Error not_sent(const Request& request) const {
    return Error(ErrorKind::connection, request.verb + " " + request.path + ": not sent: the API server " +
                                            config_.server + " does not answer (" + reachability_.reason() + ")");
  }
  bool server_answering() const { return reachability_.state() == Reachability::answering; }

  ServerStatus server_status() const override {
    return ServerStatus{reachability_.state(), reachability_.reason(), reachability_.since()};
  }

  asio::awaitable<Result<Response>> send(Request request) override {
    bool after_unauthorized = false;
    bool refreshed_credentials = false;
    std::uint64_t generation = 0;
    const auto request_started = now();
    for (int retries = 0;; ++retries) {
      co_await wait_for_token();
      auto fetched = co_await fetch_credentials(after_unauthorized, generation);
      auto& credentials = fetched.credentials;
      generation = fetched.generation;
      if (!credentials) {
        co_return credentials.error();
      }
      co_await in_flight_.acquire();
      if (reachability_.admit(now()) == Admission::fail_fast) {
        in_flight_.release();
        co_return not_sent(request);
      }
      const auto attempt_started = now();
      auto outcome = co_await attempt(request, credentials.value());
      in_flight_.release();
      Error error;
      if (outcome.response) {
        note_answer();
        int status = outcome.response->status;
        count(request.verb, status);
        spdlog::trace("{} {} -> {}", request.verb, request.target(), status);
        if ((status >= 200 && status < 300) || status == 304) {
          co_return std::move(*outcome.response);
        }
        error = error_from_response(status, outcome.response->body, outcome.response->header("retry-after"));
        error.warnings = outcome.response->warnings();
        if (status == 401 && !refreshed_credentials) {
          // Tokens rotate and exec credentials expire early: refresh once.
          refreshed_credentials = true;
          after_unauthorized = true;
          ++stats_.retries;
          continue;
        }
      } else {
        count(request.verb, outcome.failure);
        error = std::move(outcome.error);
        note_failure(attempt_started, error, outcome.request_sent, outcome.reused_connection);
        spdlog::debug("{} {} failed: {}", request.verb, request.path, error.message);
      }
      after_unauthorized = false;
      auto delay = retry_delay(options_.retry, request, error, outcome.request_sent, retries, options_.random(),
                               server_answering());
      if (!delay) {
        Error final_error = gave_up(std::move(error), retries);
        if (!outcome.response) {
          note_gave_up(request_started, final_error, outcome.request_sent, outcome.reused_connection);
        }
        co_return final_error;
      }
      ++stats_.retries;
      spdlog::debug("retrying {} {} in {} ms ({})", request.verb, request.path, delay->count(),
                    error.http_status != 0 ? std::to_string(error.http_status) : error.message);
      co_await sleep_for(*delay);
    }
  }

  asio::awaitable<Result<std::unique_ptr<ResponseStream>>> open_stream(Request request) override {
    bool refreshed_credentials = false;
    bool after_unauthorized = false;
    std::uint64_t generation = 0;
    const auto request_started = now();
    for (int retries = 0;; ++retries) {
      co_await wait_for_token();
      auto fetched = co_await fetch_credentials(after_unauthorized, generation);
      auto& credentials = fetched.credentials;
      generation = fetched.generation;
      if (!credentials) {
        co_return credentials.error();
      }
      if (auto header = header_with_control_character(request, credentials.value()); !header.empty()) {
        co_return Error(ErrorKind::config,
                        request.verb + " " + request.path + ": the " + header + " header holds a control character");
      }
      if (reachability_.admit(now()) == Admission::fail_fast) {
        co_return not_sent(request);
      }
      Error error;
      bool sent = false;
      bool answered = false;
      const auto attempt_started = now();
      auto deadline = attempt_started + options_.request_timeout;
      RequestFailure failure = RequestFailure::client;
      auto connected = co_await connect(credentials.value(), deadline, failure);
      if (connected) {
        auto connection = std::move(connected.value());
        auto message = make_message(request, credentials.value());
        sent = true;
        beast::error_code ec;
        // (if/else, not ?: — GCC 12 miscompiles co_await inside a conditional expression)
        if (connection->tls) {
          ec = co_await write_request(*connection->tls, message);
        } else {
          ec = co_await write_request(*connection->plain, message);
        }
        auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
        parser->header_limit(static_cast<std::uint32_t>(max_response_header_bytes));
        // A watch never ends; its events are bounded (watch.hpp). Not boost::none: Boost
        // 1.74 compares a Content-Length with an empty limit as "larger", so an error
        // answered with a sized Status body (403, 410) failed as too large.
        parser->body_limit(std::numeric_limits<std::uint64_t>::max());
        const bool written = !ec;
        if (written) {
          // (if/else, not ?: — GCC 12 miscompiles co_await inside a conditional expression)
          if (connection->tls) {
            ec = co_await read_header(*connection->tls, connection->buffer, *parser);
          } else {
            ec = co_await read_header(*connection->plain, connection->buffer, *parser);
          }
        }
        if (ec) {
          count(request.verb, written                       ? read_failure(ec)
                              : ec == beast::error::timeout ? RequestFailure::timeout
                                                            : RequestFailure::write);
          error = response_read_error(request.verb + " " + request.path, ec, options_.max_response_bytes);
        } else {
          answered = true;
          note_answer();
          int status = static_cast<int>(parser->get().result_int());
          count(request.verb, status);
          spdlog::trace("{} {} -> {} (stream)", request.verb, request.target(), status);
          if (status >= 200 && status < 300) {
            co_return std::unique_ptr<ResponseStream>(std::make_unique<BeastResponseStream>(
                std::move(connection), std::move(parser), options_.watch_idle_timeout));
          }
          // Read the (small) Status body of the error.
          std::string body;
          BeastResponseStream rest(std::move(connection), std::move(parser), options_.request_timeout);
          for (int i = 0; i < 64; ++i) {
            auto chunk = co_await rest.read_some();
            if (!chunk || chunk->empty()) {
              break;
            }
            body += chunk.value();
          }
          error = error_from_response(status, body);
          if (status == 401 && !refreshed_credentials) {
            refreshed_credentials = true;
            after_unauthorized = true;
            ++stats_.retries;
            continue;
          }
        }
      } else {
        count(request.verb, failure);
        error = std::move(connected).error();
      }
      if (!answered) {
        note_failure(attempt_started, error, sent, false);
      }
      after_unauthorized = false;
      auto delay = retry_delay(options_.retry, request, error, sent, retries, options_.random(), server_answering());
      if (!delay) {
        Error final_error = gave_up(std::move(error), retries);
        if (!answered) {
          note_gave_up(request_started, final_error, sent, false);
        }
        co_return final_error;
      }
      ++stats_.retries;
      co_await sleep_for(*delay);
    }
  }

  TransportStats stats() const override { return stats_; }

 private:
  SteadyClock::time_point now() const { return options_.clock ? options_.clock() : SteadyClock::now(); }

  asio::any_io_executor executor_;
  ServerAddress address_;
  ClientConfig config_;
  std::unique_ptr<CredentialSource> credentials_;
  TransportOptions options_;
  AsyncSemaphore in_flight_;
  TokenBucket bucket_;
  std::shared_ptr<ssl::context> context_;
  std::string context_identity_;
  std::shared_ptr<SSL_SESSION> session_;  // the TLS session new connections resume
  std::string session_identity_;          // the client certificate it was made with
  std::vector<std::unique_ptr<Connection>> idle_;
  TransportStats stats_;
  ServerReachability reachability_{options_.probe_interval};
  AsyncSemaphore credential_lock_{1};
  std::uint64_t credential_generation_ = 0;
  // Runs blocking credential sources (exec plugins). Declared last: destroyed (joined)
  // first, while the source it calls is still alive.
  asio::thread_pool worker_{1};
};

}  // namespace

std::uint64_t TransportStats::total_requests() const {
  std::uint64_t total = 0;
  for (const auto& counts : {&requests, &failures}) {
    for (const auto& [key, value] : *counts) {
      total += value;
    }
  }
  return total;
}

std::string_view to_string(RequestFailure failure) {
  switch (failure) {
    case RequestFailure::client:
      return "client";
    case RequestFailure::resolve:
      return "resolve";
    case RequestFailure::connect:
      return "connect";
    case RequestFailure::connect_timeout:
      return "connect_timeout";
    case RequestFailure::tls:
      return "tls";
    case RequestFailure::tls_timeout:
      return "tls_timeout";
    case RequestFailure::write:
      return "write";
    case RequestFailure::timeout:
      return "timeout";
    case RequestFailure::read:
      return "read";
    case RequestFailure::response_too_large:
      return "response_too_large";
  }
  return "client";
}

Result<ServerAddress> parse_server_url(std::string_view url) {
  ServerAddress address;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    // kubectl accepts a bare host:port and assumes https.
    address.scheme = "https";
  } else {
    address.scheme = std::string(url.substr(0, scheme_end));
    url.remove_prefix(scheme_end + 3);
  }
  if (address.scheme != "https" && address.scheme != "http") {
    return Error(ErrorKind::config, "server URL scheme \"" + address.scheme + "\" is not supported");
  }
  auto path_start = url.find('/');
  std::string_view authority = url.substr(0, path_start);
  if (path_start != std::string_view::npos) {
    address.path_prefix = std::string(url.substr(path_start));
    while (!address.path_prefix.empty() && address.path_prefix.back() == '/') {
      address.path_prefix.pop_back();
    }
  }
  if (authority.find('@') != std::string_view::npos) {
    return Error(ErrorKind::config, "credentials in the server URL are not supported");
  }
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return Error(ErrorKind::config, "server URL has an unterminated IPv6 address");
    }
    address.host = std::string(authority.substr(1, close - 1));
    auto rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() == ':') {
      address.port = std::string(rest.substr(1));
    }
  } else {
    auto colon = authority.rfind(':');
    address.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      address.port = std::string(authority.substr(colon + 1));
    }
  }
  if (address.host.empty()) {
    return Error(ErrorKind::config, "server URL has no host");
  }
  if (address.port.empty()) {
    address.port = address.scheme == "https" ? "443" : "80";
  }
  return address;
}

Result<std::unique_ptr<Transport>> make_http_transport(asio::any_io_executor executor, const ClientConfig& config,
                                                       std::unique_ptr<CredentialSource> credentials,
                                                       TransportOptions options) {
  auto address = parse_server_url(config.server);
  if (!address) {
    return address.error();
  }
  if (config.insecure_skip_tls_verify && !config.certificate_authority_pem.empty()) {
    return Error(ErrorKind::config, "specifying a root certificates file with the insecure flag is not allowed");
  }
  if (config.insecure_skip_tls_verify && address->scheme == "https") {
    spdlog::warn("TLS certificate verification is disabled for {} (insecure-skip-tls-verify)", config.server);
  }
  bool https = address->scheme == "https";
  auto transport = std::make_unique<HttpTransport>(std::move(executor), std::move(address.value()), config,
                                                   std::move(credentials), std::move(options));
  // Check the TLS material now, so a bad CA or key is a startup error, not a request error.
  if (https) {
    Credentials static_credentials{{}, config.client_certificate_pem, config.client_key_pem};
    if (auto context = transport->tls_context(static_credentials); !context) {
      return context.error();
    }
  }
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace kstate
