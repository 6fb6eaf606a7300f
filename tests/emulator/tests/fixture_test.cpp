// kstate-emulator as a process, through the shared Emulator fixture: start-up
// contract, TLS + authentication, persistence across restarts, the request log
// and fault injection over the admin-only /emulator/ paths.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"

namespace fixture_test {

using namespace kstate;
using kstate::testing::Emulator;

namespace {

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string config_map(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":{"k":"v"}})";
}

json::Document parse(const std::string& text) {
  auto doc = json::parse(text);
  return doc ? std::move(*doc) : json::Document();
}

}  // namespace

TEST_CASE("the emulator starts on a free loopback port and writes a kubeconfig with three users") {
  Emulator emulator;
  CHECK(emulator.url().rfind("https://127.0.0.1:", 0) == 0);
  CHECK(emulator.port() > 0);
  auto kubeconfig = kstate::testing::read_file(emulator.kubeconfig_path());
  CHECK(kubeconfig.find("certificate-authority-data:") != std::string::npos);
  CHECK(kubeconfig.find("server: " + emulator.url()) != std::string::npos);
  CHECK(kubeconfig.find("- name: readonly") != std::string::npos);
  CHECK(kubeconfig.find("client-certificate-data:") != std::string::npos);
  CHECK(kubeconfig.find("current-context: kstate-emulator") != std::string::npos);
  CHECK_FALSE(emulator.admin_token().empty());
  auto version = emulator.request("GET", "/version");
  REQUIRE(version.status == 200);
  CHECK(json::string_or(json::find(parse(version.body), "gitVersion"), "") == "v1.31.0");
}

TEST_CASE("option --version sets what /version reports") {
  kstate::testing::EmulatorOptions options;
  options.version = "1.29";
  Emulator emulator(options);
  auto version = parse(emulator.request("GET", "/version").body);
  CHECK(json::string_or(json::find(version, "minor"), "") == "29");
}

TEST_CASE("HTTPS authentication: admin token, read-only token (403 on writes), bad or no token (401)") {
  Emulator emulator;
  CHECK(emulator.request("POST", kConfigMaps, config_map("a")).status == 201);
  auto readonly_get = emulator.request("GET", kConfigMaps + "/a", "", "application/json", emulator.readonly_token());
  CHECK(readonly_get.status == 200);
  auto readonly_write =
      emulator.request("POST", kConfigMaps, config_map("b"), "application/json", emulator.readonly_token());
  CHECK(readonly_write.status == 403);
  CHECK(json::string_or(json::find(parse(readonly_write.body), "reason"), "") == "Forbidden");
  auto anonymous = emulator.request("GET", kConfigMaps, "", "application/json", std::string());
  CHECK(anonymous.status == 401);
  CHECK(json::string_or(json::find(parse(anonymous.body), "kind"), "") == "Status");
  CHECK(emulator.request("GET", kConfigMaps, "", "application/json", std::string("wrong-token")).status == 401);
  // The control paths are admin-only.
  CHECK(emulator.request("GET", "/emulator/requests", "", "application/json", emulator.readonly_token()).status == 403);
}

TEST_CASE("objects survive a restart (graceful and SIGKILL) with --data-dir - resourceVersions keep growing") {
  Emulator emulator;
  REQUIRE(emulator.request("POST", kConfigMaps, config_map("kept")).status == 201);
  auto before = parse(emulator.request("GET", kConfigMaps + "/kept").body);
  auto port = emulator.port();
  emulator.restart();
  CHECK(emulator.port() == port);
  auto after = emulator.request("GET", kConfigMaps + "/kept");
  REQUIRE(after.status == 200);
  CHECK(parse(after.body) == before);
  REQUIRE(emulator.request("POST", kConfigMaps, config_map("second")).status == 201);
  emulator.crash();
  emulator.restart();
  CHECK(emulator.request("GET", kConfigMaps + "/second").status == 200);
  auto third = parse(emulator.request("POST", kConfigMaps, config_map("third")).body);
  auto rv = [](const json::Value& o) {
    return std::stoull(std::string(json::string_or(json::find_path(o, {"metadata", "resourceVersion"}), "0")));
  };
  CHECK(rv(third) > rv(before));
}

TEST_CASE("the request log records method, path, verb and code, and can be reset") {
  Emulator emulator;
  emulator.reset_request_log();
  emulator.request("POST", kConfigMaps, config_map("a"));
  emulator.request("GET", kConfigMaps + "/a");
  emulator.request("GET", kConfigMaps + "/missing");
  emulator.request("GET", kConfigMaps + "?labelSelector=x%3Dy");
  CHECK(emulator.count_requests("GET", kConfigMaps) == 3);
  CHECK(emulator.count_requests("POST", kConfigMaps) == 1);
  auto log = parse(emulator.request_log());
  CHECK(json::find(log, "total")->GetUint64() == 4);
  CHECK(json::find_path(log, {"counters", "verb", "get"})->GetUint64() == 2);
  CHECK(json::find_path(log, {"counters", "verb", "list"})->GetUint64() == 1);
  CHECK(json::find_path(log, {"counters", "code", "404"})->GetUint64() == 1);
  const auto& last = (*json::find(log, "requests"))[3];
  CHECK(json::string_or(json::find(last, "query"), "") == "labelSelector=x%3Dy");
  emulator.reset_request_log();
  CHECK(emulator.count_requests("", "/") == 0);
}

TEST_CASE("the request log says how long the API handled each request, without the time it was held") {
  // Benchmarks subtract this as "the server's time": a held request must not count as
  // handling, or a client's own slowness could hide behind it.
  Emulator emulator;
  emulator.set_faults(R"({"latencyMs":300,"method":"POST","pathPrefix":"/api/v1/namespaces/default/configmaps"})");
  emulator.reset_request_log();
  const auto sent = std::chrono::steady_clock::now();
  REQUIRE(emulator.request("POST", kConfigMaps, config_map("timed")).status == 201);
  const auto round_trip_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - sent).count();
  auto log = parse(emulator.request_log());
  REQUIRE(json::find(log, "requests")->Size() == 1);
  const json::Value* handled = json::find((*json::find(log, "requests"))[0], "handledUs");
  REQUIRE(handled != nullptr);
  REQUIRE(handled->IsInt64());
  CHECK(handled->GetInt64() >= 0);
  CHECK(round_trip_us >= 300000);
  CHECK(handled->GetInt64() < round_trip_us - 300000 + 1000);
}

TEST_CASE("a request held by an injected latency is listed as delayed and served once released") {
  Emulator emulator;
  emulator.set_faults(R"({"latencyMs":600000,"method":"POST","pathPrefix":"/api/v1/namespaces/default/configmaps"})");
  auto held = std::async(std::launch::async, [&] { return emulator.request("POST", kConfigMaps, config_map("late")); });
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       emulator.count_delayed("POST", kConfigMaps) == 0 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(emulator.count_delayed("POST", kConfigMaps, 600000) == 1);
  CHECK(emulator.count_delayed("PATCH", kConfigMaps) == 0);
  CHECK(emulator.count_delayed("POST", kConfigMaps, 600001) == 0);
  // Not served yet: the object does not exist, the log does not have it.
  CHECK(emulator.request("GET", kConfigMaps + "/late").status == 404);
  CHECK(emulator.count_requests("POST", kConfigMaps) == 0);
  emulator.release_delayed();
  CHECK(held.get().status == 201);
  CHECK(emulator.count_delayed("", "/") == 0);
  CHECK(emulator.request("GET", kConfigMaps + "/late").status == 200);
}

TEST_CASE("faults: the next N requests get 429 with Retry-After, then requests succeed again") {
  Emulator emulator;
  emulator.set_faults(
      R"({"failNext":2,"failCode":429,"retryAfterSeconds":3,"pathPrefix":"/api/v1/namespaces/default/configmaps"})");
  auto first = emulator.request("GET", kConfigMaps);
  CHECK(first.status == 429);
  CHECK(first.headers["retry-after"] == "3");
  CHECK(json::string_or(json::find(parse(first.body), "reason"), "") == "TooManyRequests");
  CHECK(emulator.request("GET", "/api/v1/namespaces").status == 200);  // outside the prefix
  CHECK(emulator.request("GET", kConfigMaps).status == 429);
  CHECK(emulator.request("GET", kConfigMaps).status == 200);
}

TEST_CASE("faults: an injected 404 is a path not served, as kube-apiserver answers it (text/plain)") {
  Emulator emulator;
  emulator.set_faults(R"({"failNext":1,"failCode":404,"method":"GET"})");
  auto refused = emulator.request("GET", kConfigMaps);
  CHECK(refused.status == 404);
  CHECK(refused.headers["content-type"] == "text/plain; charset=utf-8");
  CHECK(refused.body == "404 page not found\n");
  CHECK(emulator.request("GET", kConfigMaps).status == 200);
}

TEST_CASE("faults: the next N matching answers carry a Warning header, quoted as kube-apiserver quotes it") {
  Emulator emulator;
  emulator.set_faults(R"({"warnNext":1,"warning":"webhook says \"hi\"","method":"GET"})");
  CHECK(emulator.request("POST", kConfigMaps, config_map("quiet")).headers.count("warning") == 0);  // not a GET
  auto warned = emulator.request("GET", kConfigMaps);
  CHECK(warned.status == 200);
  CHECK(warned.headers["warning"] == R"(299 - "webhook says \"hi\"")");
  CHECK(emulator.request("GET", kConfigMaps).headers.count("warning") == 0);
}

TEST_CASE("faults: \"path\" matches one path exactly, not the paths below it") {
  Emulator emulator;
  emulator.set_faults(R"({"failFraction":1.0,"failCode":403,"method":"GET","path":"/api/v1/namespaces"})");
  CHECK(emulator.request("GET", "/api/v1/namespaces").status == 403);
  CHECK(emulator.request("GET", kConfigMaps).status == 200);
  CHECK(emulator.request("GET", "/api/v1/namespaces/default").status == 200);
  CHECK(emulator.request("GET", "/api/v1/namespaces").status == 403);
}

TEST_CASE("faults: 503, latency, a fraction and closed connections") {
  Emulator emulator;
  emulator.set_faults(R"({"failNext":1,"failCode":503})");
  CHECK(emulator.request("GET", kConfigMaps).status == 503);

  emulator.set_faults(R"({"latencyMs":300})");
  auto start = std::chrono::steady_clock::now();
  CHECK(emulator.request("GET", kConfigMaps).status == 200);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));

  emulator.set_faults(R"({"failFraction":1.0,"failCode":500})");
  CHECK(emulator.request("GET", kConfigMaps).status == 500);
  emulator.clear_faults();
  CHECK(emulator.request("GET", kConfigMaps).status == 200);

  // A cut-off response: the write happened, the client sees a broken connection.
  emulator.set_faults(R"({"closeNext":1})");
  auto cut = emulator.request("POST", kConfigMaps, config_map("cut"));
  CHECK(cut.status == 0);
  CHECK_FALSE(cut.error.empty());
  CHECK(emulator.request("GET", kConfigMaps + "/cut").status == 200);

  CHECK(emulator.request("POST", "/emulator/faults", R"({"bogus":1})").status == 400);
}

TEST_CASE("watch over HTTPS streams chunked events from a resourceVersion and reports 410 after compaction") {
  Emulator emulator;
  auto created = parse(emulator.request("POST", kConfigMaps, config_map("w1")).body);
  std::string version(json::string_or(json::find_path(created, {"metadata", "resourceVersion"}), ""));
  emulator.request("POST", kConfigMaps, config_map("w2"));
  emulator.request("DELETE", kConfigMaps + "/w1");
  auto watch = emulator.request("GET", kConfigMaps + "?watch=true&timeoutSeconds=1&resourceVersion=" + version);
  REQUIRE(watch.status == 200);
  CHECK(watch.headers["transfer-encoding"] == "chunked");
  auto first_newline = watch.body.find('\n');
  REQUIRE(first_newline != std::string::npos);
  auto first = parse(watch.body.substr(0, first_newline));
  CHECK(json::string_or(json::find(first, "type"), "") == "ADDED");
  CHECK(json::string_or(json::find_path(first, {"object", "metadata", "name"}), "") == "w2");
  CHECK(watch.body.find("\"type\":\"DELETED\"") != std::string::npos);

  emulator.compact();
  auto expired = emulator.request("GET", kConfigMaps + "?watch=true&timeoutSeconds=1&resourceVersion=" + version);
  REQUIRE(expired.status == 200);
  auto error = parse(expired.body.substr(0, expired.body.find('\n')));
  CHECK(json::string_or(json::find(error, "type"), "") == "ERROR");
  CHECK(json::find_path(error, {"object", "code"})->GetInt() == 410);
}

TEST_CASE("a hang fault never answers: the client's own deadline must fire") {
  Emulator emulator;
  emulator.set_faults(R"({"hangNext":1})");
  auto start = std::chrono::steady_clock::now();
  auto hung = emulator.request("GET", kConfigMaps, "", "application/json", std::nullopt, {}, std::chrono::seconds(1));
  CHECK(hung.status == 0);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::seconds(1));
  CHECK(emulator.request("GET", kConfigMaps).status == 200);
  CHECK(emulator.request_log().find("\"fault\":\"hang\"") != std::string::npos);
}

TEST_CASE("SIGTERM with a watch still open ends the emulator with exit code 0 instead of a crash") {
  // Found by bench runs: `kubectl wait` leaves a watch the emulator still serves when
  // the bench stops it, and the emulator died of SIGSEGV on the way out.
  Emulator emulator;
  emulator.request("POST", kConfigMaps, config_map("watched"));
  // The client gives up after a second; the server side of the watch waits on.
  auto watch = emulator.request("GET", kConfigMaps + "?watch=true&timeoutSeconds=60", "", "application/json",
                                std::nullopt, {}, std::chrono::seconds(1));
  CHECK(watch.status == 0);
  CHECK(emulator.stop() == 0);
}

}  // namespace fixture_test
