// A blocking HTTP/1.1 client for tests (Beast, its own io_context): one request per
// call, or several on one kept-alive connection.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <string>

namespace kstate::testing {

struct HttpResult {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

class HttpConnection {
 public:
  explicit HttpConnection(unsigned short port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  HttpResult request(const std::string& target, boost::beast::http::verb verb = boost::beast::http::verb::get) {
    namespace http = boost::beast::http;
    http::request<http::empty_body> request{verb, target, 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(socket_, request);
    http::response_parser<http::string_body> parser;
    parser.skip(verb == http::verb::head);
    http::read(socket_, buffer_, parser);
    const auto& response = parser.get();
    return {response.result_int(), std::string(response[http::field::content_type]), response.body()};
  }

  // True when the server closed the connection (a read returns end of stream).
  bool closed_by_server() {
    boost::system::error_code ec;
    char byte;
    socket_.read_some(boost::asio::buffer(&byte, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

inline HttpResult http_get(unsigned short port, const std::string& target) {
  HttpConnection connection(port);
  return connection.request(target);
}

}  // namespace kstate::testing
