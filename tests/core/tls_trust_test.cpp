// A server whose certificate comes from a CA the kubeconfig does not name is refused
// with a clear TLS error, and the bearer token never reaches it. The server here is
// a raw TLS listener with its own self-made CA that records every byte it receives
// (after decryption, when a handshake completes); a control run that trusts its CA
// shows the recorder does see the token when one is sent.
#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "core/dynamic_client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace tls_trust_test {

using namespace kstate;
using kstate::testing::read_file;
using kstate::testing::run_process;
using kstate::testing::TempDir;

namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

// A TLS server on 127.0.0.1 with a self-signed certificate, run on its own thread.
// It records the decrypted bytes of every connection and how many handshakes failed.
class RecordingTlsServer {
 public:
  RecordingTlsServer(const std::string& certificate_pem, const std::string& key_pem)
      : context_(ssl::context::tls_server), acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    context_.use_certificate_chain(net::buffer(certificate_pem));
    context_.use_private_key(net::buffer(key_pem), ssl::context::pem);
    net::co_spawn(io_, accept_loop(), net::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~RecordingTlsServer() {
    io_.stop();
    thread_.join();
  }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  int connections() {
    std::lock_guard lock(mutex_);
    return connections_;
  }
  int failed_handshakes() {
    std::lock_guard lock(mutex_);
    return failed_handshakes_;
  }

 private:
  net::awaitable<void> accept_loop() {
    for (;;) {
      auto socket = co_await acceptor_.async_accept(net::use_awaitable);
      net::co_spawn(io_, serve(std::move(socket)), net::detached);
    }
  }
  net::awaitable<void> serve(tcp::socket socket) {
    {
      std::lock_guard lock(mutex_);
      ++connections_;
    }
    ssl::stream<tcp::socket> stream(std::move(socket), context_);
    try {
      co_await stream.async_handshake(ssl::stream_base::server, net::use_awaitable);
    } catch (const boost::system::system_error&) {
      std::lock_guard lock(mutex_);
      ++failed_handshakes_;
      co_return;
    }
    char buffer[4096];
    try {
      for (;;) {
        auto count = co_await stream.async_read_some(net::buffer(buffer), net::use_awaitable);
        std::lock_guard lock(mutex_);
        received_.append(buffer, count);
        if (received_.find("\r\n\r\n") != std::string::npos) {
          break;
        }
      }
      std::string reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      co_await net::async_write(stream, net::buffer(reply), net::use_awaitable);
    } catch (const boost::system::system_error&) {
    }
  }

  net::io_context io_;
  ssl::context context_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mutex_;
  std::string received_;
  int connections_ = 0;
  int failed_handshakes_ = 0;
};

struct SelfSigned {
  std::string certificate_pem;
  std::string key_pem;
};

SelfSigned make_self_signed(const TempDir& dir) {
  auto key = dir.path() / "server.key";
  auto certificate = dir.path() / "server.crt";
  auto made = run_process({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                           "-nodes", "-keyout", key.string(), "-out", certificate.string(), "-days", "1", "-subj",
                           "/CN=impostor", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"});
  REQUIRE(made.exit_code == 0);
  return {read_file(certificate), read_file(key)};
}

ApiResource namespaces() {
  ApiResource resource;
  resource.version = "v1";
  resource.kind = "Namespace";
  resource.plural = "namespaces";
  return resource;
}

}  // namespace

TEST_CASE("a server certificate from an unknown CA is refused and the token is never sent", "[tls][security]") {
  TempDir dir;
  auto impostor = make_self_signed(dir);
  RecordingTlsServer server(impostor.certificate_pem, impostor.key_pem);
  const std::string canary = "canary-bearer-token-5f3a9c";

  // The kubeconfig trusts another CA (a real cluster's): the impostor must be refused.
  TempDir other;
  auto trusted = make_self_signed(other);
  ClientConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(server.port());
  config.certificate_authority_pem = trusted.certificate_pem;
  config.token = canary;
  boost::asio::io_context io;
  TransportOptions options;
  options.request_timeout = std::chrono::seconds(5);
  auto transport = make_http_transport(io.get_executor(), config, make_credential_source(config), options);
  REQUIRE(transport.ok());
  DynamicClient client(*transport.value());
  auto refused = run_sync(io, client.get(namespaces(), "", "default"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::tls);
  CHECK(refused.error().message.find("TLS handshake with " + config.server) != std::string::npos);
  CHECK(refused.error().message.find("certificate verify failed") != std::string::npos);
  CHECK(transport.value()->stats().retries == 0);  // a trust failure is not retried
  // The system trust store does not know it either.
  ClientConfig system_store = config;
  system_store.certificate_authority_pem.clear();
  auto system_transport =
      make_http_transport(io.get_executor(), system_store, make_credential_source(system_store), options);
  REQUIRE(system_transport.ok());
  DynamicClient system_client(*system_transport.value());
  auto refused_again = run_sync(io, system_client.get(namespaces(), "", "default"));
  REQUIRE_FALSE(refused_again.ok());
  CHECK(refused_again.error().kind == ErrorKind::tls);

  CHECK(server.connections() == 2);
  CHECK(server.received().empty());
  CHECK(server.received().find(canary) == std::string::npos);
  WARN("unknown CA: " << server.connections() << " connections refused by the client (" << refused.error().message
                      << "), " << server.received().size() << " bytes of request reached the server");

  // Control: trusting the impostor's certificate, the recorder does see the token.
  ClientConfig trusting = config;
  trusting.certificate_authority_pem = impostor.certificate_pem;
  auto trusting_transport = make_http_transport(io.get_executor(), trusting, make_credential_source(trusting), options);
  REQUIRE(trusting_transport.ok());
  DynamicClient trusting_client(*trusting_transport.value());
  auto answered = run_sync(io, trusting_client.get(namespaces(), "", "default"));
  CHECK(answered.error().http_status == 404);
  CHECK(server.received().find("Authorization: Bearer " + canary) != std::string::npos);
}

}  // namespace tls_trust_test
