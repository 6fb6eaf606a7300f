// The PATCH formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
// strategic merge patch with merge keys and directives, as pure functions and
// through ApiServer (content types, 415 for strategic patches of custom resources).
#include "tests/emulator/patch.hpp"

#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace patch_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

std::string patched(const std::string& target, const std::string& patch, const std::string& kind) {
  auto doc = json::parse(target);
  auto operations = json::parse(patch);
  REQUIRE(doc);
  REQUIRE(operations);
  Status result = ok_status();
  if (kind == "merge") {
    apply_merge_patch(*doc, *operations, doc->GetAllocator());
  } else if (kind == "json") {
    result = apply_json_patch(*doc, *operations, doc->GetAllocator());
  } else {
    result = apply_strategic_merge_patch(*doc, *operations, doc->GetAllocator());
  }
  return result.ok() ? json::dump(*doc) : "error: " + result.error().message;
}

}  // namespace

TEST_CASE("merge patch replaces lists, merges maps and deletes with null") {
  CHECK(patched(R"({"a":{"b":1,"c":2},"l":[1,2]})", R"({"a":{"b":null,"d":3},"l":[3]})", "merge") ==
        R"({"a":{"c":2,"d":3},"l":[3]})");
}

TEST_CASE("json patch: add, remove, replace, move, copy, test") {
  CHECK(patched(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/1","value":9}])", "json") == R"({"a":[1,9,2]})");
  CHECK(patched(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/-","value":9}])", "json") == R"({"a":[1,2,9]})");
  CHECK(patched(R"({"a":1,"b":2})", R"([{"op":"remove","path":"/a"}])", "json") == R"({"b":2})");
  CHECK(patched(R"({"a":1})", R"([{"op":"replace","path":"/a","value":2}])", "json") == R"({"a":2})");
  CHECK(patched(R"({"a":{"x":1}})", R"([{"op":"move","from":"/a/x","path":"/b"}])", "json") == R"({"a":{},"b":1})");
  CHECK(patched(R"({"a":1})", R"([{"op":"copy","from":"/a","path":"/b"}])", "json") == R"({"a":1,"b":1})");
  CHECK(patched(R"({"m/k":1})", R"([{"op":"replace","path":"/m~1k","value":2}])", "json") == R"({"m/k":2})");
  CHECK(patched(R"({"a":1})", R"([{"op":"test","path":"/a","value":2}])", "json").rfind("error:", 0) == 0);
  CHECK(patched(R"({"a":1})", R"([{"op":"remove","path":"/zz"}])", "json").rfind("error:", 0) == 0);
  CHECK(patched(R"({"a":1})", R"([{"op":"replace","path":"/zz","value":1}])", "json").rfind("error:", 0) == 0);
}

TEST_CASE("strategic merge patch merges containers, ports, env and volumes by key") {
  std::string pod =
      R"({"spec":{"containers":[{"name":"a","image":"a:1","env":[{"name":"X","value":"1"}],"ports":[{"containerPort":80}]},{"name":"b","image":"b:1"}],"volumes":[{"name":"v1","emptyDir":{}}]}})";
  std::string patch =
      R"({"spec":{"containers":[{"name":"a","image":"a:2","env":[{"name":"Y","value":"2"}],"ports":[{"containerPort":443}]}],"volumes":[{"name":"v2","emptyDir":{}}]}})";
  CHECK(
      patched(pod, patch, "strategic") ==
      R"({"spec":{"containers":[{"name":"a","image":"a:2","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}],"ports":[{"containerPort":80},{"containerPort":443}]},{"name":"b","image":"b:1"}],"volumes":[{"name":"v1","emptyDir":{}},{"name":"v2","emptyDir":{}}]}})");
}

TEST_CASE(
    "strategic merge patch directives: $patch delete/replace, $retainKeys, $deleteFromPrimitiveList, "
    "$setElementOrder") {
  std::string pod = R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]},"metadata":{"finalizers":["x","y"]}})";
  CHECK(patched(pod, R"({"spec":{"containers":[{"name":"a","$patch":"delete"}]}})", "strategic") ==
        R"({"spec":{"containers":[{"name":"b"}]},"metadata":{"finalizers":["x","y"]}})");
  CHECK(patched(pod, R"({"spec":{"containers":[{"name":"c"},{"$patch":"replace"}]}})", "strategic") ==
        R"({"spec":{"containers":[{"name":"c"}]},"metadata":{"finalizers":["x","y"]}})");
  CHECK(patched(pod, R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}})", "strategic") ==
        R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]},"metadata":{"finalizers":["y"]}})");
  CHECK(patched(pod, R"({"metadata":{"finalizers":["z"]}})", "strategic") ==
        R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]},"metadata":{"finalizers":["x","y","z"]}})");
  CHECK(patched(R"({"s":{"a":1,"b":2}})", R"({"s":{"$retainKeys":["b","c"],"c":3}})", "strategic") ==
        R"({"s":{"b":2,"c":3}})");
  CHECK(patched(R"({"s":{"a":1}})", R"({"s":{"$patch":"replace","z":1}})", "strategic") == R"({"s":{"z":1}})");
  CHECK(patched(pod, R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}]}})", "strategic") ==
        json::dump(*json::parse(pod)));
  // Lists without a merge key (args) are replaced.
  CHECK(patched(R"({"args":["a","b"]})", R"({"args":["c"]})", "strategic") == R"({"args":["c"]})");
}

TEST_CASE("PATCH through the API: the three formats, unknown content type 415, missing object 404") {
  Harness h;
  const std::string path = "/api/v1/namespaces/default/configmaps/p";
  REQUIRE(h.post("/api/v1/namespaces/default/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"a":"1"}})")
              .status == 201);
  auto merge = h.call("PATCH", path, R"({"data":{"b":"2"}})", "application/merge-patch+json");
  REQUIRE(merge.status == 200);
  CHECK(str(parse(merge), {"data", "b"}) == "2");
  auto json_patch = h.call("PATCH", path, R"([{"op":"remove","path":"/data/a"}])", "application/json-patch+json");
  REQUIRE(json_patch.status == 200);
  CHECK(json::find_path(parse(json_patch), {"data", "a"}) == nullptr);
  auto strategic = h.call("PATCH", path, R"({"data":{"c":"3"}})", "application/strategic-merge-patch+json");
  REQUIRE(strategic.status == 200);
  CHECK(str(parse(strategic), {"data", "c"}) == "3");
  CHECK(h.call("PATCH", path, R"({"data":{}})", "text/plain").status == 415);
  CHECK(h.call("PATCH", path + "x", R"({"data":{}})", "application/merge-patch+json").status == 404);
  auto failing_test =
      h.call("PATCH", path, R"([{"op":"test","path":"/data/b","value":"nope"}])", "application/json-patch+json");
  CHECK(failing_test.status == 422);
  // A patch carrying a stale resourceVersion is a conflict.
  auto stale =
      h.call("PATCH", path, R"({"metadata":{"resourceVersion":"1"},"data":{"d":"4"}})", "application/merge-patch+json");
  CHECK(stale.status == 409);
}

}  // namespace patch_test
