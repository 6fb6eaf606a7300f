// CustomResourceDefinitions: establishment after the configured delay with the
// NamesAccepted/Established conditions, kinds appearing in and leaving
// discovery, schema validation (types, required, enums) and pruning with
// x-kubernetes-preserve-unknown-fields, and CRs removed with their CRD.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace crd_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const std::string kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const std::string kWidgets = "/apis/example.com/v1/namespaces/default/widgets";

const char* kWidgetCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
          "size": {"type": "integer", "minimum": 1},
          "color": {"type": "string", "enum": ["red", "blue"]},
          "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
          "tags": {"type": "array", "items": {"type": "string"}}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}})";

std::string widget(const std::string& spec) {
  return R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":)" + spec + "}";
}

bool condition_true(const json::Value& crd, const std::string& type) {
  const auto* conditions = json::find_path(crd, {"status", "conditions"});
  if (conditions == nullptr) {
    return false;
  }
  for (const auto& condition : conditions->GetArray()) {
    if (str(condition, {"type"}) == type) {
      return str(condition, {"status"}) == "True";
    }
  }
  return false;
}

bool in_discovery(Harness& h) {
  auto groups = parse(h.get("/apis"));
  for (const auto& group : json::find(groups, "groups")->GetArray()) {
    if (str(group, {"name"}) == "example.com") {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("a CRD is established after the delay, then its kind is served and discovered") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = std::chrono::milliseconds(500);
  Harness h(options);
  auto created = h.post(kCrds, kWidgetCrd);
  REQUIRE(created.status == 201);
  auto crd = parse(created);
  // No conditions yet: names are accepted and the CRD established later (recording 59).
  CHECK(json::find_path(crd, {"status", "conditions"})->IsNull());
  CHECK_FALSE(condition_true(crd, "Established"));
  CHECK_FALSE(in_discovery(h));
  CHECK(h.post(kWidgets, widget(R"({"size":1})")).status == 404);

  h.clock->advance(std::chrono::milliseconds(400));
  h.api.tick();
  CHECK_FALSE(in_discovery(h));
  h.clock->advance(std::chrono::milliseconds(200));
  h.api.tick();
  CHECK(in_discovery(h));
  auto established = parse(h.get(kCrds + "/widgets.example.com"));
  CHECK(condition_true(established, "NamesAccepted"));
  CHECK(condition_true(established, "Established"));
  CHECK(str(established, {"status", "acceptedNames", "kind"}) == "Widget");
  CHECK(std::string((*json::find_path(established, {"status", "storedVersions"}))[0].GetString()) == "v1");
  auto resources = parse(h.get("/apis/example.com/v1"));
  CHECK(str((*json::find(resources, "resources"))[0], {"name"}) == "widgets");
  CHECK(str((*json::find(resources, "resources"))[1], {"name"}) == "widgets/status");
  CHECK(h.post(kWidgets, widget(R"({"size":1})")).status == 201);
  // Custom resources keep kind/apiVersion in a LIST (recording 65).
  auto listed = parse(h.get(kWidgets));
  REQUIRE(json::find(listed, "items")->Size() == 1);
  CHECK(str((*json::find(listed, "items"))[0], {"kind"}) == "Widget");
  CHECK(str((*json::find(listed, "items"))[0], {"apiVersion"}) == "example.com/v1");
}

TEST_CASE("with a CRD update delay, a version an update adds is served and discovered only after it") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = std::chrono::milliseconds(0);
  options.controllers.crd_update_delay = std::chrono::milliseconds(1000);
  Harness h(options);
  REQUIRE(h.post(kCrds, kWidgetCrd).status == 201);
  h.api.tick();
  REQUIRE(h.post(kWidgets, widget(R"({"size":1})")).status == 201);  // the first establishment is not delayed

  auto crd = parse(h.get(kCrds + "/widgets.example.com"));
  auto& allocator = crd.GetAllocator();
  json::Value v2;
  v2.CopyFrom((*json::find_path(crd, {"spec", "versions"}))[0], allocator);
  json::set_string(v2, "name", "v2", allocator);
  json::set(v2, "storage", json::Value(false), allocator);
  json::find(*json::find(crd, "spec"), "versions")->PushBack(std::move(v2), allocator);
  REQUIRE(h.put(kCrds + "/widgets.example.com", json::dump(crd)).status == 200);

  const std::string v2_widget = "/apis/example.com/v2/namespaces/default/widgets/w";
  h.clock->advance(std::chrono::milliseconds(900));
  h.api.tick();
  CHECK(h.get(v2_widget).status == 404);
  CHECK(h.get("/apis/example.com/v2").status == 404);
  CHECK(h.get(kWidgets + "/w").status == 200);  // the served version stays served meanwhile
  h.clock->advance(std::chrono::milliseconds(200));
  h.api.tick();
  CHECK(h.get(v2_widget).status == 200);
  CHECK(h.get("/apis/example.com/v2").status == 200);
}

TEST_CASE("custom resources are validated against the schema and pruned of unknown fields") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = std::chrono::milliseconds(0);
  Harness h(options);
  REQUIRE(h.post(kCrds, kWidgetCrd).status == 201);
  h.api.tick();

  auto missing = h.post(kWidgets, widget(R"({"color":"red"})"));
  REQUIRE(missing.status == 422);
  CHECK(str(parse(missing), {"message"}) == "Widget.example.com \"w\" is invalid: spec.size: Required value");

  auto wrong_type = h.post(kWidgets, widget(R"({"size":"big"})"));
  REQUIRE(wrong_type.status == 422);
  CHECK(str(parse(wrong_type), {"message"}).find("spec.size in body must be of type integer") != std::string::npos);

  auto bad_enum = h.post(kWidgets, widget(R"({"size":1,"color":"green"})"));
  REQUIRE(bad_enum.status == 422);
  CHECK(str(parse(bad_enum), {"message"}).find("Unsupported value: \"green\": supported values: \"red\", \"blue\"") !=
        std::string::npos);
  CHECK(h.post(kWidgets, widget(R"({"size":0})")).status == 422);
  CHECK(h.post(kWidgets, widget(R"({"size":1,"tags":[1]})")).status == 422);

  auto strict = h.post(kWidgets + "?fieldValidation=Strict", widget(R"({"size":1,"unknown":1})"));
  CHECK(strict.status == 400);
  CHECK(
      str(parse(strict), {"message"}) ==
      "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.unknown\"");

  auto pruned = h.post(kWidgets, widget(R"({"size":2,"unknown":1,"free":{"any":{"thing":1}}})"));
  REQUIRE(pruned.status == 201);
  auto object = parse(pruned);
  CHECK(json::find_path(object, {"spec", "unknown"}) == nullptr);
  CHECK(json::find_path(object, {"spec", "free", "any", "thing"})->GetInt() == 1);
  CHECK(json::find_path(object, {"metadata", "generation"})->GetInt() == 1);
  // Custom resources do not take strategic merge patches.
  CHECK(h.call("PATCH", kWidgets + "/w", R"({"spec":{"size":3}})", "application/strategic-merge-patch+json").status ==
        415);
  auto merged = h.call("PATCH", kWidgets + "/w", R"({"spec":{"size":3}})", "application/merge-patch+json");
  REQUIRE(merged.status == 200);
  CHECK(json::find_path(parse(merged), {"metadata", "generation"})->GetInt() == 2);
}

TEST_CASE("deleting the CRD removes its custom resources and its discovery entries") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = std::chrono::milliseconds(0);
  Harness h(options);
  REQUIRE(h.post(kCrds, kWidgetCrd).status == 201);
  h.api.tick();
  REQUIRE(h.post(kWidgets, widget(R"({"size":1})")).status == 201);
  REQUIRE(h.del(kCrds + "/widgets.example.com").status == 200);
  CHECK_FALSE(in_discovery(h));
  CHECK(h.get(kWidgets + "/w").status == 404);
  REQUIRE(h.post(kCrds, kWidgetCrd).status == 201);
  h.api.tick();
  CHECK(h.get(kWidgets + "/w").status == 404);  // the old objects did not come back
}

TEST_CASE("a CRD whose name does not match its names is 422") {
  Harness h;
  std::string crd = kWidgetCrd;
  crd.replace(crd.find("widgets.example.com"), 19, "gadgets.example.com");
  CHECK(h.post(kCrds, crd).status == 422);
}

}  // namespace crd_test
