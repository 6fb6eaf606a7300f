// How kstate reads an HTTP response off the wire: the Beast parser with kstate's
// limits (headers, body), the conversion of what it parsed into a Response, and the
// errors a read that failed becomes. The transport uses them on the network; tests and
// the fuzz target (tests/fuzz/http_response_fuzz.cpp) feed bytes from memory through
// the very same steps with parse_http_response.
//
// The body is read into a BoundedStringBody, not Beast's string_body: Beast 1.74 sets
// its body_limit error for a Content-Length over the limit, but when body bytes came
// in the same read as the headers (always, with a server that sends both at once) its
// eager parse goes on into the body and string_body reserves the Content-Length:
// `Content-Length: 1000000000000000` threw std::bad_alloc and aborted kstate. The
// bounded body refuses such a length itself and never reserves more than the limit.
#pragma once

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/optional.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/response.hpp"

namespace kstate {

// Response headers larger than this are refused (kube-apiserver's are a few hundred
// bytes; its Warning headers are capped at 4 kB in total).
inline constexpr std::size_t max_response_header_bytes = 64 * 1024;

// A string body that refuses more than `limit` bytes, whether announced (Content-Length)
// or received (chunked, or read until the connection closes). A failed allocation is
// an error of the read (errc::not_enough_memory), not an exception: Beast runs the
// reader inside an I/O completion handler, from which an exception would leave the
// event loop (io_context::run) instead of the request that asked.
struct BoundedStringBody {
  struct value_type {
    std::string text;
    std::size_t limit = 0;  // set before reading
  };
  static std::uint64_t size(const value_type& body) { return body.text.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>& /*header*/, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, boost::system::error_code& error);
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& error) {
      std::size_t added = 0;
      for (auto buffer : boost::beast::buffers_range_ref(buffers)) {
        if (body_.text.size() + buffer.size() > body_.limit) {
          error = boost::beast::http::error::body_limit;
          return added;
        }
        if (!append(static_cast<const char*>(buffer.data()), buffer.size(), error)) {
          return added;
        }
        added += buffer.size();
      }
      error = {};
      return added;
    }
    void finish(boost::system::error_code& error) { error = {}; }

   private:
    // False (with `error` set) when memory runs out.
    bool append(const char* bytes, std::size_t size, boost::system::error_code& error);
    value_type& body_;
  };
};

using ResponseParser = boost::beast::http::response_parser<BoundedStringBody>;

// Sets the limits on a parser before the first byte is read: a Content-Length above
// `max_body_bytes` is refused when the headers arrive, a chunked body once it passes it.
void limit_response(ResponseParser& parser, std::size_t max_body_bytes);

// The parsed message as a Response (header names lower-cased); moves the body out.
Response to_response(boost::beast::http::response<BoundedStringBody>& message);

// The error of a read that failed (`what`: e.g. "GET /api/v1/pods"). A body or headers
// over the limit are final (ErrorKind::unsupported: asking again brings the same answer);
// anything else is a connection error, a deadline a timeout.
Error response_read_error(const std::string& what, const boost::system::error_code& error, std::size_t max_body_bytes);

// Parses a whole response held in memory, given to the parser in pieces of at most
// `piece_bytes` (as reads from a socket would), with the transport's limits. The
// Response of any status, or the Error the transport would report. A failed allocation
// is an error too (ErrorKind::internal), as in the transport.
Result<Response> parse_http_response(std::string_view bytes, std::size_t max_body_bytes,
                                     std::size_t piece_bytes = 4096);

}  // namespace kstate
