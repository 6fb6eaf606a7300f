// kstate-emulator-load: measures how many requests per second the emulator
// answers, for GET of one object and for creates, over keep-alive HTTPS
// connections (one thread each). Used to fill bench/RESULTS.md:
//   kstate-emulator-load --kubeconfig FILE [--requests 20000] [--connections 4]
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <iostream>
#include <thread>
#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.
#include <vector>

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

struct Target {
  std::string host;
  std::string port;
  std::string token;
  std::string ca_pem;
};

std::string decode_base64(const std::string& text) {
  std::string out(3 * text.size() / 4 + 1, '\0');
  int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                               reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  out.resize(static_cast<size_t>(std::max(length, 0)) - padding);
  return out;
}

Target read_kubeconfig(const std::string& path) {
  YAML::Node config = YAML::LoadFile(path);
  Target target;
  auto server = config["clusters"][0]["cluster"]["server"].as<std::string>();
  auto host_port = server.substr(server.find("://") + 3);
  target.host = host_port.substr(0, host_port.rfind(':'));
  target.port = host_port.substr(host_port.rfind(':') + 1);
  target.ca_pem = decode_base64(config["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>());
  for (const auto& user : config["users"]) {
    if (user["name"].as<std::string>() == "admin") {
      target.token = user["user"]["token"].as<std::string>();
    }
  }
  return target;
}

// One keep-alive connection sending `count` requests made by `make(i)`; returns failures.
int drive(const Target& target, int count, const std::function<http::request<http::string_body>(int)>& make) {
  net::io_context io;
  ssl::context context(ssl::context::tls_client);
  context.add_certificate_authority(net::buffer(target.ca_pem));
  context.set_verify_mode(ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  net::ip::tcp::resolver resolver(io);
  beast::get_lowest_layer(stream).connect(resolver.resolve(target.host, target.port));
  beast::get_lowest_layer(stream).socket().set_option(net::ip::tcp::no_delay(true));
  stream.handshake(ssl::stream_base::client);
  beast::flat_buffer buffer;
  int failures = 0;
  for (int i = 0; i < count; ++i) {
    auto request = make(i);
    request.set(http::field::host, target.host);
    request.set(http::field::authorization, "Bearer " + target.token);
    request.set(http::field::accept, "application/json");
    request.keep_alive(true);
    request.prepare_payload();
    http::write(stream, request);
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    if (response.result_int() >= 300) {
      ++failures;
    }
  }
  return failures;
}

double run(const Target& target, int requests, int connections,
           const std::function<http::request<http::string_body>(int, int)>& make, int& failures) {
  std::atomic<int> failed{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back(
        [&, c] { failed += drive(target, requests / connections, [&](int i) { return make(c, i); }); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  failures = failed;
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kstate-emulator-load: requests per second against kstate-emulator"};
  std::string kubeconfig;
  int requests = 20000;
  int connections = 4;
  std::string prefix = "bench";
  app.add_option("--kubeconfig", kubeconfig, "the kubeconfig kstate-emulator wrote")->required();
  app.add_option("--requests", requests, "requests per measurement");
  app.add_option("--connections", connections, "parallel keep-alive connections");
  app.add_option("--prefix", prefix, "name prefix of the objects created");
  CLI11_PARSE(app, argc, argv);
  Target target = read_kubeconfig(kubeconfig);
  const std::string collection = "/api/v1/namespaces/default/configmaps";

  int failures = 0;
  // The object every GET reads.
  run(
      target, 1, 1,
      [&](int, int) {
        http::request<http::string_body> request{http::verb::post, collection, 11};
        request.set(http::field::content_type, "application/json");
        request.body() = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + prefix +
                         R"(-get"},"data":{"key":"value"}})";
        return request;
      },
      failures);

  double get_seconds = run(
      target, requests, connections,
      [&](int, int) {
        return http::request<http::string_body>{http::verb::get, collection + "/" + prefix + "-get", 11};
      },
      failures);
  std::cout << "GET    " << requests << " requests, " << connections << " connections: " << get_seconds << " s, "
            << static_cast<long>(requests / get_seconds) << " req/s, " << failures << " failures" << std::endl;

  double create_seconds = run(
      target, requests, connections,
      [&](int connection, int i) {
        http::request<http::string_body> request{http::verb::post, collection, 11};
        request.set(http::field::content_type, "application/json");
        request.body() = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + prefix + "-" +
                         std::to_string(connection) + "-" + std::to_string(i) +
                         R"(","labels":{"app":"bench"}},"data":{"key":"value"}})";
        return request;
      },
      failures);
  std::cout << "CREATE " << requests << " requests, " << connections << " connections: " << create_seconds << " s, "
            << static_cast<long>(requests / create_seconds) << " req/s, " << failures << " failures" << std::endl;
  return failures == 0 ? 0 : 1;
}
