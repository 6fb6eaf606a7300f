// The seam between kstate and the network: an abstract Transport that sends a
// Request and returns a Response (or an Error decoded from the Status of any non-2xx
// answer), plus the streaming variant used by watch. The real one (make_http_transport)
// speaks HTTP/1.1 over TLS with Boost.Beast; tests and the states layer can substitute
// a fake (tests/support/fake_transport.hpp).
//
// Threading: a transport and everything built on it is used from one io_context run
// by one thread (the daemon's model); it is not thread-safe.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange
// (keep the blank line: clang-format must not move <utility> below Asio)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/credentials.hpp"
#include "core/error.hpp"
#include "core/kubeconfig.hpp"
#include "core/reachability.hpp"
#include "core/request.hpp"
#include "core/response.hpp"
#include "core/retry.hpp"

namespace kstate {

namespace asio = boost::asio;

// What failed when a request got no HTTP answer: the step it reached, and whether a
// deadline ran out there (kstate_api_request_failures_total{verb,failure}).
enum class RequestFailure {
  client,              // not sent: kstate refused it (a header with a control character, an unusable certificate)
  resolve,             // the server's name did not resolve
  connect,             // the TCP connection was refused or unreachable
  connect_timeout,     // no connection within connect-timeout
  tls,                 // the TLS handshake failed (certificate, protocol)
  tls_timeout,         // the TLS handshake did not complete within connect-timeout
  write,               // the connection broke while the request was written
  timeout,             // no whole answer within request-timeout
  read,                // the connection broke while the answer was read
  response_too_large,  // the answer was over the response limits
};
std::string_view to_string(RequestFailure failure);  // "connect_timeout", ...

// Counters for /metrics: answered requests by "VERB CODE", requests without an answer
// by "VERB FAILURE", and retries.
struct TransportStats {
  std::map<std::string, std::uint64_t> requests;  // e.g. {"GET 200": 12, "PATCH 409": 1}
  std::map<std::string, std::uint64_t> failures;  // e.g. {"GET connect": 2, "PATCH timeout": 1}
  std::uint64_t retries = 0;
  std::uint64_t total_requests() const;  // answered or not
};

// The body of a streaming response (watch), read chunk by chunk.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // The next bytes of the body; an empty string when the stream ended cleanly.
  virtual asio::awaitable<Result<std::string>> read_some() = 0;
};

// What the transport knows of the API server's reachability (reachability.hpp).
struct ServerStatus {
  Reachability reachability = Reachability::unknown;
  std::string reason;  // the failure, while not_answering or down
  std::chrono::steady_clock::time_point since{};
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends the request (with retries as the policy allows) and reads the whole
  // response. 2xx and 304 are returned; any other status becomes an Error built from
  // the Status body (http_status, reason, message, causes, retry_after_seconds).
  virtual asio::awaitable<Result<Response>> send(Request request) = 0;
  // Sends a streaming request (watch) and returns once the headers arrived with 2xx.
  virtual asio::awaitable<Result<std::unique_ptr<ResponseStream>>> open_stream(Request request) = 0;
  virtual TransportStats stats() const = 0;
  // Whether the server answers; a transport that cannot tell says `unknown`.
  virtual ServerStatus server_status() const { return {}; }
};

struct TransportOptions {
  double qps = 500.0;  // --qps; <= 0: unlimited
  int burst = 2000;    // --burst
  std::size_t max_in_flight = 32;
  std::chrono::milliseconds request_timeout{30'000};  // per attempt: connect + send + whole response
  // Per attempt that opens a connection: TCP connect and TLS handshake (within
  // request_timeout), so that a server that accepts connections and never completes a
  // handshake is given up on in seconds. kubectl's dialer uses 30 s and its TLS
  // handshake 10 s. (Name resolution is not bounded by it.)
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds watch_idle_timeout{330'000};      // a watch with no byte for this long is dead
  std::chrono::milliseconds idle_connection_timeout{60'000};  // pooled connections older than this are closed
  std::size_t max_idle_connections = 16;
  // Largest response body read (not for watches, read chunk by chunk): a Content-Length
  // above it is refused as soon as the headers arrive, a chunked body once it passes
  // it. The largest answers kstate asks for are LIST pages (request.hpp: 500 objects a
  // page), a few MB even for big CRDs (the API server holds objects up to 1.5 MiB, so
  // 500 of them could in theory reach ~750 MiB; kube-apiserver cuts pages by count, and
  // a page that large has not been seen); discovery documents are a few hundred kB.
  std::size_t max_response_bytes = 64u * 1024u * 1024u;
  RetryPolicy retry;
  // While the server is down (reachability.hpp), one attempt per this interval is sent
  // to find out whether it is back; the others fail at once.
  std::chrono::milliseconds probe_interval{1'000};
  // Called when the server's reachability changes (answering <-> not answering / down),
  // e.g. for the daemon to log it; on the transport's thread.
  std::function<void(const ServerStatus&)> on_server_status;
  // Injected for tests: jitter source in [0,1) and the clock of the token bucket.
  std::function<double()> random;
  std::function<std::chrono::steady_clock::time_point()> clock;
  std::string user_agent;  // default "kstate/<version>"
};

// A transport to config.server (https://, or http:// for tests). Fails when the TLS
// configuration cannot be used (bad CA or client certificate PEM, unsupported URL).
// Logs one warning when TLS verification is disabled.
Result<std::unique_ptr<Transport>> make_http_transport(asio::any_io_executor executor, const ClientConfig& config,
                                                       std::unique_ptr<CredentialSource> credentials,
                                                       TransportOptions options = {});

// Splits a server URL: scheme ("https"/"http"), host (IPv6 without brackets), port
// (default 443/80) and path prefix (without trailing '/').
struct ServerAddress {
  std::string scheme;
  std::string host;
  std::string port;
  std::string path_prefix;
};
Result<ServerAddress> parse_server_url(std::string_view url);

}  // namespace kstate
