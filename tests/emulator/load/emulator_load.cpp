// kstate-emulator-load: measures how many requests per second the emulator
// answers, for GET of one object and for creates, over keep-alive HTTPS
// connections (one thread each). Used to fill bench/RESULTS.md:
//   kstate-emulator-load --kubeconfig FILE [--requests 20000] [--connections 4]
// With --corpus DIR it instead POSTs every object of a manifest directory (the bench
// corpus) to its collection, Namespaces first, then the rest spread over the
// connections: the raw-HTTP lower bound for a cold apply of those same objects
// (bench/run.sh); --apply sends them as server-side apply PATCHes, as kstate does.
// CustomResourceDefinitions are skipped (the bench creates them first).
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <chrono>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>
#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.
#include <vector>

#include "core/json.hpp"
#include "manifests/loader.hpp"

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

// One object of the corpus: the collection it is POSTed to and its JSON body.
struct Create {
  std::string collection;
  std::string name;
  std::string body;
};

// The collection path of an object, from its apiVersion and kind. The plural is the
// lower-cased kind + "s", which holds for every kind kstate-bench-corpus writes.
std::string collection_of(const kstate::json::Value& object) {
  std::string api_version{kstate::json::get_string(object, "apiVersion").value_or("v1")};
  std::string kind{kstate::json::get_string(object, "kind").value_or("")};
  std::string plural;
  for (char c : kind) {
    plural += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  plural += "s";
  std::string path = api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  const auto* metadata = kstate::json::find(object, "metadata");
  auto namespace_name = metadata != nullptr ? kstate::json::get_string(*metadata, "namespace") : std::nullopt;
  if (namespace_name && !namespace_name->empty()) {
    path += "/namespaces/" + std::string(*namespace_name);
  }
  return path + "/" + plural;
}

// POSTs `creates` spread round-robin over `connections`; returns the seconds taken.
// With `apply`, each object is a server-side apply PATCH to its own path instead (what
// `kstate apply` sends), with kstate's field manager and force.
double post_all(const Target& target, const std::vector<Create>& creates, int connections, bool apply, int& failures) {
  if (creates.empty()) {
    return 0.0;
  }
  connections = std::max(1, std::min<int>(connections, static_cast<int>(creates.size())));
  std::atomic<int> failed{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    int count = static_cast<int>((creates.size() - static_cast<size_t>(c) + static_cast<size_t>(connections) - 1) /
                                 static_cast<size_t>(connections));
    threads.emplace_back([&, c, count] {
      failed += drive(target, count, [&](int i) {
        const Create& create = creates[static_cast<size_t>(c + i * connections)];
        http::request<http::string_body> request{http::verb::post, create.collection, 11};
        request.set(http::field::content_type, "application/json");
        if (apply) {
          request.method(http::verb::patch);
          request.target(create.collection + "/" + create.name + "?fieldManager=kstate&force=true");
          request.set(http::field::content_type, "application/apply-patch+yaml");
        }
        request.body() = create.body;
        return request;
      });
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  failures += failed;
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count();
}

// --corpus: Namespaces first (the objects in them need them), then everything else.
int run_corpus(const Target& target, const std::string& directory, int connections, bool apply) {
  auto loaded = kstate::manifests::load_paths({directory});
  if (!loaded.ok()) {
    std::cerr << loaded.error_text() << std::endl;
    return 2;
  }
  std::vector<Create> namespaces;
  std::vector<Create> objects;
  for (const auto& state : loaded.states) {
    std::string_view kind = kstate::json::get_string(state.object, "kind").value_or("");
    if (kind == "CustomResourceDefinition") {
      continue;
    }
    const auto* metadata = kstate::json::find(state.object, "metadata");
    std::string name{metadata != nullptr ? kstate::json::get_string(*metadata, "name").value_or("") : ""};
    Create create{collection_of(state.object), name, kstate::json::dump(state.object)};
    (kind == "Namespace" ? namespaces : objects).push_back(std::move(create));
  }
  int failures = 0;
  double seconds = post_all(target, namespaces, connections, apply, failures);
  seconds += post_all(target, objects, connections, apply, failures);
  size_t total = namespaces.size() + objects.size();
  std::cout << (apply ? "CORPUS-APPLY " : "CORPUS ") << total << " requests (" << namespaces.size()
            << " Namespaces first), " << connections << " connections: " << seconds << " s, "
            << static_cast<long>(static_cast<double>(total) / seconds) << " req/s, " << failures << " failures"
            << std::endl;
  return failures == 0 ? 0 : 1;
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
  std::string corpus;
  app.add_option("--corpus", corpus,
                 "instead: POST every object of this manifest directory to its collection (CRDs skipped)");
  bool apply = false;
  app.add_flag("--apply", apply, "with --corpus: server-side apply PATCHes (as kstate sends) instead of POSTs");
  CLI11_PARSE(app, argc, argv);
  Target target = read_kubeconfig(kubeconfig);
  if (!corpus.empty()) {
    return run_corpus(target, corpus, connections, apply);
  }
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
