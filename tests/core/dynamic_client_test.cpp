// DynamicClient and the HTTPS transport against kstate-emulator: every verb, list
// paging, TLS with a client certificate, typed errors, Retry-After (measured),
// retries of reads after a dropped connection but never of a POST, and secrets
// hygiene (planted token and Secret value never reach a trace-level log).
#include "core/dynamic_client.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "tests/support/api_resources.hpp"
#include "tests/support/emulator.hpp"

namespace dynamic_client_test {

using namespace kstate;
using kstate::testing::Emulator;

namespace {

struct Session {
  boost::asio::io_context io;
  std::unique_ptr<Client> client;
  Session(const Emulator& emulator, const std::string& context = "") {
    KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.context = context;
    TransportOptions options;
    options.retry.backoff_base = std::chrono::milliseconds(5);
    options.request_timeout = std::chrono::seconds(10);
    auto made = make_client(io.get_executor(), sources, options);
    REQUIRE(made.ok());
    client = std::move(made.value());
  }
  DynamicClient& dynamic() { return *client->dynamic; }
  TransportStats stats() const { return client->transport->stats(); }
};

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

json::Document configmap(const std::string& name, const std::string& value) {
  return json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":{"key":")" +
                     value + R"("}})")
      .value();
}

std::string data_key(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"data", "key"}), ""));
}

}  // namespace

TEST_CASE("DynamicClient: create, get, replace, every patch type, list pages, delete", "[client][emulator]") {
  Emulator emulator;
  Session session(emulator);
  auto& client = session.dynamic();
  auto resource = configmaps();

  auto created = run_sync(session.io, client.create(resource, "default", configmap("one", "a")));
  REQUIRE(created.ok());
  CHECK(data_key(*created) == "a");
  auto duplicate = run_sync(session.io, client.create(resource, "default", configmap("one", "a")));
  REQUIRE_FALSE(duplicate.ok());
  CHECK(duplicate.error().kind == ErrorKind::already_exists);
  CHECK(duplicate.error().http_status == 409);

  auto fetched = run_sync(session.io, client.get(resource, "default", "one"));
  REQUIRE(fetched.ok());
  CHECK(data_key(*fetched) == "a");

  // Replace with the current resourceVersion; a stale one is a Conflict.
  auto replacement = json::copy(*fetched);
  json::find(replacement, "data")->FindMember("key")->value.SetString("b", replacement.GetAllocator());
  auto replaced = run_sync(session.io, client.replace(resource, "default", "one", replacement));
  REQUIRE(replaced.ok());
  CHECK(data_key(*replaced) == "b");
  auto stale = run_sync(session.io, client.replace(resource, "default", "one", replacement));
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().kind == ErrorKind::conflict);

  auto merged =
      run_sync(session.io, client.patch(resource, "default", "one", PatchType::merge, R"({"data":{"key":"c"}})"));
  REQUIRE(merged.ok());
  CHECK(data_key(*merged) == "c");
  auto json_patched = run_sync(session.io, client.patch(resource, "default", "one", PatchType::json,
                                                        R"([{"op":"replace","path":"/data/key","value":"d"}])"));
  REQUIRE(json_patched.ok());
  CHECK(data_key(*json_patched) == "d");
  auto strategic =
      run_sync(session.io, client.patch(resource, "default", "one", PatchType::strategic, R"({"data":{"key":"e"}})"));
  REQUIRE(strategic.ok());
  CHECK(data_key(*strategic) == "e");
  WriteOptions apply_options;
  apply_options.field_manager = "kstate-test";
  apply_options.force = true;
  auto applied = run_sync(session.io, client.patch(resource, "default", "one", PatchType::apply,
                                                   json::dump(configmap("one", "f")), apply_options));
  REQUIRE(applied.ok());
  CHECK(data_key(*applied) == "f");
  // dryRun: the answer shows the change, the server keeps the old object.
  WriteOptions dry_run;
  dry_run.dry_run = true;
  auto dry = run_sync(session.io,
                      client.patch(resource, "default", "one", PatchType::merge, R"({"data":{"key":"z"}})", dry_run));
  REQUIRE(dry.ok());
  CHECK(data_key(*dry) == "z");
  CHECK(data_key(*run_sync(session.io, client.get(resource, "default", "one"))) == "f");

  // List follows continue tokens across pages.
  for (int i = 0; i < 5; ++i) {
    REQUIRE(run_sync(session.io, client.create(resource, "default", configmap("page-" + std::to_string(i), "x"))).ok());
  }
  emulator.reset_request_log();
  ListOptions small_pages;
  small_pages.limit = 2;
  auto listed = run_sync(session.io, client.list(resource, "default", small_pages));
  REQUIRE(listed.ok());
  CHECK(json::find(*listed, "items")->Size() >= 6);
  CHECK(emulator.count_requests("GET", "/api/v1/namespaces/default/configmaps") >= 3);
  CHECK(json::find_path(*listed, {"metadata", "continue"}) == nullptr);

  auto removed = run_sync(session.io, client.remove(resource, "default", "one"));
  REQUIRE(removed.ok());
  auto gone = run_sync(session.io, client.get(resource, "default", "one"));
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().kind == ErrorKind::not_found);
  CHECK(gone.error().reason == "NotFound");

  ListOptions pages_selector;
  auto collection = run_sync(session.io, client.delete_collection(resource, "default", pages_selector));
  REQUIRE(collection.ok());
  // Every one is gone but kube-root-ca.crt, which the emulator (as kube-controller-manager)
  // publishes again in every namespace, sometimes before this LIST (seen under ASan).
  auto left = run_sync(session.io, client.list(resource, "default"));
  REQUIRE(left.ok());
  for (const auto& item : json::find(*left, "items")->GetArray()) {
    CHECK(json::string_or(json::find_path(item, {"metadata", "name"}), "") == "kube-root-ca.crt");
  }

  auto stats = session.stats();
  CHECK(stats.requests["POST 201"] >= 6);
  CHECK(stats.requests["GET 404"] == 1);
}

TEST_CASE("DynamicClient: objects it returns carry no managedFields, which the server keeps", "[client][emulator]") {
  Emulator emulator;
  Session session(emulator);
  auto& client = session.dynamic();
  auto resource = configmaps();
  WriteOptions apply_options;
  apply_options.field_manager = "kstate-test";
  auto applied = run_sync(session.io, client.patch(resource, "default", "kept", PatchType::apply,
                                                   json::dump(configmap("kept", "a")), apply_options));
  REQUIRE(applied.ok());
  CHECK(json::find_path(*applied, {"metadata", "managedFields"}) == nullptr);
  CHECK(data_key(*applied) == "a");
  auto fetched = run_sync(session.io, client.get(resource, "default", "kept"));
  REQUIRE(fetched.ok());
  CHECK(json::find_path(*fetched, {"metadata", "managedFields"}) == nullptr);
  CHECK_FALSE(json::string_or(json::find_path(*fetched, {"metadata", "resourceVersion"}), "").empty());
  ListOptions everything;
  auto listed = run_sync(session.io, client.list(resource, "default", everything));
  REQUIRE(listed.ok());
  REQUIRE(json::find(*listed, "items")->Size() >= 1);  // (with kube-root-ca.crt)
  for (const auto& item : json::find(*listed, "items")->GetArray()) {
    CHECK(json::find_path(item, {"metadata", "managedFields"}) == nullptr);
  }
  // A replace of what was read does not clear them on the server (an update without
  // managedFields keeps the stored ones, as kube-apiserver does).
  auto replaced = run_sync(session.io, client.replace(resource, "default", "kept", *fetched));
  REQUIRE(replaced.ok());
  auto raw = emulator.request("GET", "/api/v1/namespaces/default/configmaps/kept");
  REQUIRE(raw.status == 200);
  CHECK(raw.body.find("\"manager\":\"kstate-test\"") != std::string::npos);
}

TEST_CASE("transport: client certificates, forbidden writes and an unreachable server", "[client][emulator]") {
  Emulator emulator;
  Session by_certificate(emulator, "cert-admin");
  auto created =
      run_sync(by_certificate.io, by_certificate.dynamic().create(configmaps(), "default", configmap("c", "x")));
  REQUIRE(created.ok());

  Session readonly(emulator, "readonly");
  auto denied = run_sync(readonly.io, readonly.dynamic().create(configmaps(), "default", configmap("d", "x")));
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.error().kind == ErrorKind::forbidden);
  CHECK(readonly.stats().retries == 0);

  // The CA must match: a config with another CA fails the handshake.
  ClientConfig wrong_ca = by_certificate.client->config;
  wrong_ca.certificate_authority_pem = "";  // system trust store: does not know the emulator's CA
  boost::asio::io_context io;
  auto transport = make_http_transport(io.get_executor(), wrong_ca, make_credential_source(wrong_ca));
  REQUIRE(transport.ok());
  DynamicClient untrusted(*transport.value());
  auto refused = run_sync(io, untrusted.get(configmaps(), "default", "c"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::tls);
}

TEST_CASE("transport: 429 honours Retry-After (measured) and reads survive a dropped connection",
          "[client][emulator]") {
  Emulator emulator;
  Session session(emulator);
  auto& client = session.dynamic();
  REQUIRE(run_sync(session.io, client.create(configmaps(), "default", configmap("r", "x"))).ok());

  emulator.set_faults(R"({"failNext": 1, "failCode": 429, "retryAfterSeconds": 1})");
  auto start = std::chrono::steady_clock::now();
  auto throttled = run_sync(session.io, client.get(configmaps(), "default", "r"));
  auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE(throttled.ok());
  CHECK(waited >= std::chrono::milliseconds(1000));
  CHECK(waited < std::chrono::milliseconds(3000));
  CHECK(session.stats().requests["GET 429"] == 1);
  CHECK(session.stats().retries == 1);

  emulator.set_faults(R"({"closeNext": 1})");
  auto after_drop = run_sync(session.io, client.get(configmaps(), "default", "r"));
  REQUIRE(after_drop.ok());
  CHECK(session.stats().retries == 2);
  emulator.clear_faults();
}

TEST_CASE("transport: a POST is not sent again after the connection dropped", "[client][emulator]") {
  Emulator emulator;
  Session session(emulator);
  auto& client = session.dynamic();
  REQUIRE(run_sync(session.io, client.get(configmaps(), "default", "absent")).error().kind == ErrorKind::not_found);
  emulator.set_faults(R"({"closeNext": 1, "method": "POST"})");
  emulator.reset_request_log();
  auto created = run_sync(session.io, client.create(configmaps(), "default", configmap("once", "x")));
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().kind == ErrorKind::connection);
  CHECK(session.stats().retries == 0);
  // Counted once, as a request without an answer (by what failed, never as code 0).
  std::uint64_t post_failures = 0;
  for (const auto& [verb_and_failure, count] : session.stats().failures) {
    if (verb_and_failure.starts_with("POST ")) {
      post_failures += count;
    }
  }
  CHECK(post_failures == 1);
  CHECK(session.stats().requests.count("POST 0") == 0);
  CHECK(emulator.count_requests("POST", "/api/v1/namespaces/default/configmaps") <= 1);
  emulator.clear_faults();
}

TEST_CASE("secrets hygiene: tokens and Secret values never reach the logs, even at trace", "[client][emulator]") {
  Emulator emulator;
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = std::make_shared<spdlog::logger>("hygiene", sink);
  logger->set_level(spdlog::level::trace);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  {
    Session session(emulator);
    auto& client = session.dynamic();
    ApiResource secrets;
    secrets.version = "v1";
    secrets.kind = "Secret";
    secrets.plural = "secrets";
    secrets.namespaced = true;
    const std::string planted = "planted-secret-value-9d1c";
    auto secret =
        json::parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"password":")" +
                    planted + R"("}})");
    REQUIRE(run_sync(session.io, client.create(secrets, "default", *secret)).ok());
    REQUIRE(run_sync(session.io, client.get(secrets, "default", "s")).ok());
    emulator.set_faults(R"({"failNext": 1, "failCode": 500})");
    REQUIRE(run_sync(session.io, client.get(secrets, "default", "s")).ok());             // retried, logged at debug
    CHECK_FALSE(run_sync(session.io, client.create(secrets, "default", *secret)).ok());  // AlreadyExists
    spdlog::default_logger()->flush();
    std::string log = captured.str();
    CHECK(log.find("GET /api/v1/namespaces/default/secrets/s") != std::string::npos);  // the log is not empty
    CHECK(log.find(emulator.admin_token()) == std::string::npos);
    CHECK(log.find(planted) == std::string::npos);
  }
  spdlog::set_default_logger(previous);
}

}  // namespace dynamic_client_test
