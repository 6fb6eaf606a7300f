// Helpers for driving ApiServer directly in unit tests: a controllable clock and
// one-line request builders (admin identity unless stated).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/json.hpp"
#include "tests/emulator/api_server.hpp"

namespace kstate::emulator::test {

struct FakeClock {
  std::chrono::system_clock::time_point now = std::chrono::system_clock::from_time_t(1'700'000'000);
  void advance(std::chrono::milliseconds by) { now += by; }
};

struct Harness {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  ApiServer api;

  explicit Harness(ApiServer::Options options = {})
      : api(
            std::move(options), [c = clock] { return c->now; }, 42) {}

  Response call(const std::string& method, const std::string& target, const std::string& body = "",
                const std::string& content_type = "application/json", Identity identity = admin(),
                const std::string& accept = "application/json") {
    Request request;
    request.method = method;
    auto question = target.find('?');
    request.path = target.substr(0, question);
    if (question != std::string::npos) {
      std::string query = target.substr(question + 1);
      size_t start = 0;
      while (start <= query.size()) {
        auto amp = query.find('&', start);
        auto part = query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
        auto eq = part.find('=');
        request.query[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
        if (amp == std::string::npos) {
          break;
        }
        start = amp + 1;
      }
    }
    request.body = body;
    request.content_type = content_type;
    request.accept = accept;
    request.user_agent = "unit-test/1.0";
    request.identity = std::move(identity);
    Response response = api.handle(request);
    if (response.hold.count() > 0) {
      // Held (a custom resource's create right after its CRD was established): asked again after the hold.
      clock->advance(response.hold);
      request.held = true;
      response = api.handle(request);
    }
    return response;
  }

  Response get(const std::string& target) { return call("GET", target); }
  Response post(const std::string& target, const std::string& body) { return call("POST", target, body); }
  Response put(const std::string& target, const std::string& body) { return call("PUT", target, body); }
  Response apply(const std::string& target, const std::string& body) {
    return call("PATCH", target, body, "application/apply-patch+yaml");
  }
  Response del(const std::string& target, const std::string& body = "") { return call("DELETE", target, body); }

  static Identity admin() { return {true, "admin", {"system:masters"}, true}; }
  static Identity readonly() { return {true, "readonly", {"system:authenticated"}, false}; }
  static Identity anonymous() { return {}; }
};

inline json::Document parse(const Response& response) {
  auto doc = json::parse(response.body);
  if (!doc) {
    return json::Document();
  }
  return std::move(*doc);
}

inline std::string str(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

}  // namespace kstate::emulator::test
