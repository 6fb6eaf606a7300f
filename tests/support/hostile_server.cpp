// A scripted misbehaving TLS server for tests (see hostile_server.hpp).
#include "tests/support/hostile_server.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kstate::testing {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

std::string to_pem(const std::function<int(BIO*)>& write) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || write(bio) != 1) {
    BIO_free(bio);
    throw std::runtime_error("cannot write PEM");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return pem;
}

}  // namespace

SelfSignedCertificate make_self_signed_certificate() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* certificate = X509_new();
  if (key == nullptr || certificate == nullptr) {
    throw std::runtime_error("cannot make a key");
  }
  X509_set_version(certificate, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate), -60);
  X509_gmtime_adj(X509_getm_notAfter(certificate), 24 * 3600);
  X509_set_pubkey(certificate, key);
  X509_NAME* name = X509_get_subject_name(certificate);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("kstate-hostile"), -1, -1,
                             0);
  X509_set_issuer_name(certificate, name);
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, certificate, certificate, nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair<int, const char*>{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                                   {NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
  }
  X509_sign(certificate, key, EVP_sha256());
  SelfSignedCertificate made;
  made.certificate_pem = to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, certificate); });
  made.key_pem =
      to_pem([&](BIO* bio) { return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(certificate);
  EVP_PKEY_free(key);
  return made;
}

// The coroutines use `this`: the io_context, declared first, is destroyed last, with
// the coroutines still waiting in it.
struct HostileServer::State {
  State(HostileBehaviour behaviour_, std::string answer_)
      : behaviour(behaviour_),
        answer(std::move(answer_)),
        certificate(make_self_signed_certificate()),
        context(ssl::context::tls_server),
        acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    context.use_certificate_chain(net::buffer(certificate.certificate_pem));
    context.use_private_key(net::buffer(certificate.key_pem), ssl::context::pem);
  }

  net::io_context io;
  std::atomic<HostileBehaviour> behaviour;
  std::string answer;
  SelfSignedCertificate certificate;
  ssl::context context;
  tcp::acceptor acceptor;
  std::thread thread;
  std::vector<std::shared_ptr<tcp::socket>> held;  // silent_tcp: kept open, never read
  std::atomic<int> connections{0};
  std::atomic<int> handshakes{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::uint64_t> requests{0};
  mutable std::mutex mutex;
  std::string received;

  net::awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        co_return;
      }
      ++connections;
      if (behaviour.load() == HostileBehaviour::silent_tcp) {
        held.push_back(std::make_shared<tcp::socket>(std::move(socket)));
        continue;
      }
      net::co_spawn(io, serve(std::move(socket)), net::detached);
    }
  }

  // Reads one request head (up to the blank line); false when the connection ended.
  net::awaitable<bool> read_request(ssl::stream<tcp::socket>& stream, std::string& pending) {
    char buffer[4096];
    for (;;) {
      if (auto end = pending.find("\r\n\r\n"); end != std::string::npos) {
        // Skip a body announced by Content-Length (the client's JSON).
        std::size_t length = 0;
        if (auto at = pending.find("Content-Length: "); at != std::string::npos && at < end) {
          length = std::stoul(pending.substr(at + 16));
        }
        while (pending.size() < end + 4 + length) {
          boost::system::error_code ec;
          auto count =
              co_await stream.async_read_some(net::buffer(buffer), net::redirect_error(net::use_awaitable, ec));
          if (ec) {
            co_return false;
          }
          pending.append(buffer, count);
          std::lock_guard lock(mutex);
          received.append(buffer, count);
        }
        pending.erase(0, end + 4 + length);
        ++requests;
        co_return true;
      }
      boost::system::error_code ec;
      auto count = co_await stream.async_read_some(net::buffer(buffer), net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        co_return false;
      }
      pending.append(buffer, count);
      std::lock_guard lock(mutex);
      received.append(buffer, count);
    }
  }

  net::awaitable<bool> send(ssl::stream<tcp::socket>& stream, std::string_view bytes) {
    boost::system::error_code ec;
    auto count = co_await net::async_write(stream, net::buffer(bytes.data(), bytes.size()),
                                           net::redirect_error(net::use_awaitable, ec));
    bytes_sent += count;
    co_return !ec;
  }

  net::awaitable<void> serve(tcp::socket socket) {
    ssl::stream<tcp::socket> stream(std::move(socket), context);
    boost::system::error_code ec;
    co_await stream.async_handshake(ssl::stream_base::server, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      co_return;
    }
    ++handshakes;
    std::string pending;
    if (!co_await read_request(stream, pending)) {
      co_return;
    }
    switch (behaviour.load()) {
      case HostileBehaviour::silent_tcp:
        break;
      case HostileBehaviour::frozen_after_request: {
        // Holds the connection until the client closes it.
        char byte;
        co_await stream.async_read_some(net::buffer(&byte, 1), net::redirect_error(net::use_awaitable, ec));
        break;
      }
      case HostileBehaviour::huge_content_length: {
        if (!co_await send(stream,
                           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           "Content-Length: 1000000000000000\r\n\r\n")) {
          co_return;
        }
        const std::string zeros(64 * 1024, '0');
        while (co_await send(stream, zeros)) {
        }
        break;
      }
      case HostileBehaviour::endless_chunked: {
        if (!co_await send(stream,
                           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n")) {
          co_return;
        }
        const std::string chunk = "10000\r\n" + std::string(64 * 1024, ' ') + "\r\n";
        while (co_await send(stream, chunk)) {
        }
        break;
      }
      case HostileBehaviour::fixed_answer:
        for (;;) {
          if (!co_await send(stream, answer) || !co_await read_request(stream, pending)) {
            break;
          }
          if (behaviour.load() != HostileBehaviour::fixed_answer) {
            // Frozen since: the connection stays open, nothing more is answered.
            char byte;
            co_await stream.async_read_some(net::buffer(&byte, 1), net::redirect_error(net::use_awaitable, ec));
            break;
          }
        }
        break;
    }
  }
};

HostileServer::HostileServer(HostileBehaviour behaviour, std::string answer)
    : state_(std::make_unique<State>(behaviour, std::move(answer))) {
  net::co_spawn(state_->io, state_->accept_loop(), net::detached);
  state_->thread = std::thread([state = state_.get()] { state->io.run(); });
}

HostileServer::~HostileServer() {
  state_->io.stop();
  state_->thread.join();
}

unsigned short HostileServer::port() const {
  return state_->acceptor.local_endpoint().port();
}
std::string HostileServer::url() const {
  return "https://127.0.0.1:" + std::to_string(port());
}
const std::string& HostileServer::ca_pem() const {
  return state_->certificate.certificate_pem;
}
int HostileServer::connections() const {
  return state_->connections;
}
int HostileServer::handshakes() const {
  return state_->handshakes;
}
std::uint64_t HostileServer::bytes_sent() const {
  return state_->bytes_sent;
}
std::uint64_t HostileServer::requests() const {
  return state_->requests;
}
void HostileServer::set_behaviour(HostileBehaviour behaviour) {
  state_->behaviour = behaviour;
}
std::string HostileServer::received() const {
  std::lock_guard lock(state_->mutex);
  return state_->received;
}

}  // namespace kstate::testing
