// The Emulator fixture (see emulator.hpp), with a minimal Beast HTTPS client
// for the control paths; beast::tcp_stream deadlines bound every step.
#include "tests/support/emulator.hpp"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.

#include "core/json.hpp"

#ifndef KSTATE_EMULATOR_PATH
#define KSTATE_EMULATOR_PATH ""
#endif

namespace kstate::testing {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(20);

std::string decode_base64(const std::string& text) {
  std::string out(3 * text.size() / 4 + 1, '\0');
  int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                               reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (length < 0) {
    return {};
  }
  size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  out.resize(static_cast<size_t>(length) - padding);
  return out;
}

}  // namespace

std::filesystem::path emulator_binary() {
  if (const char* override_path = std::getenv("KSTATE_EMULATOR"); override_path != nullptr && *override_path != '\0') {
    return override_path;
  }
  if (std::string_view(KSTATE_EMULATOR_PATH).size() > 0 && std::filesystem::exists(KSTATE_EMULATOR_PATH)) {
    return KSTATE_EMULATOR_PATH;
  }
  return std::filesystem::path(KSTATE_SOURCE_DIR) / "build" / "kstate-emulator";
}

Emulator::Emulator(EmulatorOptions options) : options_(std::move(options)) {
  start();
}

Emulator::~Emulator() {
  if (process_) {
    process_->kill();
  }
}

void Emulator::start() {
  std::vector<std::string> argv = {emulator_binary().string(),
                                   "--listen",
                                   "127.0.0.1:" + std::to_string(port_),
                                   "--kubeconfig-out",
                                   kubeconfig_path().string(),
                                   "--data-dir",
                                   data_dir().string(),
                                   "--crd-establish-delay",
                                   std::to_string(options_.crd_establish_delay_seconds)};
  if (!options_.version.empty()) {
    argv.insert(argv.end(), {"--version", options_.version});
  }
  if (options_.openapi_schemas) {
    argv.emplace_back("--openapi-schemas");
  }
  if (!options_.namespace_controllers) {
    argv.emplace_back("--no-namespace-controllers");
  }
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  process_ = std::make_unique<BackgroundProcess>(argv);
  auto line = process_->read_line(std::chrono::duration_cast<std::chrono::milliseconds>(kStartTimeout));
  const std::string prefix = "listening on ";
  if (!line || line->rfind(prefix, 0) != 0) {
    process_->kill();
    throw std::runtime_error("kstate-emulator (" + argv[0] + ") did not start: " + line.value_or("<no output>"));
  }
  url_ = line->substr(prefix.size());
  port_ = static_cast<std::uint16_t>(std::stoi(url_.substr(url_.rfind(':') + 1)));

  YAML::Node config = YAML::LoadFile(kubeconfig_path().string());
  ca_pem_ = decode_base64(config["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>());
  for (const auto& user : config["users"]) {
    auto name = user["name"].as<std::string>();
    if (name == "admin") {
      admin_token_ = user["user"]["token"].as<std::string>();
    } else if (name == "readonly") {
      readonly_token_ = user["user"]["token"].as<std::string>();
    }
  }
}

int Emulator::stop() {
  if (!process_) {
    return -1;
  }
  const int exit_code = process_->stop(SIGTERM);
  process_.reset();
  return exit_code;
}

void Emulator::crash() {
  if (process_) {
    process_->kill();
    process_.reset();
  }
}

void Emulator::restart() {
  stop();
  start();
}

bool Emulator::running() {
  return process_ && process_->running();
}

HttpReply Emulator::request(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, const std::optional<std::string>& token,
                            const std::map<std::string, std::string>& headers, std::chrono::seconds timeout) const {
  HttpReply reply;
  try {
    net::io_context io;
    ssl::context context(ssl::context::tls_client);
    context.add_certificate_authority(net::buffer(ca_pem_));
    context.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, context);
    http::request<http::string_body> message{http::string_to_verb(method), path, 11};
    message.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    message.set(http::field::user_agent, "kstate-test-fixture/1.0");
    message.set(http::field::accept, "application/json");
    message.set(http::field::connection, "close");
    const std::string& bearer = token.value_or(admin_token_);
    if (!bearer.empty()) {
      message.set(http::field::authorization, "Bearer " + bearer);
    }
    for (const auto& [name, value] : headers) {
      message.set(name, value);
    }
    if (!body.empty()) {
      message.set(http::field::content_type, content_type);
      message.body() = body;
    }
    message.prepare_payload();
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    beast::error_code failure;
    bool complete = false;
    // Asynchronous steps so that beast::tcp_stream's deadline applies to each of them.
    auto& tcp = beast::get_lowest_layer(stream);
    tcp.expires_after(timeout);
    tcp.async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port_), [&](beast::error_code error) {
      if (error) {
        failure = error;
        return;
      }
      tcp.expires_after(timeout);
      stream.async_handshake(ssl::stream_base::client, [&](beast::error_code handshake_error) {
        if (handshake_error) {
          failure = handshake_error;
          return;
        }
        tcp.expires_after(timeout);
        http::async_write(stream, message, [&](beast::error_code write_error, std::size_t) {
          if (write_error) {
            failure = write_error;
            return;
          }
          tcp.expires_after(timeout);
          http::async_read(stream, buffer, response, [&](beast::error_code read_error, std::size_t) {
            failure = read_error;
            complete = !read_error;
          });
        });
      });
    });
    io.run();
    if (!complete) {
      reply.error = failure ? failure.message() : "request did not complete";
      return reply;
    }
    reply.status = static_cast<int>(response.result_int());
    reply.body = response.body();
    for (const auto& field : response) {
      std::string name(field.name_string());
      for (auto& c : name) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      auto& slot = reply.headers[name];
      slot += (slot.empty() ? "" : ", ") + std::string(field.value());
    }
  } catch (const std::exception& error) {
    reply.error = error.what();
  }
  return reply;
}

void Emulator::set_faults(const std::string& settings_json) {
  auto reply = request("POST", "/emulator/faults", settings_json);
  if (reply.status != 200) {
    throw std::runtime_error("set_faults failed: " + std::to_string(reply.status) + " " + reply.body + reply.error);
  }
}

void Emulator::clear_faults() {
  request("DELETE", "/emulator/faults");
}

int Emulator::count_delayed(const std::string& method, const std::string& path_prefix, int min_latency_ms) const {
  auto reply = request("GET", "/emulator/delayed");
  auto body = json::parse(reply.body);
  if (reply.status != 200 || !body) {
    throw std::runtime_error("count_delayed failed: " + std::to_string(reply.status) + " " + reply.error);
  }
  int count = 0;
  const json::Value* delayed = json::find(*body, "delayed");
  if (delayed == nullptr || !delayed->IsArray()) {
    return 0;
  }
  for (const auto& entry : delayed->GetArray()) {
    const json::Value* latency = json::find(entry, "latencyMs");
    if ((method.empty() || json::string_or(json::find(entry, "method"), "") == method) &&
        json::string_or(json::find(entry, "path"), "").starts_with(path_prefix) && latency != nullptr &&
        latency->IsInt() && latency->GetInt() >= min_latency_ms) {
      ++count;
    }
  }
  return count;
}

void Emulator::release_delayed() {
  auto reply = request("POST", "/emulator/delayed");
  if (reply.status != 200) {
    throw std::runtime_error("release_delayed failed: " + std::to_string(reply.status) + " " + reply.error);
  }
}

std::string Emulator::request_log() const {
  auto reply = request("GET", "/emulator/requests");
  if (reply.status != 200) {
    throw std::runtime_error("request_log failed: " + std::to_string(reply.status) + " " + reply.error);
  }
  return reply.body;
}

void Emulator::reset_request_log() {
  request("DELETE", "/emulator/requests");
}

int Emulator::count_requests(const std::string& method, const std::string& path_prefix) const {
  auto log = json::parse(request_log());
  if (!log) {
    throw std::runtime_error("request log is not JSON");
  }
  int count = 0;
  const json::Value* requests = json::find(*log, "requests");
  if (requests == nullptr || !requests->IsArray()) {
    return 0;
  }
  for (const auto& entry : requests->GetArray()) {
    auto entry_method = json::string_or(json::find(entry, "method"), "");
    auto entry_path = json::string_or(json::find(entry, "path"), "");
    if ((method.empty() || entry_method == method) && entry_path.substr(0, path_prefix.size()) == path_prefix) {
      ++count;
    }
  }
  return count;
}

void Emulator::compact() {
  request("POST", "/emulator/compact");
}

}  // namespace kstate::testing
