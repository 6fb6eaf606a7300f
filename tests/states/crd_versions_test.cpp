// The engine's view of the run's CRDs and discovery's lag behind them
// (states/crd_versions.hpp), with the fake transport and a scripted resolver: the
// server's CRDs are listed once per run whoever asks, the CRD serving a kind wins over
// one that does not, this run's CRDs are found by kind whatever the version named, and
// a state naming a version this run's update serves waits for discovery to list it.
#include "states/crd_versions.hpp"

#include <catch2/catch.hpp>
#include <set>

#include "states/engine.hpp"
#include "tests/support/fake_transport.hpp"

namespace crd_versions_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using states::CrdVersions;
using std::chrono::milliseconds;

namespace {

ApiResource resource_of(const GroupVersionKind& gvk, std::string plural, bool namespaced) {
  ApiResource resource;
  resource.group = gvk.group;
  resource.version = gvk.version;
  resource.kind = gvk.kind;
  resource.plural = std::move(plural);
  resource.namespaced = namespaced;
  return resource;
}

// Discovery as a set of "group/version/Kind" it lists; refresh() adds those listed
// only after the next read of discovery.
struct ScriptedResolver final : states::KindResolver {
  std::set<std::string> listed{"apiextensions.k8s.io/v1/CustomResourceDefinition"};
  std::set<std::string> listed_after_refresh;
  std::optional<Error> refresh_error;
  std::optional<Error> resources_error;
  int refreshes = 0;

  static std::string key(const GroupVersionKind& gvk) { return gvk.group + "/" + gvk.version + "/" + gvk.kind; }

  asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) override {
    if (listed.count(key(gvk)) == 0) {
      co_return Error(ErrorKind::not_found, "no matches for kind \"" + gvk.kind + "\"");
    }
    const bool crd = gvk.kind == "CustomResourceDefinition";
    co_return resource_of(gvk, crd ? "customresourcedefinitions" : "widgets", !crd);
  }
  asio::awaitable<Status> refresh() override {
    ++refreshes;
    if (refresh_error) {
      co_return *refresh_error;
    }
    listed.insert(listed_after_refresh.begin(), listed_after_refresh.end());
    co_return ok_status();
  }
  asio::awaitable<Result<std::vector<ApiResource>>> resources() override {
    if (resources_error) {
      co_return *resources_error;
    }
    std::vector<ApiResource> all;
    for (const std::string& entry : listed) {
      auto first = entry.find('/');
      auto second = entry.find('/', first + 1);
      GroupVersionKind gvk{entry.substr(0, first), entry.substr(first + 1, second - first - 1),
                           entry.substr(second + 1)};
      all.push_back(resource_of(gvk, "widgets", true));
    }
    co_return all;
  }
};

std::string crd(const std::string& name, const std::string& established, const std::string& versions,
                bool deleting = false) {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" + name +
         R"(")" + (deleting ? R"(,"deletionTimestamp":"2026-01-01T00:00:00Z")" : "") +
         R"(},"spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced",)"
         R"("versions":)" +
         versions +
         R"(},"status":{"conditions":[{"type":"NamesAccepted","status":"True"},)"
         R"({"type":"Established","status":")" +
         established + R"("}]}})";
}

constexpr const char* v1_served = R"([{"name":"v1","served":true,"storage":true}])";
constexpr const char* v1_and_v2 =
    R"([{"name":"v1","served":true,"storage":true},{"name":"v2","served":true},{"name":"v0","served":false}])";

json::Document parse(const std::string& text) {
  return json::parse(text).value();
}

struct Harness {
  FakeTransport fake;
  DynamicClient client{fake};
  ScriptedResolver resolver;
  std::vector<milliseconds> slept;
  CrdVersions crds{client, resolver, [this](milliseconds duration) -> boost::asio::awaitable<void> {
                     slept.push_back(duration);
                     co_return;
                   }};
  boost::asio::io_context io;
};

}  // namespace

TEST_CASE("the server's CRDs are listed once per run, and the CRD serving a kind wins") {
  Harness harness;
  harness.fake.respond(200, R"({"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1",)"
                            R"("metadata":{"resourceVersion":"9"},"items":[)" +
                                crd("widgets.old.example.com", "False", v1_served) + "," +
                                crd("widgets.example.com", "True", v1_served) + "]}");
  auto widget = run_sync(harness.io, harness.crds.live_crd("example.com", "Widget"));
  REQUIRE(widget.ok());
  REQUIRE(*widget != nullptr);
  CHECK(json::string_or(json::find_path(**widget, {"metadata", "name"}), "") == "widgets.example.com");
  auto gadget = run_sync(harness.io, harness.crds.live_crd("example.com", "Gadget"));
  REQUIRE(gadget.ok());
  CHECK(*gadget == nullptr);
  REQUIRE(harness.fake.requests().size() == 1);
  CHECK(harness.fake.requests()[0].path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
}

TEST_CASE("a LIST of CRDs that failed is the answer for every state that asks, without another request") {
  Harness harness;
  harness.fake.respond(403, R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,)"
                            R"("message":"customresourcedefinitions is forbidden"})");
  for (int ask = 0; ask < 2; ++ask) {
    auto widget = run_sync(harness.io, harness.crds.live_crd("example.com", "Widget"));
    REQUIRE_FALSE(widget.ok());
    CHECK(widget.error().kind == ErrorKind::forbidden);
  }
  CHECK(harness.fake.requests().size() == 1);
}

TEST_CASE("whether a CRD read from the server serves its kinds") {
  struct Row {
    std::string established;
    bool deleting;
    bool serves;
  };
  for (const Row& row : {Row{"True", false, true}, Row{"False", false, false}, Row{"True", true, false}}) {
    INFO(row.established << (row.deleting ? " deleting" : ""));
    CHECK(CrdVersions::serves_kinds(parse(crd("widgets.example.com", row.established, v1_served, row.deleting))) ==
          row.serves);
  }
  CHECK_FALSE(CrdVersions::serves_kinds(parse(R"({"metadata":{"name":"widgets.example.com"}})")));
}

TEST_CASE("whether a CRD serves a version") {
  json::Document both = parse(crd("widgets.example.com", "True", v1_and_v2));
  CHECK(CrdVersions::serves_version(both, "v1"));
  CHECK(CrdVersions::serves_version(both, "v2"));
  CHECK_FALSE(CrdVersions::serves_version(both, "v0"));  // listed, served: false
  CHECK_FALSE(CrdVersions::serves_version(both, "v3"));  // not listed
  CHECK_FALSE(CrdVersions::serves_version(parse("{}"), "v1"));
}

TEST_CASE("this run's CRDs are found by kind, whatever the version a state names") {
  Harness harness;
  harness.crds.created(parse(crd("widgets.example.com", "True", v1_served)));
  CHECK(harness.crds.created_crd({"example.com", "v9", "Widget"}) != nullptr);
  CHECK(harness.crds.created_crd({"example.org", "v1", "Widget"}) == nullptr);
  CHECK(harness.crds.updated_crd({"example.com", "v1", "Widget"}) == nullptr);
  harness.crds.updated(parse(crd("widgets.example.com", "True", v1_and_v2)));
  CHECK(harness.crds.updated_crd({"example.com", "v2", "Widget"}) != nullptr);
  CHECK(harness.crds.awaits_discovery({"example.com", "v2", "Widget"}));
  CHECK_FALSE(harness.crds.awaits_discovery({"example.com", "v0", "Widget"}));  // not served
  CHECK_FALSE(harness.crds.awaits_discovery({"example.com", "v2", "Gadget"}));  // no update of its CRD
}

TEST_CASE("whether discovery lists a kind in another version") {
  Harness harness;
  harness.resolver.listed.insert("example.com/v1/Widget");
  CHECK(run_sync(harness.io, harness.crds.listed_in_another_version({"example.com", "v2", "Widget"})));
  CHECK_FALSE(run_sync(harness.io, harness.crds.listed_in_another_version({"example.com", "v1", "Widget"})));
  CHECK_FALSE(run_sync(harness.io, harness.crds.listed_in_another_version({"example.com", "v2", "Gadget"})));
  harness.resolver.resources_error = Error(ErrorKind::connection, "down");
  CHECK(run_sync(harness.io, harness.crds.listed_in_another_version({"example.com", "v2", "Gadget"})));
  CHECK(harness.fake.requests().empty());
}

TEST_CASE("a version this run's update serves is waited for until discovery lists it") {
  Harness harness;
  harness.crds.updated(parse(crd("widgets.example.com", "True", v1_and_v2)));
  harness.resolver.listed_after_refresh.insert("example.com/v2/Widget");
  CHECK(run_sync(harness.io, harness.crds.until_discovery_lists({"example.com", "v2", "Widget"})).ok());
  CHECK(harness.resolver.refreshes == 1);
  CHECK(harness.slept == std::vector<milliseconds>{milliseconds(50)});
  // Listed now: a second state of that version neither waits nor reads discovery.
  CHECK(run_sync(harness.io, harness.crds.until_discovery_lists({"example.com", "v2", "Widget"})).ok());
  CHECK(harness.resolver.refreshes == 1);
  CHECK(harness.slept.size() == 1);
}

TEST_CASE("a read of discovery that fails ends the wait with its cause") {
  Harness harness;
  harness.crds.updated(parse(crd("widgets.example.com", "True", v1_and_v2)));
  harness.resolver.refresh_error = Error(ErrorKind::connection, "discovery: connection refused");
  Status outcome = run_sync(harness.io, harness.crds.until_discovery_lists({"example.com", "v2", "Widget"}));
  REQUIRE_FALSE(outcome.ok());
  CHECK(outcome.error().kind == ErrorKind::connection);
  CHECK(outcome.error().message == "discovery: connection refused");
}

}  // namespace crd_versions_test
