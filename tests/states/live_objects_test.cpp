// The engine's reads of live objects (states/live_objects.hpp) against the fake
// transport: one read per (resource, namespace) pair however many states it holds (a
// GET for one object, a LIST for several), a pair in a declared Namespace that does
// not exist is not read, a kind kstate wrote in several namespaces is read with one
// LIST across them (a namespace that LIST does not fully answer read on its own), and
// a `404 page not found` never reads as an absent object.
#include "states/live_objects.hpp"

#include <catch2/catch.hpp>

#include "tests/support/api_resources.hpp"
#include "tests/support/fake_transport.hpp"

namespace live_objects_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using kstate::testing::query_value;
using states::LiveObjects;
using states::ObjectRef;

namespace {

std::string config_map(const std::string& ns, const std::string& name) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"(","uid":"uid-)" + ns + "-" + name + R"(","resourceVersion":"7"},"data":{"k":"v"}})";
}

std::string config_map_list(const std::vector<std::string>& items) {
  std::string text = R"({"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) {
    text += (i == 0 ? "" : ",") + items[i];
  }
  return text + "]}";
}

std::string not_found(const std::string& kind, const std::string& name) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,)"
         R"("message":")" +
         kind + " \\\"" + name + R"(\" not found","details":{"name":")" + name + R"(","kind":")" + kind + R"("}})";
}

// The server as a table "VERB /path" -> (status, body); anything else is 500.
struct Harness {
  FakeTransport fake;
  DynamicClient client{fake};
  states::EngineOptions options;
  std::map<std::string, std::pair<int, std::string>> answers;
  std::vector<LiveObjects::Target> targets;
  boost::asio::io_context io;

  Harness() {
    options.concurrency = 4;
    fake.handle([this](const Request& request) -> Result<Response> {
      Response response;
      auto answer = answers.find(request.verb + " " + request.path);
      if (answer == answers.end()) {
        response.status = 500;
        response.body = R"({"kind":"Status","status":"Failure","reason":"InternalError","code":500,)"
                        R"("message":"not scripted"})";
        return response;
      }
      response.status = answer->second.first;
      response.body = answer->second.second;
      return response;
    });
  }

  std::size_t add(const ApiResource& resource, const std::string& ns, const std::string& name) {
    LiveObjects::Target target;
    target.resource = std::make_shared<const ApiResource>(resource);
    target.ref = ObjectRef{resource.gvk(), ns, name};
    targets.push_back(std::move(target));
    return targets.size() - 1;
  }
  std::size_t add_config_map(const std::string& ns, const std::string& name) {
    return add(kstate::testing::configmaps_resource(), ns, name);
  }

  // Plans the reads in the targets' order, runs them, and waits until they end.
  void read_all(LiveObjects& live) {
    std::vector<std::size_t> order(targets.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    live.plan(targets, order);
    live.start(io.get_executor());
    run_sync(io, live.finished());
  }

  // The object state `index` sees: its name, "" when absent, or the error's message.
  std::string object_of(LiveObjects& live, std::size_t index, bool fresh = false) {
    auto found = run_sync(io, live.object(index, *targets[index].resource, targets[index].ref, fresh));
    if (!found.ok()) {
      return "error: " + found.error().message;
    }
    return json::string_at(**found, {"metadata", "name"});
  }

  std::vector<std::string> requests() const {
    std::vector<std::string> sent;
    for (const auto& request : fake.requests()) {
      sent.push_back(request.verb + " " + request.path);
    }
    return sent;
  }
};

}  // namespace

TEST_CASE("one LIST per (resource, namespace) pair, however many states it holds") {
  Harness harness;
  harness.answers["GET /api/v1/namespaces/a/configmaps"] = {
      200, config_map_list({config_map("a", "one"), config_map("a", "two"), config_map("a", "three")})};
  const std::size_t one = harness.add_config_map("a", "one");
  const std::size_t two = harness.add_config_map("a", "two");
  const std::size_t three = harness.add_config_map("a", "three");
  const std::size_t missing = harness.add_config_map("a", "missing");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(harness.requests() == std::vector<std::string>{"GET /api/v1/namespaces/a/configmaps"});
  CHECK(harness.object_of(live, one) == "one");
  CHECK(harness.object_of(live, two) == "two");
  CHECK(harness.object_of(live, three) == "three");
  CHECK(harness.object_of(live, missing).empty());  // absent, concluded from the complete LIST
  CHECK(harness.fake.requests().size() == 1);
  CHECK_FALSE(live.read_with_managed_fields(one));
}

TEST_CASE("a pair of one object is read with a GET, and its 404 Status means absent") {
  Harness harness;
  harness.answers["GET /api/v1/namespaces/a/configmaps/web"] = {200, config_map("a", "web")};
  harness.answers["GET /api/v1/namespaces/b/configmaps/gone"] = {404, not_found("configmaps", "gone")};
  const std::size_t web = harness.add_config_map("a", "web");
  const std::size_t gone = harness.add_config_map("b", "gone");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(harness.object_of(live, web) == "web");
  CHECK(harness.object_of(live, gone).empty());
  CHECK(harness.fake.requests().size() == 2);
  CHECK_FALSE(live.discovery_stale());
}

TEST_CASE("a pair in a declared Namespace that does not exist is not read") {
  Harness harness;
  // One Namespace declared: its pair is a GET, whose 404 says it does not exist.
  harness.answers["GET /api/v1/namespaces/new"] = {404, not_found("namespaces", "new")};
  harness.answers["GET /api/v1/namespaces/new/serviceaccounts/default"] = {
      200, R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"new"}})"};
  const std::size_t ns = harness.add(kstate::testing::namespaces_resource(), "", "new");
  const std::size_t first = harness.add_config_map("new", "one");
  const std::size_t second = harness.add_config_map("new", "two");
  const std::size_t account = harness.add(kstate::testing::serviceaccounts_resource(), "new", "default");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(harness.requests() == std::vector<std::string>{"GET /api/v1/namespaces/new"});
  CHECK(harness.object_of(live, ns).empty());
  CHECK(harness.object_of(live, first).empty());
  CHECK(harness.object_of(live, second).empty());
  CHECK(harness.fake.requests().size() == 1);
  // The cluster makes ServiceAccount `default` in every new namespace: it is read when
  // its state runs (after the Namespace's), not concluded absent from that GET.
  CHECK(harness.object_of(live, account) == "default");
  CHECK(harness.requests().back() == "GET /api/v1/namespaces/new/serviceaccounts/default");
  CHECK(live.read_with_managed_fields(account));
}

TEST_CASE("a Namespace found in the Namespaces' LIST is read into; one missing from it is asked by name") {
  Harness harness;
  harness.answers["GET /api/v1/namespaces"] = {
      200, R"({"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"old"}}]})"};
  // A proxy may list only some Namespaces: one missing from the LIST is asked by name.
  harness.answers["GET /api/v1/namespaces/hidden"] = {200, R"({"kind":"Namespace","metadata":{"name":"hidden"}})"};
  harness.answers["GET /api/v1/namespaces/old/configmaps/web"] = {200, config_map("old", "web")};
  harness.answers["GET /api/v1/namespaces/hidden/configmaps/web"] = {200, config_map("hidden", "web")};
  harness.add(kstate::testing::namespaces_resource(), "", "old");
  harness.add(kstate::testing::namespaces_resource(), "", "hidden");
  const std::size_t in_old = harness.add_config_map("old", "web");
  const std::size_t in_hidden = harness.add_config_map("hidden", "web");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  auto sent = harness.requests();
  std::sort(sent.begin(), sent.end());
  CHECK(sent == std::vector<std::string>{"GET /api/v1/namespaces", "GET /api/v1/namespaces/hidden",
                                         "GET /api/v1/namespaces/hidden/configmaps/web",
                                         "GET /api/v1/namespaces/old/configmaps/web"});
  CHECK(harness.object_of(live, in_old) == "web");
  CHECK(harness.object_of(live, in_hidden) == "web");
  CHECK(harness.fake.requests().size() == 4);
}

TEST_CASE("a kind kstate wrote in several namespaces is read with one LIST across them") {
  Harness harness;
  harness.options.ownership_labels = {{"app.kubernetes.io/managed-by", "kstate"}};
  harness.options.recorded = [](const ObjectRef&) { return true; };
  // The LIST across namespaces lacks b/two (someone removed its labels): pair b is read
  // on its own, so that "absent" comes only from a complete read.
  harness.answers["GET /api/v1/configmaps"] = {
      200, config_map_list({config_map("a", "one"), config_map("b", "one"), config_map("c", "one")})};
  harness.answers["GET /api/v1/namespaces/b/configmaps"] = {
      200, config_map_list({config_map("b", "one"), config_map("b", "two")})};
  const std::size_t a_one = harness.add_config_map("a", "one");
  const std::size_t b_one = harness.add_config_map("b", "one");
  const std::size_t b_two = harness.add_config_map("b", "two");
  const std::size_t c_one = harness.add_config_map("c", "one");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(harness.requests() ==
        std::vector<std::string>{"GET /api/v1/configmaps", "GET /api/v1/namespaces/b/configmaps"});
  CHECK(query_value(harness.fake.requests()[0], "labelSelector") == "app.kubernetes.io/managed-by=kstate");
  CHECK(harness.object_of(live, a_one) == "one");
  CHECK(harness.object_of(live, b_one) == "one");
  CHECK(harness.object_of(live, b_two) == "two");
  CHECK(harness.object_of(live, c_one) == "one");
  CHECK(harness.fake.requests().size() == 2);
}

TEST_CASE("a kind not every object of which kstate recorded is read one namespace at a time") {
  Harness harness;
  harness.options.ownership_labels = {{"app.kubernetes.io/managed-by", "kstate"}};
  harness.options.recorded = [](const ObjectRef& ref) { return ref.ns != "b"; };
  harness.answers["GET /api/v1/namespaces/a/configmaps/one"] = {200, config_map("a", "one")};
  harness.answers["GET /api/v1/namespaces/b/configmaps/one"] = {200, config_map("b", "one")};
  harness.add_config_map("a", "one");
  harness.add_config_map("b", "one");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  auto sent = harness.requests();
  std::sort(sent.begin(), sent.end());
  CHECK(sent ==
        std::vector<std::string>{"GET /api/v1/namespaces/a/configmaps/one", "GET /api/v1/namespaces/b/configmaps/one"});
}

TEST_CASE("a pair read answered 404 page not found is not an absent object") {
  Harness harness;
  harness.answers["GET /api/v1/namespaces/a/configmaps"] = {404, "404 page not found\n"};
  harness.answers["GET /api/v1/namespaces/a/configmaps/one"] = {200, config_map("a", "one")};
  const std::size_t one = harness.add_config_map("a", "one");
  harness.add_config_map("a", "two");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(live.discovery_stale());  // discovery is read again for the next cycle
  // The pair stays unread: the state reads its object on its own, and finds it.
  CHECK(harness.object_of(live, one) == "one");
  CHECK(harness.requests() ==
        std::vector<std::string>{"GET /api/v1/namespaces/a/configmaps", "GET /api/v1/namespaces/a/configmaps/one"});
}

TEST_CASE("served: only a 404 without a Status naming an object is a path the server does not serve") {
  Harness harness;
  LiveObjects live(harness.client, harness.options, 0);
  const ApiResource resource = kstate::testing::configmaps_resource();
  Error missing(ErrorKind::not_found, "configmaps \"web\" not found");
  auto object = live.served(resource, Result<json::Document>(missing));
  REQUIRE_FALSE(object.ok());
  CHECK(object.error().kind == ErrorKind::not_found);
  CHECK_FALSE(live.discovery_stale());
  Error not_served(ErrorKind::not_found, "the server does not serve this resource (HTTP 404: 404 page not found)");
  not_served.resource_not_served = true;
  auto path = live.served(resource, Result<json::Document>(not_served));
  REQUIRE_FALSE(path.ok());
  CHECK(path.error().kind == ErrorKind::unsupported);
  CHECK(path.error().message.find("does not serve configmaps in v1 (namespaced)") != std::string::npos);
  CHECK(live.discovery_stale());
}

TEST_CASE("an object read by its state, or remembered after a write, replaces what the pair's read found") {
  Harness harness;
  harness.answers["GET /api/v1/namespaces/a/configmaps/web"] = {404, not_found("configmaps", "web")};
  const std::size_t web = harness.add_config_map("a", "web");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(harness.object_of(live, web).empty());
  // A create answered 409 AlreadyExists: the state reads it again, on its own.
  harness.answers["GET /api/v1/namespaces/a/configmaps/web"] = {200, config_map("a", "web")};
  live.read_when_run(web);
  CHECK(harness.object_of(live, web) == "web");
  CHECK(harness.fake.requests().size() == 2);
  CHECK(live.read_with_managed_fields(web));
  // What a write answered is what later reads of the run see, without a request.
  auto written = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"a"},)"
                             R"("data":{"k":"written"}})");
  REQUIRE(written.ok());
  live.remember(*harness.targets[web].resource, harness.targets[web].ref, std::move(*written));
  auto found = run_sync(harness.io, live.object(web, *harness.targets[web].resource, harness.targets[web].ref));
  REQUIRE(found.ok());
  CHECK(json::string_at(**found, {"data", "k"}) == "written");
  CHECK(harness.fake.requests().size() == 2);
}

TEST_CASE("the objects the cluster makes in each namespace this run created are read when their state runs") {
  Harness harness;
  const ApiResource config_maps = kstate::testing::configmaps_resource();
  LiveObjects live(harness.client, harness.options, 0);
  const ObjectRef root_ca{config_maps.gvk(), "fresh", "kube-root-ca.crt"};
  const ObjectRef other{config_maps.gvk(), "fresh", "web"};
  CHECK_FALSE(live.made_by_the_cluster_here(config_maps, root_ca));
  live.namespace_created("fresh");
  CHECK(live.made_by_the_cluster_here(config_maps, root_ca));
  CHECK_FALSE(live.made_by_the_cluster_here(config_maps, other));
  CHECK(
      live.made_by_the_cluster_here(kstate::testing::serviceaccounts_resource(),
                                    ObjectRef{kstate::testing::serviceaccounts_resource().gvk(), "fresh", "default"}));
  CHECK_FALSE(
      live.made_by_the_cluster_here(config_maps, ObjectRef{config_maps.gvk(), "elsewhere", "kube-root-ca.crt"}));
}

TEST_CASE("the server's warnings on a shared read are each reader's") {
  Harness harness;
  harness.fake.handle([](const Request&) -> Result<Response> {
    Response response;
    response.status = 200;
    response.body = config_map_list({config_map("a", "one"), config_map("a", "two")});
    response.headers = {{"warning", "299 - \"v1 ConfigMap is deprecated\""}};
    return response;
  });
  const std::size_t one = harness.add_config_map("a", "one");
  const std::size_t two = harness.add_config_map("a", "two");
  LiveObjects live(harness.client, harness.options, harness.targets.size());
  harness.read_all(live);
  CHECK(live.take_warnings(one) == std::vector<std::string>{"v1 ConfigMap is deprecated"});
  CHECK(live.take_warnings(two) == std::vector<std::string>{"v1 ConfigMap is deprecated"});
  CHECK(live.take_warnings(one).empty());  // taken once
}

}  // namespace live_objects_test
