// Fields left to other writers (manifests/ignore_fields.hpp): the pointers the
// annotation and config rules accept, which objects a rule matches, and what an
// existing object's desired form keeps of the live one.
#include "manifests/ignore_fields.hpp"

#include <catch2/catch.hpp>

namespace ignore_fields_test {

using namespace kstate::manifests;
namespace json = kstate::json;

namespace {

json::Document parse(const char* text) {
  auto parsed = json::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("parse_ignore_fields: JSON pointers, comma-separated", "[ignore-fields]") {
  auto pointers = parse_ignore_fields(" /spec/replicas, /metadata/annotations/cert-manager.io~1inject-ca-from ,");
  REQUIRE(pointers.ok());
  CHECK(*pointers ==
        std::vector<std::string>{"/spec/replicas", "/metadata/annotations/cert-manager.io~1inject-ca-from"});
  struct Case {
    const char* text;
    const char* error;
  };
  const std::vector<Case> bad = {
      {"spec.replicas", "spec.replicas: not a JSON pointer to a field"},
      {"/spec/~2", "/spec/~2: not a JSON pointer to a field"},
      {"/kind", "/kind: names the object itself"},
      {"/metadata/name", "/metadata/name: names the object itself"},
  };
  for (const auto& test : bad) {
    INFO(test.text);
    auto parsed = parse_ignore_fields(test.text);
    REQUIRE_FALSE(parsed.ok());
    CHECK_THAT(parsed.error().message, Catch::StartsWith(test.error));
  }
}

TEST_CASE("parse_ignore_fields_rule: kind, group, namespace and name", "[ignore-fields]") {
  struct Case {
    const char* text;
    const char* group;
    const char* object_namespace;
    const char* name;
    bool matches;
  };
  // Each rule against a Deployment apps/v1 shop/web.
  const std::vector<Case> cases = {
      {"Deployment=/spec/replicas", "apps", "shop", "web", true},
      {"Deployment.apps=/spec/replicas", "apps", "shop", "web", true},
      {"Deployment.example.com=/spec/replicas", "apps", "shop", "web", false},
      {"Deployment/web=/spec/replicas", "apps", "shop", "web", true},
      {"Deployment/api=/spec/replicas", "apps", "shop", "web", false},
      {"Deployment/shop/web=/spec/replicas", "apps", "shop", "web", true},
      {"Deployment/other/web=/spec/replicas", "apps", "shop", "web", false},
      {"Deployment/*/web=/spec/replicas", "apps", "shop", "web", true},
      {"StatefulSet=/spec/replicas", "apps", "shop", "web", false},
  };
  for (const auto& test : cases) {
    INFO(test.text);
    auto rule = parse_ignore_fields_rule(test.text);
    REQUIRE(rule.ok());
    CHECK(rule->pointers == std::vector<std::string>{"/spec/replicas"});
    CHECK(rule->matches("apps", "Deployment", test.object_namespace, test.name) == test.matches);
  }
  for (const char* bad :
       {"Deployment", "Deployment=", "Deployment//web=/spec/replicas", "a/b/c/d=/x", "Deployment=spec.replicas"}) {
    INFO(bad);
    CHECK_FALSE(parse_ignore_fields_rule(bad).ok());
  }
}

TEST_CASE("leave_fields_to_others: the live value, or none, at each pointer", "[ignore-fields]") {
  json::Document desired = parse(
      R"({"spec":{"replicas":2,"template":{"metadata":{"annotations":{"a":"1","injected":"mine"}}}},"data":{"x":"y"}})");
  json::Document live =
      parse(R"({"spec":{"replicas":7,"template":{"metadata":{"annotations":{"a":"1"}}}},"data":{"x":"z"}})");
  leave_fields_to_others(desired, live,
                         {"/spec/replicas", "/spec/template/metadata/annotations/injected", "/spec/notInDesired"});
  CHECK(json::dump(desired) ==
        R"({"spec":{"replicas":7,"template":{"metadata":{"annotations":{"a":"1"}}}},"data":{"x":"y"}})");
}

TEST_CASE("give_up_fields: a field another manager owns leaves the apply; one only kstate owns stays",
          "[ignore-fields]") {
  json::Document live = parse(R"({"metadata":{"managedFields":[
    {"manager":"kstate","operation":"Apply","fieldsV1":{"f:spec":{"f:replicas":{},"f:paused":{}}}},
    {"manager":"horizontal-pod-autoscaler","operation":"Update","subresource":"scale",
     "fieldsV1":{"f:spec":{"f:replicas":{}}}},
    {"manager":"kstate","operation":"Update","fieldsV1":{"f:metadata":{"f:annotations":{"f:note":{}}}}}]},
    "spec":{"replicas":5,"paused":false}})");
  struct Case {
    const char* pointer;
    bool owned_by_another;
  };
  const std::vector<Case> cases = {
      {"/spec/replicas", true},                           // the autoscaler's
      {"/spec/paused", false},                            // only kstate's apply
      {"/metadata/annotations/note", true},               // kstate's own Update entry is another manager's write
      {"/spec/template/spec/containers/0/image", false},  // under a list: not looked up
      {"/spec/missing", false},
  };
  for (const auto& test : cases) {
    INFO(test.pointer);
    CHECK(owned_by_another_manager(live, test.pointer, "kstate") == test.owned_by_another);
  }
  json::Document desired = parse(R"({"spec":{"replicas":5,"paused":false}})");
  give_up_fields(desired, live, {"/spec/replicas", "/spec/paused"}, "kstate");
  CHECK(json::dump(desired) == R"({"spec":{"paused":false}})");
}

}  // namespace ignore_fields_test
