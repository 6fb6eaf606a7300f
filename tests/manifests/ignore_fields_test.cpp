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

TEST_CASE("leave_fields_to_others: under a list, the number picks the live item and its name the manifest's",
          "[ignore-fields]") {
  struct Row {
    const char* name;
    const char* pointer;
    const char* desired;
    const char* expected;
  };
  // The cluster lists app first, the manifest sidecar first.
  const char* live =
      R"({"spec":{"containers":[{"name":"app","image":"a:2"},{"name":"sidecar","image":"s:9"}],)"
      R"("positional":[{"x":1},{"x":2}]},"webhooks":[{"name":"a","clientConfig":{}},{"name":"b","clientConfig":{"caBundle":"Q0E="}}]})";
  const Row rows[] = {
      {"another order: the live app's image goes to the manifest's app", "/spec/containers/0/image",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:1"},{"name":"app","image":"a:1"}]}})",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:1"},{"name":"app","image":"a:2"}]}})"},
      {"a whole item by name", "/spec/containers/1",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:1"},{"name":"app","image":"a:1"}]}})",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:9"},{"name":"app","image":"a:1"}]}})"},
      {"the live item has none: left out of the manifest's item of that name", "/webhooks/0/clientConfig/caBundle",
       R"({"webhooks":[{"name":"b","clientConfig":{"caBundle":"bWluZQ=="}},{"name":"a","clientConfig":{"caBundle":"eA=="}}]})",
       R"({"webhooks":[{"name":"b","clientConfig":{"caBundle":"bWluZQ=="}},{"name":"a","clientConfig":{}}]})"},
      {"the manifest has no item of that name: unchanged", "/spec/containers/0/image",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:1"}]}})",
       R"({"spec":{"containers":[{"name":"sidecar","image":"s:1"}]}})"},
      {"two items of that name: unchanged (which one is unknown)", "/spec/containers/0/image",
       R"({"spec":{"containers":[{"name":"app","image":"a:1"},{"name":"app","image":"a:3"}]}})",
       R"({"spec":{"containers":[{"name":"app","image":"a:1"},{"name":"app","image":"a:3"}]}})"},
      {"items without a name: by position", "/spec/positional/1/x", R"({"spec":{"positional":[{"x":5},{"x":6}]}})",
       R"({"spec":{"positional":[{"x":5},{"x":2}]}})"},
  };
  for (const Row& row : rows) {
    DYNAMIC_SECTION(row.name) {
      json::Document desired = parse(row.desired);
      leave_fields_to_others(desired, parse(live), {row.pointer});
      CHECK(json::dump(desired) == json::dump(parse(row.expected)));
    }
  }
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
      {"/spec/template/spec/containers/0/image", false},  // no such list in the live object
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

// An object whose lists other managers write into: cert-manager's cainjector owns
// webhook b's caBundle, a sidecar injector owns the istio-proxy container and the web
// container's hostPort, another controller a finalizer (a set) and the second item of
// a positional list.
const char* const kListsLive = R"({"metadata":{"finalizers":["kstate.io/x","other.io/y"],"managedFields":[
  {"manager":"kstate","operation":"Apply","fieldsV1":{
    "f:metadata":{"f:finalizers":{"v:\"kstate.io/x\"":{}}},
    "f:webhooks":{
      "k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:clientConfig":{"f:caBundle":{},"f:service":{"f:name":{}}}},
      "k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:clientConfig":{"f:service":{"f:name":{}}}}},
    "f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:image":{},
      "f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}},
  {"manager":"cert-manager-cainjector","operation":"Update","fieldsV1":{
    "f:webhooks":{"k:{\"name\":\"b\"}":{"f:clientConfig":{"f:caBundle":{}}}}}},
  {"manager":"sidecar-injector","operation":"Update","fieldsV1":{"f:spec":{"f:template":{"f:spec":{"f:containers":{
    "k:{\"name\":\"istio-proxy\"}":{".":{},"f:name":{},"f:image":{}},
    "k:{\"name\":\"web\"}":{"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{"f:hostPort":{}}}}}}}}}},
  {"manager":"other-controller","operation":"Update","fieldsV1":{
    "f:metadata":{"f:finalizers":{"v:\"other.io/y\"":{}}},
    "f:spec":{"f:positional":{"i:1":{"f:x":{}}}}}}]},
  "webhooks":[{"name":"a","clientConfig":{"caBundle":"QQ==","service":{"name":"a"}}},
              {"name":"b","clientConfig":{"caBundle":"Qg==","service":{"name":"b"}}}],
  "spec":{"positional":[{"x":1},{"x":2}],"template":{"spec":{"containers":[
    {"name":"web","image":"web:1","ports":[{"containerPort":80,"protocol":"TCP","hostPort":8080}]},
    {"name":"istio-proxy","image":"proxy:1"}]}}}})";

TEST_CASE("owned_by_another_manager: a number picks the live item, managedFields name it by key, value or position",
          "[ignore-fields]") {
  json::Document live = parse(kListsLive);
  struct Case {
    const char* pointer;
    bool owned_by_another;
  };
  const std::vector<Case> cases = {
      {"/webhooks/1/clientConfig/caBundle", true},   // k:{"name":"b"}: the cainjector's
      {"/webhooks/0/clientConfig/caBundle", false},  // webhook a's: only kstate's apply
      {"/webhooks/1/clientConfig/service", false},
      {"/webhooks/2/clientConfig/caBundle", false},  // no such live item
      {"/webhooks/b/clientConfig/caBundle", false},  // a list is indexed by number
      {"/spec/template/spec/containers/1", true},    // the injected container itself
      {"/spec/template/spec/containers/1/image", true},
      {"/spec/template/spec/containers/0/image", false},
      {"/spec/template/spec/containers/0/ports/0/hostPort", true},  // a key of two fields, in a list item
      {"/spec/template/spec/containers/0/ports/0/containerPort", false},
      {"/metadata/finalizers/1", true},  // v:"other.io/y"
      {"/metadata/finalizers/0", false},
      {"/spec/positional/1/x", true},  // i:1
      {"/spec/positional/0/x", false},
  };
  for (const auto& test : cases) {
    INFO(test.pointer);
    CHECK(owned_by_another_manager(live, test.pointer, "kstate") == test.owned_by_another);
  }
}

TEST_CASE("give_up_fields: under a list item, the field leaves the desired item with the same key, or stays",
          "[ignore-fields]") {
  json::Document live = parse(kListsLive);
  struct Case {
    const char* name;
    const char* pointer;
    const char* desired;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"the manifest lists the webhooks in another order: b's caBundle leaves b", "/webhooks/1/clientConfig/caBundle",
       R"({"webhooks":[{"name":"b","clientConfig":{"caBundle":"Qg==","service":{"name":"b"}}},{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})",
       R"({"webhooks":[{"name":"b","clientConfig":{"service":{"name":"b"}}},{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})"},
      {"no desired item is b: nothing changes", "/webhooks/1/clientConfig/caBundle",
       R"({"webhooks":[{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})",
       R"({"webhooks":[{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})"},
      {"two desired items are b: ambiguous, the live value stays", "/webhooks/1/clientConfig/caBundle",
       R"({"webhooks":[{"name":"b","clientConfig":{"caBundle":"Qg=="}},{"name":"b","clientConfig":{"caBundle":"Qg=="}}]})",
       R"({"webhooks":[{"name":"b","clientConfig":{"caBundle":"Qg=="}},{"name":"b","clientConfig":{"caBundle":"Qg=="}}]})"},
      {"a field only kstate owns stays", "/webhooks/0/clientConfig/caBundle",
       R"({"webhooks":[{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})",
       R"({"webhooks":[{"name":"a","clientConfig":{"caBundle":"QQ=="}}]})"},
      {"a port without protocol is the TCP one the server defaulted",
       "/spec/template/spec/containers/0/ports/0/hostPort",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"hostPort":8080}]}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80}]}]}}}})"},
      {"a UDP port is another item", "/spec/template/spec/containers/0/ports/0/hostPort",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"UDP","hostPort":8080}]}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"UDP","hostPort":8080}]}]}}}})"},
      {"an injected container the manifest also lists leaves it", "/spec/template/spec/containers/1",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"istio-proxy","image":"proxy:1"},{"name":"web"}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web"}]}}}})"},
      {"a set item by value", "/metadata/finalizers/1", R"({"metadata":{"finalizers":["other.io/y","kstate.io/x"]}})",
       R"({"metadata":{"finalizers":["kstate.io/x"]}})"},
      {"a positional item by position", "/spec/positional/1/x", R"({"spec":{"positional":[{"x":1},{"x":2}]}})",
       R"({"spec":{"positional":[{"x":1},{}]}})"},
  };
  for (const auto& test : cases) {
    INFO(test.name);
    json::Document desired = parse(test.desired);
    give_up_fields(desired, live, {test.pointer}, "kstate");
    CHECK(json::dump(desired) == test.expected);
  }
}

}  // namespace ignore_fields_test
