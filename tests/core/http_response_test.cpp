// Reading an HTTP response with kstate's limits (core/http_response.hpp), from memory:
// what the transport does with the bytes a server sends. A Content-Length above the
// body limit is refused when the headers arrive (before any body byte is stored), a
// chunked body is cut at the limit, headers are bounded, and the errors are final
// (ErrorKind::unsupported: not retried) or connection errors for a cut answer.
#include "core/http_response.hpp"

#include <catch2/catch.hpp>

namespace http_response_test {

using namespace kstate;

namespace {

constexpr std::size_t limit = 1024 * 1024;

std::string chunked(std::size_t chunks, std::size_t chunk_bytes) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk_bytes);
  std::string body;
  for (std::size_t i = 0; i < chunks; ++i) {
    body += size + std::string(chunk_bytes, 'x') + "\r\n";
  }
  return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body + "0\r\n\r\n";
}

}  // namespace

TEST_CASE("http response: a well-formed answer, whatever the read sizes", "[http]") {
  const std::string wire =
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nAudit-Id: abc\r\nContent-Length: 15\r\n\r\n"
      R"({"kind":"Status"})";
  for (std::size_t piece : {1u, 7u, 4096u, 0u}) {
    INFO(piece);
    auto parsed = parse_http_response(wire.substr(0, wire.size() - 2), limit, piece);  // 15 bytes of body
    REQUIRE(parsed.ok());
    CHECK(parsed->status == 404);
    CHECK(parsed->header("audit-id") == "abc");
    CHECK(parsed->body == R"({"kind":"Status)");
  }
  auto whole_chunked = parse_http_response(chunked(3, 10), limit, 5);
  REQUIRE(whole_chunked.ok());
  CHECK(whole_chunked->body == std::string(30, 'x'));
}

TEST_CASE("http response: bodies over the limit are refused, by header or once they pass it", "[http]") {
  // 10^15 bytes announced: refused from the headers alone, also when a body byte comes
  // in the same read (Beast 1.74 then parsed on and its string_body reserved 10^15
  // bytes: std::bad_alloc, kstate aborted).
  auto announced = parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n{", limit);
  REQUIRE_FALSE(announced.ok());
  CHECK(announced.error().kind == ErrorKind::unsupported);
  CHECK_THAT(announced.error().message, Catch::Contains("larger than the limit of 1024 KiB"));
  // One byte over: refused too; exactly the limit: read.
  auto over =
      parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(limit + 1) + "\r\n\r\n", limit);
  CHECK(over.error().kind == ErrorKind::unsupported);
  const std::string exact = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(limit) + "\r\n\r\n";
  CHECK(parse_http_response(exact + std::string(limit, 'y'), limit, 65536).ok());
  // A chunked body is cut once it passes the limit.
  auto endless = parse_http_response(chunked(17, 64 * 1024), limit, 65536);
  REQUIRE_FALSE(endless.ok());
  CHECK(endless.error().kind == ErrorKind::unsupported);
  CHECK(parse_http_response(chunked(16, 64 * 1024), limit, 65536).ok());  // 1 MiB exactly
  // A body read until the connection closes (no length) is bounded the same way.
  auto to_eof =
      parse_http_response("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + std::string(limit + 10, 'z'), limit, 65536);
  CHECK(to_eof.error().kind == ErrorKind::unsupported);
}

TEST_CASE("http response: headers are bounded, garbage and cut answers are connection errors", "[http]") {
  std::string huge_header = "HTTP/1.1 200 OK\r\nX-Junk: " + std::string(max_response_header_bytes, 'j') + "\r\n\r\n";
  auto refused = parse_http_response(huge_header, limit);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::unsupported);
  CHECK_THAT(refused.error().message, Catch::Contains("headers are larger than the limit"));

  auto garbage = parse_http_response("SSH-2.0-OpenSSH_9.2\r\n\r\n", limit);
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().kind == ErrorKind::connection);
  auto cut = parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", limit);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().kind == ErrorKind::connection);
  auto empty = parse_http_response("", limit);
  CHECK(empty.error().kind == ErrorKind::connection);
}

}  // namespace http_response_test
