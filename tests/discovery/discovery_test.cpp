// Discovery against kstate-emulator: aggregated (v2 and v2beta1 documents) and
// legacy discovery give the same resources; the disk cache answers with zero
// requests; a stale cache is revalidated by ETag; a corrupt cache is ignored; a new
// CRD's kind resolves after exactly one refetch; a failing group-version is reported
// and skipped.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "core/dynamic_client.hpp"
#include "discovery/client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/temp_dir.hpp"

namespace discovery_test {

using namespace kstate;
using namespace kstate::discovery;
using kstate::testing::Emulator;
using kstate::testing::TempDir;

namespace {

const char* widget_crd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})";

struct Session {
  boost::asio::io_context io;
  std::unique_ptr<Client> client;
  explicit Session(const Emulator& emulator) {
    KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    TransportOptions options;
    options.retry.backoff_base = std::chrono::milliseconds(5);
    options.retry.max_retries = 2;
    auto made = make_client(io.get_executor(), sources, options);
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

}  // namespace

TEST_CASE("aggregated discovery fills the mapper, the cache then answers with zero requests", "[discovery]") {
  Emulator emulator;
  TempDir cache;
  Session session(emulator);
  DiscoveryOptions options;
  options.cache_dir = cache.path().string();
  {
    DiscoveryClient discovery(*session.client->transport, session.client->config.server, options);
    REQUIRE(run_sync(session.io, discovery.load()).ok());
    CHECK(discovery.stats().format == "aggregated v2");
    CHECK(discovery.stats().requests == 2);
    CHECK_FALSE(discovery.stats().from_cache);
    const auto* deployments = discovery.mapper().find({"apps", "v1", "Deployment"});
    REQUIRE(deployments != nullptr);
    CHECK(deployments->plural == "deployments");
    CHECK(deployments->namespaced);
    CHECK(deployments->has_subresource("scale"));
    CHECK(deployments->supports("patch"));
    auto by_short_name = discovery.mapper().lookup("cm");
    REQUIRE_FALSE(by_short_name.empty());
    CHECK(by_short_name[0]->kind == "ConfigMap");
    REQUIRE_FALSE(discovery.mapper().lookup("deployments.apps").empty());
    const auto* namespaces = discovery.mapper().find({"", "v1", "Namespace"});
    REQUIRE(namespaces != nullptr);
    CHECK_FALSE(namespaces->namespaced);
  }
  // Files are private: folders 0700, the entry 0600.
  auto file = cache_file_for(cache.path().string(), session.client->config.server);
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  REQUIRE(::stat(std::filesystem::path(file).parent_path().c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);

  emulator.reset_request_log();
  DiscoveryClient cached(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, cached.load()).ok());
  CHECK(cached.stats().from_cache);
  CHECK(cached.stats().requests == 0);
  CHECK(emulator.count_requests("", "/api") == 0);
  CHECK(cached.mapper().find({"apps", "v1", "Deployment"}) != nullptr);

  // Past the TTL the cache is revalidated with its ETags: 304, same data, two requests.
  DiscoveryOptions later = options;
  later.clock = std::make_shared<kstate::testing::ManualClock>(
      session.io, kstate::real_clock()->wall_now() + std::chrono::hours(7));
  DiscoveryClient stale(*session.client->transport, session.client->config.server, later);
  REQUIRE(run_sync(session.io, stale.load()).ok());
  CHECK(stale.stats().revalidated);
  CHECK(stale.stats().requests == 2);
  CHECK(resource_set(stale.mapper().resources()) == resource_set(cached.mapper().resources()));

  // A corrupt entry (checksum mismatch) is ignored, not trusted.
  std::string text = kstate::testing::read_file(file);
  text[text.size() / 2] = text[text.size() / 2] == 'a' ? 'b' : 'a';
  kstate::testing::write_file(file, text);
  DiscoveryClient after_corruption(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, after_corruption.load()).ok());
  CHECK_FALSE(after_corruption.stats().from_cache);
  CHECK(after_corruption.stats().requests == 2);

  // The cache is written without fsync: what a crash can leave (an empty file, the
  // first blocks of it, or blocks of zeros) is asked again too, never trusted.
  const std::string whole = kstate::testing::read_file(file);  // rewritten by the refetch
  DiscoveryClient rewritten(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, rewritten.load()).ok());
  REQUIRE(rewritten.stats().from_cache);
  const std::vector<std::string> torn_files = {"", whole.substr(0, whole.size() / 2), whole.substr(0, whole.size() - 1),
                                               std::string(whole.size(), '\0')};
  for (const auto& torn : torn_files) {
    kstate::testing::write_file(file, torn);
    DiscoveryClient after_crash(*session.client->transport, session.client->config.server, options);
    REQUIRE(run_sync(session.io, after_crash.load()).ok());
    CHECK_FALSE(after_crash.stats().from_cache);
    CHECK(after_crash.stats().requests == 2);
    CHECK(after_crash.mapper().find({"apps", "v1", "Deployment"}) != nullptr);
  }
}

TEST_CASE("legacy discovery and both aggregated formats give the same resources", "[discovery]") {
  Emulator emulator;
  Session session(emulator);
  DiscoveryOptions no_cache;
  no_cache.use_cache = false;
  DiscoveryClient aggregated(*session.client->transport, session.client->config.server, no_cache);
  REQUIRE(run_sync(session.io, aggregated.load()).ok());

  DiscoveryOptions legacy_options = no_cache;
  legacy_options.legacy_only = true;
  emulator.reset_request_log();
  DiscoveryClient legacy(*session.client->transport, session.client->config.server, legacy_options);
  REQUIRE(run_sync(session.io, legacy.load()).ok());
  CHECK(legacy.stats().format == "legacy");
  CHECK(legacy.stats().failures.empty());
  // /api, /apis and one request per group-version.
  CHECK(legacy.stats().requests > 3);
  CHECK(emulator.count_requests("GET", "/apis/apps/v1") == 1);
  CHECK(resource_set(legacy.mapper().resources()) == resource_set(aggregated.mapper().resources()));
  const auto* deployments = legacy.mapper().find({"apps", "v1", "Deployment"});
  REQUIRE(deployments != nullptr);
  CHECK(deployments->has_subresource("status"));

  // The v2beta1 document parses to the same resources as v2.
  for (const char* version : {"v2", "v2beta1"}) {
    INFO(version);
    std::string accept =
        std::string("application/json;g=apidiscovery.k8s.io;v=") + version + ";as=APIGroupDiscoveryList";
    auto core = emulator.request("GET", "/api", "", "application/json", std::nullopt, {{"Accept", accept}});
    auto groups = emulator.request("GET", "/apis", "", "application/json", std::nullopt, {{"Accept", accept}});
    REQUIRE(core.status == 200);
    REQUIRE(groups.headers["content-type"].find(std::string("v=") + version) != std::string::npos);
    std::vector<GroupVersionFailure> failures;
    auto parsed_core = parse_aggregated(core.body, failures);
    auto parsed_groups = parse_aggregated(groups.body, failures);
    REQUIRE(parsed_core.ok());
    REQUIRE(parsed_groups.ok());
    auto all = parsed_core.value();
    all.insert(all.end(), parsed_groups->begin(), parsed_groups->end());
    CHECK(resource_set(all) == resource_set(aggregated.mapper().resources()));
  }
}

TEST_CASE("a failing group-version is reported and skipped, not fatal", "[discovery]") {
  Emulator emulator;
  TempDir cache;
  Session session(emulator);
  emulator.set_faults(R"({"failNext": 100, "failCode": 503, "pathPrefix": "/apis/apps/v1"})");
  DiscoveryOptions options;
  options.cache_dir = cache.path().string();
  options.legacy_only = true;
  DiscoveryClient discovery(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, discovery.load()).ok());
  REQUIRE(discovery.stats().failures.size() == 1);
  CHECK(discovery.stats().failures[0].group_version == "apps/v1");
  CHECK(discovery.stats().failures[0].error.http_status == 503);
  CHECK(discovery.mapper().find({"apps", "v1", "Deployment"}) == nullptr);
  CHECK(discovery.mapper().find({"", "v1", "ConfigMap"}) != nullptr);
  // An incomplete answer is not cached.
  CHECK_FALSE(std::filesystem::exists(cache_file_for(cache.path().string(), session.client->config.server)));
  emulator.clear_faults();
}

TEST_CASE("a kind that is not found refetches exactly once, so a new CRD resolves", "[discovery]") {
  Emulator emulator;
  TempDir cache;
  Session session(emulator);
  DiscoveryOptions options;
  options.cache_dir = cache.path().string();
  DiscoveryClient discovery(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, discovery.load()).ok());
  CHECK(discovery.mapper().find({"example.com", "v1", "Widget"}) == nullptr);

  auto created = emulator.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd);
  REQUIRE(created.status == 201);
  // The emulator establishes CRDs after a short delay, as kube-apiserver does: polled
  // until its Established condition says so (not a fixed sleep).
  bool established = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !established && std::chrono::steady_clock::now() < deadline;) {
    auto crd = emulator.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
    auto parsed = json::parse(crd.body);
    const json::Value* conditions =
        crd.status == 200 && parsed.ok() ? json::find_path(*parsed, {"status", "conditions"}) : nullptr;
    if (conditions != nullptr && conditions->IsArray()) {
      for (const auto& condition : conditions->GetArray()) {
        established = established || (json::string_or(json::find(condition, "type"), "") == "Established" &&
                                      json::string_or(json::find(condition, "status"), "") == "True");
      }
    }
    if (!established) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  REQUIRE(established);

  emulator.reset_request_log();
  auto widget = run_sync(session.io, discovery.resolve({"example.com", "v1", "Widget"}));
  REQUIRE(widget.ok());
  CHECK(widget->plural == "widgets");
  CHECK(widget->short_names == std::vector<std::string>{"wd"});
  CHECK(emulator.count_requests("GET", "/api") == 2);  // one aggregated refetch: /api and /apis

  // A kind the server does not have: one refetch, then NotFound; asking again costs nothing.
  emulator.reset_request_log();
  auto missing = run_sync(session.io, discovery.resolve({"example.com", "v1", "Gadget"}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::not_found);
  CHECK(emulator.count_requests("GET", "/api") == 2);
  emulator.reset_request_log();
  CHECK_FALSE(run_sync(session.io, discovery.resolve({"example.com", "v1", "Gadget"})).ok());
  CHECK(emulator.count_requests("GET", "/api") == 0);
}

TEST_CASE("revalidate: a 304 when nothing changed, a CRD's new plural and scope as soon as they change",
          "[discovery]") {
  Emulator emulator;
  TempDir cache;
  Session session(emulator);
  DiscoveryOptions options;
  options.cache_dir = cache.path().string();
  DiscoveryClient discovery(*session.client->transport, session.client->config.server, options);
  REQUIRE(run_sync(session.io, discovery.load()).ok());
  REQUIRE(emulator.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd).status ==
          201);
  // Known to this client from before the CRD: the cache is fresh, and it is not there.
  CHECK(discovery.mapper().find({"example.com", "v1", "Widget"}) == nullptr);

  // Unchanged: two conditional requests answered 304, nothing else.
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < deadline;) {
    REQUIRE(run_sync(session.io, discovery.revalidate()).ok());
    if (discovery.mapper().find({"example.com", "v1", "Widget"}) != nullptr) {
      break;  // (the emulator serves a CRD's kind once it is Established)
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const ApiResource* widgets = discovery.mapper().find({"example.com", "v1", "Widget"});
  REQUIRE(widgets != nullptr);
  CHECK(widgets->plural == "widgets");
  CHECK(widgets->namespaced);
  emulator.reset_request_log();
  REQUIRE(run_sync(session.io, discovery.revalidate()).ok());
  CHECK(discovery.stats().revalidated);
  CHECK(discovery.stats().requests == 2);
  CHECK(emulator.count_requests("GET", "/api") == 2);  // /api and /apis, with If-None-Match

  // The CRD is replaced by one of another plural and scope (as an operator upgrade
  // may): the next revalidation sees it, without a restart.
  REQUIRE(emulator.request("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
              .status == 200);
  const std::string renamed = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gizmos.example.com"},
  "spec": {"group": "example.com", "scope": "Cluster",
    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})";
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < deadline;) {
    auto created = emulator.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", renamed);
    if (created.status == 201) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the old one is still terminating
  }
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < deadline;) {
    REQUIRE(run_sync(session.io, discovery.revalidate()).ok());
    widgets = discovery.mapper().find({"example.com", "v1", "Widget"});
    if (widgets != nullptr && widgets->plural == "gizmos") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(widgets != nullptr);
  CHECK(widgets->plural == "gizmos");
  CHECK_FALSE(widgets->namespaced);
  CHECK_FALSE(discovery.stats().revalidated);
}

}  // namespace discovery_test
