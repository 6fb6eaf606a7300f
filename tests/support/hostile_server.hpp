// A misbehaving API server for tests of the client's limits and deadlines: a TLS
// listener on 127.0.0.1 with its own self-signed certificate (made in memory with
// OpenSSL, valid for 127.0.0.1), run on its own thread, that does one scripted thing
// with every connection and counts what happened (connections, handshakes, bytes it
// sent, what it received).
//
//   HostileServer server(HostileBehaviour::huge_content_length);
//   ClientConfig config; config.server = server.url(); config.certificate_authority_pem = server.ca_pem();
//   ...  CHECK(server.bytes_sent() < 1 << 20);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace kstate::testing {

enum class HostileBehaviour {
  silent_tcp,            // accepts the connection, reads nothing, never starts the TLS handshake
  frozen_after_request,  // completes the handshake and reads the request, then never answers
  huge_content_length,   // answers 200 with Content-Length: 10^15, then sends zeros until the client goes
  endless_chunked,       // answers 200 with a chunked body of 64 KiB chunks that never ends
  fixed_answer,          // answers `answer` (a whole HTTP response) to every request, keeps the connection
};

class HostileServer {
 public:
  explicit HostileServer(HostileBehaviour behaviour, std::string answer = {});
  ~HostileServer();
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  // From now on (new connections, and the next request of an open one; a fixed_answer
  // connection that turns frozen_after_request holds the request it just read).
  void set_behaviour(HostileBehaviour behaviour);
  unsigned short port() const;
  std::string url() const;            // https://127.0.0.1:<port>
  const std::string& ca_pem() const;  // the server's certificate, to trust it
  int connections() const;
  int handshakes() const;  // TLS handshakes completed
  std::uint64_t bytes_sent() const;
  std::uint64_t requests() const;  // request heads received
  std::string received() const;    // every decrypted byte received, all connections

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A self-signed certificate and its key (PEM) for `127.0.0.1` and `localhost`.
struct SelfSignedCertificate {
  std::string certificate_pem;
  std::string key_pem;
};
SelfSignedCertificate make_self_signed_certificate();

}  // namespace kstate::testing
