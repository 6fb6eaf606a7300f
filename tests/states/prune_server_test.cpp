// Prune against the server as it is now (states/prune_server.hpp), on the fake
// transport and a scripted resolver: what a candidate's read says about it (found,
// gone, unknown), which Namespaces and CRDs hold something kstate does not manage
// (and that whatever cannot be listed keeps them), and the deletes as they go out
// (recorded UID as precondition, Background, a dry run in test mode; a 404 page not
// found is not "gone").
#include "states/prune_server.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

#include "tests/support/fake_transport.hpp"

namespace prune_server_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using states::ContainerHold;
using states::InventoryEntry;
using states::LiveObject;
using states::LiveState;
using states::ObjectKey;

namespace {

ApiResource resource(std::string group, std::string version, std::string kind, std::string plural, bool namespaced) {
  ApiResource made;
  made.group = std::move(group);
  made.version = std::move(version);
  made.kind = std::move(kind);
  made.plural = std::move(plural);
  made.namespaced = namespaced;
  made.verbs = {"get", "list", "delete", "create", "patch"};
  return made;
}

// Discovery as a fixed list of resources; revalidate() may fail.
struct ListedResolver final : states::KindResolver {
  std::vector<ApiResource> listed = {
      resource("", "v1", "Namespace", "namespaces", false),
      resource("", "v1", "ConfigMap", "configmaps", true),
      resource("", "v1", "ServiceAccount", "serviceaccounts", true),
      resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false),
  };
  std::optional<Error> revalidate_error;

  asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) override {
    for (const auto& known : listed) {
      if (known.group == gvk.group && known.version == gvk.version && known.kind == gvk.kind) {
        co_return known;
      }
    }
    co_return Error(ErrorKind::not_found, "no matches for kind \"" + gvk.kind + "\"");
  }
  asio::awaitable<Status> refresh() override { co_return ok_status(); }
  asio::awaitable<Status> revalidate() override {
    if (revalidate_error) {
      co_return *revalidate_error;
    }
    co_return ok_status();
  }
  asio::awaitable<Result<std::vector<ApiResource>>> resources() override { co_return listed; }
};

// The server: a LIST or GET answer per path; other paths answer a NotFound Status.
struct Server {
  FakeTransport fake;
  std::map<std::string, std::pair<int, std::string>> answers;
  Server() {
    fake.handle([this](const Request& request) -> Result<Response> {
      Response response;
      auto found = answers.find(request.path);
      if (found == answers.end()) {
        response.status = 404;
        response.body = R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404,)"
                        R"("details":{"name":"x"},"message":"not found"})";
      } else {
        response.status = found->second.first;
        response.body = found->second.second;
      }
      return response;
    });
  }
};

std::string object(const std::string& kind, const std::string& ns, const std::string& name, const std::string& uid,
                   const std::string& extra_metadata = "") {
  return R"({"kind":")" + kind + R"(","metadata":{"name":")" + name + R"(",)" +
         (ns.empty() ? "" : R"("namespace":")" + ns + R"(",)") + R"("uid":")" + uid + R"(")" + extra_metadata + "}}";
}

std::string list_of(std::initializer_list<std::string> items) {
  std::string body = R"({"kind":"List","metadata":{"resourceVersion":"5"},"items":[)";
  bool first = true;
  for (const auto& item : items) {
    body += (first ? "" : ",") + item;
    first = false;
  }
  return body + "]}";
}

InventoryEntry entry(std::string group, std::string version, std::string kind, std::string ns, std::string name,
                     std::string uid) {
  InventoryEntry made;
  made.group = std::move(group);
  made.version = std::move(version);
  made.kind = std::move(kind);
  made.ns = std::move(ns);
  made.name = std::move(name);
  made.uid = std::move(uid);
  made.source = "/manifests/app.yaml";
  return made;
}

const std::string widgets_crd =
    R"({"kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","uid":"crd-1"},)"
    R"("spec":{"group":"example.com","scope":"Namespaced","names":{"kind":"Widget","plural":"widgets"},)"
    R"("versions":[{"name":"v1","served":true,"storage":true}]}})";

struct Harness {
  Server server;
  DynamicClient client{server.fake};
  ListedResolver resolver;
  boost::asio::io_context io;
  states::Inventory inventory;
  std::map<ObjectKey, LiveObject> live;

  void record(InventoryEntry added, const std::string& live_json) {
    live[added.key()] = states::live_object_from_json(json::parse(live_json).value());
    inventory.entries.push_back(std::move(added));
  }
  std::map<ObjectKey, ContainerHold> held() {
    // (an inventory's entries are sorted by key: find() relies on it)
    std::sort(inventory.entries.begin(), inventory.entries.end(),
              [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); });
    return run_sync(io, states::containers_held(client, resolver, inventory, live, {}));
  }
};

}  // namespace

TEST_CASE("a candidate's read: found with its UID, gone on a NotFound Status, unknown on 404 page not found") {
  Harness harness;
  harness.inventory.entries = {entry("", "v1", "ConfigMap", "team", "found", "u-1"),
                               entry("", "v1", "ConfigMap", "team", "gone", "u-2"),
                               entry("", "v1", "ConfigMap", "team", "declared", "u-3"),
                               entry("example.com", "v1", "Widget", "team", "unserved", "u-4")};
  harness.server.answers["/api/v1/namespaces/team/configmaps/found"] = {200,
                                                                        object("ConfigMap", "team", "found", "u-1")};
  harness.resolver.listed.push_back(resource("example.com", "v1", "Widget", "widgets", true));
  harness.server.answers["/apis/example.com/v1/namespaces/team/widgets/unserved"] = {404, "404 page not found"};
  const std::set<ObjectKey> declared = {harness.inventory.entries[2].key()};

  auto live = run_sync(harness.io,
                       states::read_prune_candidates(harness.client, harness.resolver, harness.inventory, declared));

  REQUIRE(live.count(harness.inventory.entries[0].key()) == 1);
  CHECK(live[harness.inventory.entries[0].key()].state == LiveState::found);
  CHECK(live[harness.inventory.entries[0].key()].uid == "u-1");
  CHECK(live[harness.inventory.entries[1].key()].state == LiveState::not_found);
  CHECK(live.count(harness.inventory.entries[2].key()) == 0);  // declared: not read
  CHECK(live.count(harness.inventory.entries[3].key()) == 0);  // unknown: never deleted on a guess
  CHECK(harness.server.fake.requests().size() == 3);
}

TEST_CASE("a CRD is held by a custom resource kstate does not manage, listed through the version it serves") {
  Harness harness;
  harness.record(entry("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "widgets.example.com", "crd-1"),
                 widgets_crd);
  harness.inventory.entries.push_back(entry("example.com", "v1", "Widget", "team", "mine", "w-1"));
  SECTION("only kstate's own custom resources: not held") {
    harness.server.answers["/apis/example.com/v1/widgets"] = {200, list_of({object("Widget", "team", "mine", "w-1")})};
    CHECK(harness.held().empty());
  }
  SECTION("a user's custom resource: held, naming it") {
    harness.server.answers["/apis/example.com/v1/widgets"] = {
        200, list_of({object("Widget", "team", "mine", "w-1"), object("Widget", "team", "users", "w-9")})};
    auto held = harness.held();
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.why == ContainerHold::Why::unmanaged_object);
    CHECK(held.begin()->second.detail == "Widget/team/users");
  }
  SECTION("one of kstate's names with another UID (re-created by someone else): held") {
    harness.server.answers["/apis/example.com/v1/widgets"] = {200, list_of({object("Widget", "team", "mine", "w-2")})};
    auto held = harness.held();
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.why == ContainerHold::Why::unmanaged_object);
  }
  SECTION("the list forbidden: held, as not listed") {
    harness.server.answers["/apis/example.com/v1/widgets"] = {
        403, R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"})"};
    auto held = harness.held();
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.why == ContainerHold::Why::not_listed);
  }
  CHECK(harness.server.fake.requests().size() == 1);
  CHECK(harness.server.fake.requests()[0].path == "/apis/example.com/v1/widgets");
}

TEST_CASE("a Namespace is held by what kstate does not manage, not by what the cluster makes in every namespace") {
  Harness harness;
  harness.record(entry("", "v1", "Namespace", "", "team", "ns-1"), object("Namespace", "", "team", "ns-1"));
  harness.inventory.entries.push_back(entry("", "v1", "ConfigMap", "team", "settings", "cm-1"));
  const std::string cluster_made_config = object("ConfigMap", "team", "kube-root-ca.crt", "cm-root");
  harness.server.answers["/api/v1/namespaces/team/serviceaccounts"] = {
      200, list_of({object("ServiceAccount", "team", "default", "sa-1")})};
  SECTION("kstate's ConfigMap, the root CA and the default ServiceAccount: not held") {
    harness.server.answers["/api/v1/namespaces/team/configmaps"] = {
        200, list_of({object("ConfigMap", "team", "settings", "cm-1"), cluster_made_config})};
    CHECK(harness.held().empty());
  }
  SECTION("a ConfigMap someone else made: held, naming it") {
    harness.server.answers["/api/v1/namespaces/team/configmaps"] = {
        200, list_of({object("ConfigMap", "team", "settings", "cm-1"), cluster_made_config,
                      object("ConfigMap", "team", "users-data", "cm-9")})};
    auto held = harness.held();
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.why == ContainerHold::Why::unmanaged_object);
    CHECK(held.begin()->second.detail == "ConfigMap/team/users-data");
  }
  SECTION("discovery that cannot be revalidated: held, nothing listed") {
    harness.resolver.revalidate_error = Error(ErrorKind::connection, "connection refused");
    auto held = harness.held();
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.why == ContainerHold::Why::not_listed);
    CHECK(harness.server.fake.requests().empty());
  }
}

TEST_CASE("a Namespace or CRD found with another UID than recorded is not listed (prune keeps it anyway)") {
  Harness harness;
  harness.record(entry("", "v1", "Namespace", "", "team", "ns-1"), object("Namespace", "", "team", "ns-other"));
  CHECK(harness.held().empty());
  CHECK(harness.server.fake.requests().empty());
}

TEST_CASE("prune's delete keeps the server's warnings in its result") {
  Harness harness;
  harness.server.fake.respond(200, R"({"kind":"Status","status":"Success"})",
                              {{"warning", R"(299 - "example.com/v1beta1 Widget is deprecated; use v1")"}});
  const std::vector<states::PlannedDelete> deletes = {
      {entry("example.com", "v1beta1", "Widget", "team", "old", "u-1"), 0}};
  harness.resolver.listed.push_back(resource("example.com", "v1beta1", "Widget", "widgets", true));
  states::RunReport report;
  std::vector<ObjectKey> removed;
  run_sync(harness.io, states::delete_pruned(harness.client, harness.resolver, deletes, false, report, removed));
  REQUIRE(report.results.size() == 1);
  CHECK(report.results[0].warnings == std::vector<std::string>{"example.com/v1beta1 Widget is deprecated; use v1"});
}

TEST_CASE("prune's deletes: the recorded UID as precondition, Background, dryRun in test mode") {
  Harness harness;
  const std::vector<states::PlannedDelete> deletes = {{entry("", "v1", "ConfigMap", "team", "old", "u-1"), 0}};
  const std::string path = "/api/v1/namespaces/team/configmaps/old";
  struct Row {
    const char* name;
    bool test_mode;
    int status;
    std::string body;
    bool removed;
    std::optional<bool> result;
  };
  const std::string status_ok = R"({"kind":"Status","status":"Success"})";
  const std::string not_found =
      R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404,"details":{"name":"old","kind":"configmaps"},)"
      R"("message":"configmaps \"old\" not found"})";
  const Row rows[] = {
      {"deleted", false, 200, status_ok, true, true},
      {"already gone (NotFound names it)", false, 404, not_found, true, true},
      {"404 page not found: not gone, retried next cycle", false, 404, "404 page not found", false, false},
      {"conflict (UID precondition failed): stays recorded", false, 409,
       R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409,"message":"Precondition failed: UID"})",
       false, false},
      {"test mode: dry run, nothing removed", true, 200, status_ok, false, std::nullopt},
  };
  for (const Row& row : rows) {
    DYNAMIC_SECTION(row.name) {
      harness.server.answers[path] = {row.status, row.body};
      states::RunReport report;
      std::vector<ObjectKey> removed;
      run_sync(harness.io,
               states::delete_pruned(harness.client, harness.resolver, deletes, row.test_mode, report, removed));
      REQUIRE(harness.server.fake.requests().size() == 1);
      const Request& sent = harness.server.fake.requests()[0];
      CHECK(sent.verb == "DELETE");
      CHECK(sent.path == path);
      CHECK(sent.body.find(R"("uid":"u-1")") != std::string::npos);
      const auto has = [&sent](const std::string& key, const std::string& value) {
        return std::find(sent.query.begin(), sent.query.end(), std::make_pair(key, value)) != sent.query.end();
      };
      CHECK(has("propagationPolicy", "Background"));
      CHECK(has("dryRun", "All") == row.test_mode);
      CHECK((removed.size() == 1) == row.removed);
      REQUIRE(report.results.size() == 1);
      CHECK(report.results[0].id == "prune:" + deletes[0].entry.key().to_string());
      CHECK(report.results[0].result == row.result);
    }
  }
}

}  // namespace prune_server_test
