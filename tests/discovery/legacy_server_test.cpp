// Automatic fallback to legacy discovery against a server without aggregated
// discovery (kstate-emulator --no-aggregated-discovery, which answers the aggregated
// Accept header with legacy JSON, as kube-apiserver before 1.26 does, and with 406
// when the header allows nothing else). DiscoveryClient and `kstate discover` must
// give the same resources as against a modern server, reusing the /api and /apis
// answers they already got: 2 + one request per group-version, counted on both sides.
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "core/dynamic_client.hpp"
#include "discovery/client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace legacy_server_test {

using namespace kstate;
using namespace kstate::discovery;
using kstate::testing::Emulator;
using kstate::testing::EmulatorOptions;
using kstate::testing::run_process;
using kstate::testing::TempDir;

namespace {

struct Session {
  boost::asio::io_context io;
  std::unique_ptr<Client> client;
  explicit Session(const Emulator& emulator) {
    KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    auto made = make_client(io.get_executor(), sources, TransportOptions{});
    REQUIRE(made.ok());
    client = std::move(made.value());
  }
};

std::set<std::string> resource_set(const std::vector<ApiResource>& resources) {
  std::set<std::string> out;
  for (const auto& resource : resources) {
    out.insert(resource.api_version() + " " + resource.plural + " " + resource.kind + " " +
               (resource.namespaced ? "namespaced" : "cluster") + (resource.preferred_version ? " preferred" : ""));
  }
  return out;
}

EmulatorOptions legacy_server() {
  EmulatorOptions options;
  options.extra_args = {"--no-aggregated-discovery"};
  return options;
}

}  // namespace

TEST_CASE("a server without aggregated discovery answers the aggregated Accept header as an old kube-apiserver",
          "[discovery][emulator]") {
  Emulator old_server(legacy_server());
  std::string aggregated_only = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
  std::string with_fallback(aggregated_accept);
  auto refused =
      old_server.request("GET", "/apis", "", "application/json", std::nullopt, {{"Accept", aggregated_only}});
  CHECK(refused.status == 406);
  auto legacy = old_server.request("GET", "/apis", "", "application/json", std::nullopt, {{"Accept", with_fallback}});
  CHECK(legacy.status == 200);
  CHECK(legacy.headers["content-type"].find("apidiscovery") == std::string::npos);
  CHECK(legacy.body.find("\"APIGroupList\"") != std::string::npos);
}

TEST_CASE("DiscoveryClient falls back to legacy discovery by itself and finds the same resources",
          "[discovery][emulator]") {
  Emulator modern;
  Emulator old_server(legacy_server());
  Session modern_session(modern);
  Session old_session(old_server);
  DiscoveryOptions no_cache;
  no_cache.use_cache = false;

  DiscoveryClient aggregated(*modern_session.client->transport, modern_session.client->config.server, no_cache);
  REQUIRE(run_sync(modern_session.io, aggregated.load()).ok());
  REQUIRE(aggregated.stats().format == "aggregated v2");

  old_server.reset_request_log();
  DiscoveryClient fallback(*old_session.client->transport, old_session.client->config.server, no_cache);
  REQUIRE(run_sync(old_session.io, fallback.load()).ok());
  CHECK(fallback.stats().format == "legacy");
  CHECK(fallback.stats().failures.empty());
  CHECK(resource_set(fallback.mapper().resources()) == resource_set(aggregated.mapper().resources()));
  const auto* deployments = fallback.mapper().find({"apps", "v1", "Deployment"});
  REQUIRE(deployments != nullptr);
  CHECK(deployments->plural == "deployments");

  // /api and /apis once each (their legacy answers are reused), then one per group-version.
  int served = old_server.count_requests("GET", "/api");  // /api, /apis and every /api/V, /apis/G/V
  int group_versions = old_server.count_requests("GET", "/api/") + old_server.count_requests("GET", "/apis/");
  std::uint64_t client_side = fallback.stats().requests;
  INFO("server saw " << served << " requests, " << group_versions << " group-versions; client counted " << client_side);
  CHECK(served - group_versions == 2);
  CHECK(client_side == static_cast<std::uint64_t>(served));
  CHECK(old_server.count_requests("", "") == served);
  WARN("legacy fallback: " << client_side << " requests (2 top-level + " << group_versions
                           << " group-versions), aggregated: " << aggregated.stats().requests);

  // A CRD's kind resolves through the legacy path too.
  auto crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
      "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})");
  REQUIRE(crd.ok());
  auto created =
      old_server.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json::dump(*crd));
  REQUIRE(created.status == 201);
  GroupVersionKind gadget{"example.com", "v1", "Gadget"};
  Result<ApiResource> resolved = Error(ErrorKind::not_found, "not yet");
  for (int attempt = 0; attempt < 30 && !resolved.ok(); ++attempt) {
    DiscoveryClient fresh(*old_session.client->transport, old_session.client->config.server, no_cache);
    resolved = run_sync(old_session.io, fresh.resolve(gadget));
    if (!resolved.ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // CRD not Established yet (0.2 s)
    }
  }
  REQUIRE(resolved.ok());
  CHECK(resolved->plural == "gadgets");
}

TEST_CASE("kstate discover works against a server with legacy discovery only", "[discover][discovery][emulator]") {
  Emulator modern;
  Emulator old_server(legacy_server());
  TempDir cache;
  auto discover = [&](const Emulator& emulator, const std::string& folder) {
    return run_process({KSTATE_BINARY, "discover", "-o", "text", "--kubeconfig", emulator.kubeconfig_path().string(),
                        "--cache-dir", (cache.path() / folder).string()});
  };
  auto ours = discover(modern, "modern");
  REQUIRE(ours.exit_code == 0);
  old_server.reset_request_log();
  auto old = discover(old_server, "old");
  INFO(old.err);
  REQUIRE(old.exit_code == 0);
  CHECK(old.out.find("(legacy)") != std::string::npos);
  auto table = [](const std::string& text) { return text.substr(0, text.find("discovery:")); };
  CHECK(table(old.out) == table(ours.out));
  int served = old_server.count_requests("GET", "/api");
  CHECK(old.out.find("discovery: " + std::to_string(served) + " requests, cache miss (legacy)") != std::string::npos);
  // The second run is answered by the cache written from legacy discovery.
  old_server.reset_request_log();
  auto again = discover(old_server, "old");
  REQUIRE(again.exit_code == 0);
  CHECK(again.out.find("discovery: 0 requests, cache hit") != std::string::npos);
  CHECK(old_server.count_requests("", "") == 0);
  WARN("kstate discover against a legacy-only server: " << served << " requests, then 0 (cache)");
}

}  // namespace legacy_server_test
