// Reading an HTTP response with kstate's limits (see http_response.hpp).
#include "core/http_response.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <new>

namespace kstate {

namespace http = boost::beast::http;

void BoundedStringBody::reader::init(const boost::optional<std::uint64_t>& length, boost::system::error_code& error) {
  if (length && *length > body_.limit) {
    error = http::error::body_limit;
    return;
  }
  error = {};
  if (length) {
    try {
      body_.text.reserve(static_cast<std::size_t>(*length));  // at most the limit
    } catch (const std::bad_alloc&) {
      error = make_error_code(boost::system::errc::not_enough_memory);
    } catch (const std::length_error&) {
      error = make_error_code(boost::system::errc::not_enough_memory);
    }
  }
}

bool BoundedStringBody::reader::append(const char* bytes, std::size_t size, boost::system::error_code& error) {
  try {
    body_.text.append(bytes, size);
    return true;
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  error = make_error_code(boost::system::errc::not_enough_memory);
  return false;
}

void limit_response(ResponseParser& parser, std::size_t max_body_bytes) {
  parser.header_limit(static_cast<std::uint32_t>(max_response_header_bytes));
  parser.body_limit(max_body_bytes);
  parser.get().body().limit = max_body_bytes;
}

Response to_response(http::response<BoundedStringBody>& message) {
  Response response;
  response.status = static_cast<int>(message.result_int());
  for (const auto& field : message) {
    std::string name(field.name_string());
    for (auto& c : name) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    response.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  response.body = std::move(message.body().text);
  return response;
}

Error response_read_error(const std::string& what, const boost::system::error_code& error, std::size_t max_body_bytes) {
  if (error == http::error::body_limit) {
    return Error(ErrorKind::unsupported, what + ": the response is larger than the limit of " +
                                             std::to_string(max_body_bytes / 1024) +
                                             " KiB (max_response_bytes); not read");
  }
  if (error == http::error::header_limit) {
    return Error(ErrorKind::unsupported, what + ": the response headers are larger than the limit of " +
                                             std::to_string(max_response_header_bytes / 1024) + " KiB; not read");
  }
  if (error == boost::beast::error::timeout) {
    return Error(ErrorKind::timeout, what + ": deadline exceeded");
  }
  if (error == boost::system::errc::not_enough_memory) {
    return Error(ErrorKind::internal, what + ": out of memory reading the response");
  }
  return Error(ErrorKind::connection, what + ": " + error.message());
}

Result<Response> parse_http_response(std::string_view bytes, std::size_t max_body_bytes, std::size_t piece_bytes) {
  const std::string what = "response";
  const std::size_t piece_size = piece_bytes == 0 ? bytes.size() : piece_bytes;
  try {
    ResponseParser parser;
    limit_response(parser, max_body_bytes);
    parser.eager(true);
    std::size_t offset = 0;
    std::string pending;  // bytes read but not consumed yet (the parser wants whole lines)
    boost::system::error_code error;
    while (!parser.is_done()) {
      const std::size_t piece = std::min(piece_size, bytes.size() - offset);
      pending.append(bytes.substr(offset, piece));
      offset += piece;
      const std::size_t used = parser.put(boost::asio::buffer(pending.data(), pending.size()), error);
      pending.erase(0, used);
      if (error == http::error::need_more) {
        error = {};
      } else if (error) {
        return response_read_error(what, error, max_body_bytes);
      }
      if (!parser.is_done() && used == 0 && offset == bytes.size()) {
        if (!parser.got_some()) {
          return response_read_error(what, make_error_code(http::error::partial_message), max_body_bytes);
        }
        // The end of the stream: a body read until the connection closes ends here,
        // anything else was cut short.
        parser.put_eof(error);
        if (error || !parser.is_done()) {
          return response_read_error(what, error ? error : make_error_code(http::error::partial_message),
                                     max_body_bytes);
        }
      }
    }
    return to_response(parser.get());
  } catch (const std::bad_alloc&) {
    return Error(ErrorKind::internal, what + ": out of memory reading the response");
  } catch (const std::length_error&) {
    return Error(ErrorKind::internal, what + ": out of memory reading the response");
  }
}

}  // namespace kstate
