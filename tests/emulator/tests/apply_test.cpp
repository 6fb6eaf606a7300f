// Server-side apply as documented in "Server-Side Apply": fieldManager required,
// managedFields per manager, conflicts naming the other manager's fields unless
// force, removal of fields a manager stops applying, shared ownership of equal
// values, and create on apply.
#include <catch2/catch.hpp>

#include "tests/emulator/field_set.hpp"
#include "tests/emulator/tests/api_test_support.hpp"

namespace apply_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const std::string kObject = "/api/v1/namespaces/default/configmaps/app";

std::string applied(const std::string& data) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n" + data;
}

const json::Value* manager_entry(const json::Value& object, const std::string& manager) {
  const auto* list = json::find_path(object, {"metadata", "managedFields"});
  if (list == nullptr) {
    return nullptr;
  }
  for (const auto& entry : list->GetArray()) {
    if (str(entry, {"manager"}) == manager) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("apply without fieldManager is 422 naming fieldManager") {
  Harness h;
  auto response = h.apply(kObject, applied("  a: \"1\"\n"));
  CHECK(response.status == 422);
  CHECK(str(parse(response), {"message"}).find("fieldManager: Required value") != std::string::npos);
}

TEST_CASE("apply creates the object and records the manager's fields in FieldsV1 form") {
  Harness h;
  auto response = h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n  b: \"2\"\n"));
  REQUIRE(response.status == 201);
  auto object = parse(response);
  CHECK(str(object, {"data", "a"}) == "1");
  const auto* entry = manager_entry(object, "alice");
  REQUIRE(entry != nullptr);
  CHECK(str(*entry, {"operation"}) == "Apply");
  CHECK(str(*entry, {"fieldsType"}) == "FieldsV1");
  // Exactly the applied fields, no "." on the map (recording 20).
  CHECK(json::dump(*json::find(*entry, "fieldsV1")) == R"({"f:data":{"f:a":{},"f:b":{}}})");
}

TEST_CASE("a field the manager stops applying is removed - fields of other managers stay") {
  Harness h;
  REQUIRE(h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n  b: \"2\"\n")).status == 201);
  REQUIRE(h.apply(kObject + "?fieldManager=bob", applied("  c: \"3\"\n")).status == 200);
  auto response = h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n"));
  REQUIRE(response.status == 200);
  auto object = parse(response);
  CHECK(str(object, {"data", "a"}) == "1");
  CHECK(json::find_path(object, {"data", "b"}) == nullptr);
  CHECK(str(object, {"data", "c"}) == "3");
}

TEST_CASE("applying a value another manager owns is 409 Conflict naming manager and field, unless force=true") {
  Harness h;
  REQUIRE(h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n")).status == 201);
  auto clash = h.apply(kObject + "?fieldManager=bob", applied("  a: \"2\"\n"));
  REQUIRE(clash.status == 409);
  auto status = parse(clash);
  CHECK(str(status, {"reason"}) == "Conflict");
  CHECK(str(status, {"message"}) == "Apply failed with 1 conflict: conflict with \"alice\": .data.a");
  CHECK(json::find_path(status, {"details", "name"}) == nullptr);  // causes only (recording 28)
  const auto& cause = (*json::find_path(status, {"details", "causes"}))[0];
  CHECK(str(cause, {"reason"}) == "FieldManagerConflict");
  CHECK(str(cause, {"field"}) == ".data.a");
  CHECK(str(parse(h.get(kObject)), {"data", "a"}) == "1");

  // The same value is no conflict: both own it.
  auto shared = h.apply(kObject + "?fieldManager=carol", applied("  a: \"1\"\n"));
  CHECK(shared.status == 200);

  auto forced = h.apply(kObject + "?fieldManager=bob&force=true", applied("  a: \"2\"\n"));
  REQUIRE(forced.status == 200);
  auto object = parse(forced);
  CHECK(str(object, {"data", "a"}) == "2");
  // Ownership of .data.a moved to bob: alice and carol owned nothing else, so their
  // entries are gone.
  CHECK(manager_entry(object, "alice") == nullptr);
  CHECK(manager_entry(object, "carol") == nullptr);
  const auto* bob = manager_entry(object, "bob");
  REQUIRE(bob != nullptr);
  CHECK(json::dump(*json::find(*bob, "fieldsV1")) == R"({"f:data":{"f:a":{}}})");
}

TEST_CASE("apply conflicts with fields set by an update (another manager, operation Update)") {
  Harness h;
  REQUIRE(h.post("/api/v1/namespaces/default/configmaps?fieldManager=kubectl-edit",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"data":{"a":"1"}})")
              .status == 201);
  auto clash = h.apply(kObject + "?fieldManager=kstate", applied("  a: \"2\"\n"));
  CHECK(clash.status == 409);
  CHECK(str(parse(clash), {"message"}).find("conflict with \"kubectl-edit\"") != std::string::npos);
}

TEST_CASE("apply merges list items by merge key and keeps items owned by others") {
  Harness h;
  const std::string path = "/apis/apps/v1/namespaces/default/deployments/web";
  auto deployment = [](const std::string& containers) {
    return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: "
           "web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n" +
           containers;
  };
  REQUIRE(h.apply(path + "?fieldManager=alice", deployment("      - name: app\n        image: app:1\n")).status == 201);
  auto sidecar = h.call("PATCH", path + "?fieldManager=bob",
                        R"({"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"envoy:1"}]}}}})",
                        "application/strategic-merge-patch+json");
  REQUIRE(sidecar.status == 200);
  auto response = h.apply(path + "?fieldManager=alice", deployment("      - name: app\n        image: app:2\n"));
  REQUIRE(response.status == 200);
  const auto merged = parse(response);  // the pointers below point into this document
  auto containers = json::find_path(merged, {"spec", "template", "spec", "containers"});
  REQUIRE(containers->Size() == 2);
  CHECK(str((*containers)[0], {"image"}) == "app:2");
  CHECK(str((*containers)[1], {"name"}) == "sidecar");
  auto entry = manager_entry(merged, "alice");
  CHECK(
      json::dump(*json::find(*entry, "fieldsV1")).find(R"("k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}})") !=
      std::string::npos);
}

TEST_CASE("webhooks are a list keyed by name: a caBundle patched in is the patcher's field of that item alone") {
  Harness h;
  const std::string path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hook?fieldManager=";
  const std::string hook = R"(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: hook
webhooks:
  - name: a.example.com
    clientConfig:
      service: {name: a, namespace: default}
      caBundle: Cg==
    sideEffects: None
    admissionReviewVersions: [v1]
)";
  REQUIRE(h.apply(path + "alice", hook).status == 201);
  REQUIRE(h.call("PATCH", path + "cainjector",
                 R"([{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"QQ=="}])",
                 "application/json-patch+json")
              .status == 200);
  auto stored = parse(h.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hook"));
  CHECK(json::dump(*json::find(*manager_entry(stored, "cainjector"), "fieldsV1")) ==
        R"({"f:webhooks":{"k:{\"name\":\"a.example.com\"}":{"f:clientConfig":{"f:caBundle":{}}}}})");
  const std::string alice = json::dump(*json::find(*manager_entry(stored, "alice"), "fieldsV1"));
  CHECK(alice.find(R"("k:{\"name\":\"a.example.com\"}")") != std::string::npos);
  CHECK(alice.find("f:caBundle") == std::string::npos);  // the update took it
}

TEST_CASE("apply with dryRun=All returns the merged object and stores nothing") {
  Harness h;
  REQUIRE(h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n")).status == 201);
  auto version = h.api.store().current_version();
  auto dry = h.apply(kObject + "?fieldManager=alice&dryRun=All", applied("  a: \"9\"\n"));
  REQUIRE(dry.status == 200);
  CHECK(str(parse(dry), {"data", "a"}) == "9");
  CHECK(h.api.store().current_version() == version);
  CHECK(str(parse(h.get(kObject)), {"data", "a"}) == "1");
  // Create on apply in dry-run: 201, nothing stored.
  auto dry_create = h.apply("/api/v1/namespaces/default/configmaps/other?fieldManager=alice&dryRun=All",
                            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n");
  CHECK(dry_create.status == 201);
  CHECK(h.get("/api/v1/namespaces/default/configmaps/other").status == 404);
}

TEST_CASE("re-applying the same configuration changes nothing, not even the resourceVersion") {
  Harness h;
  auto first = parse(h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n")));
  h.clock->advance(std::chrono::seconds(5));
  auto second = parse(h.apply(kObject + "?fieldManager=alice", applied("  a: \"1\"\n")));
  CHECK(str(second, {"metadata", "resourceVersion"}) == str(first, {"metadata", "resourceVersion"}));
}

TEST_CASE("apply with the wrong kind or name is 400") {
  Harness h;
  CHECK(h.apply(kObject + "?fieldManager=a", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\n").status == 400);
  CHECK(h.apply(kObject + "?fieldManager=a", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n").status ==
        400);
}

TEST_CASE("FieldSet: JSON round trip, union, difference") {
  auto doc = json::parse(R"({"f:data":{".":{},"f:a":{}},"f:spec":{"f:x":{}}})");
  REQUIRE(doc);
  auto set = FieldSet::from_json(*doc);
  CHECK(json::dump(set.to_json()) == json::dump(*doc));
  auto other = FieldSet::from_json(*json::parse(R"({"f:spec":{"f:x":{}}})"));
  set.subtract(other);
  CHECK(json::dump(set.to_json()) == R"({"f:data":{".":{},"f:a":{}}})");
  set.merge(other);
  CHECK(set.paths().size() == 3);
}

}  // namespace apply_test
