// --preload (tests/emulator/preload.hpp): objects stored as a running cluster's state,
// status included, from YAML documents, a List or a JSON array; missing namespaces made
// through the API; served by GET and paged LIST like any object; errors name the file
// and the document.
#include "tests/emulator/preload.hpp"

#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace preload_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const char* kFixture = R"(# a comment before the first document
apiVersion: v1
kind: Node
metadata:
  name: worker-1
status:
  nodeInfo:
    containerRuntimeVersion: containerd://1.7.12
  capacity:
    cpu: "4"
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  nodeName: worker-1
  containers:
  - name: app
    image: nginx:1.25
status:
  phase: Running
  containerStatuses:
  - name: app
    image: docker.io/library/nginx:1.25
    imageID: docker.io/library/nginx@sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac
    containerID: containerd://0123
    ready: true
    restartCount: 0
    state:
      running:
        startedAt: "2024-05-02T08:15:03Z"
---
---
)";

}  // namespace

TEST_CASE("preloaded objects keep their status and get what the server sets") {
  Harness h;
  auto loaded = preload_objects(h.api, kFixture, "cluster.yaml");
  REQUIRE(loaded.ok());
  CHECK(*loaded == 2);

  auto pod = parse(h.get("/api/v1/namespaces/shop/pods/web"));
  CHECK(str(pod, {"status", "phase"}) == "Running");
  const auto* statuses = json::find_path(pod, {"status", "containerStatuses"});
  REQUIRE(statuses != nullptr);
  CHECK(str((*statuses)[0], {"imageID"}) ==
        "docker.io/library/nginx@sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac");
  CHECK(str(pod, {"metadata", "uid"}).size() == 36);
  CHECK_FALSE(str(pod, {"metadata", "resourceVersion"}).empty());
  CHECK(str(pod, {"metadata", "creationTimestamp"}) == "2023-11-14T22:13:20Z");

  auto node = parse(h.get("/api/v1/nodes/worker-1"));
  CHECK(str(node, {"status", "nodeInfo", "containerRuntimeVersion"}) == "containerd://1.7.12");
  CHECK(str(node, {"metadata", "namespace"}).empty());

  // The namespace the pod named was created through the API (with its label and phase).
  auto shop = parse(h.get("/api/v1/namespaces/shop"));
  CHECK(str(shop, {"status", "phase"}) == "Active");
  CHECK(str(shop, {"metadata", "labels", "kubernetes.io/metadata.name"}) == "shop");

  // They are ordinary objects afterwards: a kubelet-like status update replaces the status.
  json::set_string(*json::find(pod, "status"), "phase", "Succeeded", pod.GetAllocator());
  REQUIRE(h.put("/api/v1/namespaces/shop/pods/web/status", json::dump(pod)).status == 200);
  CHECK(str(parse(h.get("/api/v1/namespaces/shop/pods/web")), {"status", "phase"}) == "Succeeded");
}

TEST_CASE("preload reads a List and a JSON array, and pages of a LIST cover every object once") {
  Harness h;
  std::string list = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int i = 0; i < 5; ++i) {
    list += std::string(i == 0 ? "" : ",") + R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p)" +
            std::to_string(i) + R"(","namespace":"default"},"status":{"phase":"Running"}})";
  }
  list += "]}";
  REQUIRE(preload_objects(h.api, list, "list.json").value() == 5);
  REQUIRE(
      preload_objects(h.api, R"([{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}])", "array.json").value() ==
      1);

  std::vector<std::string> names;
  std::string target = "/api/v1/pods?limit=2";
  for (int pages = 0; pages < 10; ++pages) {
    auto page = parse(h.get(target));
    for (const auto& item : json::find(page, "items")->GetArray()) {
      names.push_back(str(item, {"metadata", "name"}));
      CHECK(str(item, {"status", "phase"}) == "Running");
    }
    std::string token = str(page, {"metadata", "continue"});
    if (token.empty()) {
      break;
    }
    CHECK(json::find_path(page, {"metadata", "remainingItemCount"}) != nullptr);
    target = "/api/v1/pods?limit=2&continue=" + token;
  }
  CHECK(names == std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"});
}

TEST_CASE("preload errors name the file and the document") {
  Harness h;
  auto unknown = preload_objects(
      h.api,
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n---\napiVersion: x/v1\nkind: Gizmo\nmetadata:\n  name: g\n",
      "bad.yaml");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "bad.yaml, document 2: the emulator does not serve x/v1 Gizmo");
  auto nameless = preload_objects(
      h.api, R"({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod"}]})", "list.json");
  REQUIRE_FALSE(nameless.ok());
  CHECK(nameless.error().message == "list.json, document 1, item 0: Pod without metadata.name");
  auto broken = preload_objects(h.api, "a: [", "broken.yaml");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.rfind("broken.yaml, document 1: ", 0) == 0);
}

}  // namespace preload_test
