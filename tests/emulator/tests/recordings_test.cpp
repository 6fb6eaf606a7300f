// The conformance tests' comparison helper: a difference is reported with its
// path and both values; ignored values must still be there with the same type;
// ignored subtrees may differ entirely. Without these guarantees a conformance
// test could pass on any answer.
#include "tests/emulator/tests/recordings.hpp"

#include <catch2/catch.hpp>

namespace recordings_test {

using namespace kstate;
using namespace kstate::emulator::test;

namespace {

json::Document doc(const char* text) {
  auto parsed = json::parse(text);
  REQUIRE(parsed);
  return std::move(*parsed);
}

}  // namespace

TEST_CASE("pointer patterns: * is one segment, ** any number, ~1 a slash in a key") {
  CHECK(pointer_matches("/metadata/uid", "/metadata/uid"));
  CHECK_FALSE(pointer_matches("/metadata/uid", "/metadata/name"));
  CHECK(pointer_matches("/items/3/metadata/uid", "/items/*/metadata/uid"));
  CHECK_FALSE(pointer_matches("/items/3/x/metadata/uid", "/items/*/metadata/uid"));
  CHECK(pointer_matches("/items/3/x/metadata/uid", "**/metadata/uid"));
  CHECK(pointer_matches("/metadata/uid", "**/metadata/uid"));
  CHECK(pointer_matches("/metadata/annotations/a~1b", "/metadata/annotations/a~1b"));
  CHECK_FALSE(pointer_matches("/metadata", "/metadata/uid"));
}

TEST_CASE("a comparison reports each difference with its path and both values") {
  auto expected = doc(R"({"kind":"ConfigMap","data":{"a":"1","b":"2"},"items":[1,2],"gone":true})");
  auto actual = doc(R"({"kind":"ConfigMap","data":{"a":"1","b":"3"},"items":[1,2,3],"extra":null})");
  auto mismatches = JsonComparison().compare(expected, actual);
  CHECK(describe(mismatches) ==
        "/data/b: expected \"2\", got \"3\"\n"
        "/items/2: expected <missing>, got 3\n"
        "/gone: expected true, got <missing>\n"
        "/extra: expected <missing>, got null\n");
  CHECK(JsonComparison().compare(expected, expected).empty());
  CHECK(describe(JsonComparison().compare(doc("[1]"), doc(R"({"a":1})"))) == "/: expected [1], got {\"a\":1}\n");
}

TEST_CASE("run-to-run values are ignored but must be present with the same type") {
  auto comparison = JsonComparison::run_to_run();
  auto expected = doc(
      R"({"metadata":{"uid":"a","resourceVersion":"1","creationTimestamp":null},"items":[{"metadata":{"uid":"x"}}]})");
  auto other_values = doc(
      R"({"metadata":{"uid":"b","resourceVersion":"2","creationTimestamp":null},"items":[{"metadata":{"uid":"y"}}]})");
  CHECK(comparison.compare(expected, other_values).empty());
  auto missing = doc(R"({"metadata":{"resourceVersion":"2","creationTimestamp":"2026-01-01T00:00:00Z"},"items":[{}]})");
  CHECK(describe(comparison.compare(expected, missing)) ==
        "/metadata/uid: expected \"a\", got <missing>\n"
        "/metadata/creationTimestamp: expected null, got \"2026-01-01T00:00:00Z\"\n"
        "/items/0/metadata: expected {\"uid\":\"x\"}, got <missing>\n");
}

TEST_CASE("an ignored subtree may differ or be missing on either side") {
  auto comparison = JsonComparison().ignore_subtree("/data/ca.crt").ignore_subtree("/status");
  auto expected = doc(R"({"data":{"ca.crt":"PEM 1","k":"v"},"status":{"a":1}})");
  CHECK(comparison.compare(expected, doc(R"({"data":{"ca.crt":"PEM 2","k":"v"}})")).empty());
  CHECK(comparison.compare(expected, doc(R"({"data":{"k":"v"},"status":[]})")).empty());
  CHECK(describe(comparison.compare(expected, doc(R"({"data":{"k":"w"}})"))) == "/data/k: expected \"v\", got \"w\"\n");
}

TEST_CASE("erase_items drops the recorded cluster's other tenants from an array") {
  auto groups = doc(R"({"groups":[{"name":"apps"},{"name":"example.com"},{"name":"batch"}]})");
  CHECK(erase_items(groups, "/groups", [](const json::Value& item) {
          return json::string_or(json::find(item, "name"), "") == "example.com";
        }) == 1);
  CHECK(json::dump(groups) == R"({"groups":[{"name":"apps"},{"name":"batch"}]})");
  CHECK(erase_items(groups, "/nothing", [](const json::Value&) { return true; }) == 0);
}

TEST_CASE("compare_reply checks the status, the headers clients read and the body") {
  auto exchange = load_recording("13");
  CHECK(exchange.file == "13-get-configmap-404.json");
  CHECK(exchange.status == 404);
  Reply reply{404,
              {{"content-type", "application/json"}, {"cache-control", "no-cache, private"}},
              R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
              R"("message":"configmaps \"missing\" not found","reason":"NotFound",)"
              R"("details":{"name":"missing","kind":"configmaps"},"code":404})"};
  CHECK(compare_reply(exchange, reply, JsonComparison::run_to_run()).empty());
  reply.status = 200;
  reply.headers["content-type"] = "text/plain";
  reply.headers["warning"] = "299 - \"x\"";
  CHECK(describe(compare_reply(exchange, reply, JsonComparison::run_to_run())) ==
        "status: expected 404, got 200\n"
        "header content-type: expected application/json, got text/plain\n"
        "header warning: expected <none>, got 299 - \"x\"\n");
  auto text = load_recording("08");
  Reply page{404,
             {{"content-type", "text/plain; charset=utf-8"}, {"cache-control", "no-cache, private"}},
             "404 page not found\n"};
  CHECK(compare_reply(text, page, JsonComparison::run_to_run()).empty());
  page.body = "404 page not found";
  CHECK(describe(compare_reply(text, page, JsonComparison::run_to_run())) ==
        "body: expected \"404 page not found\\n\", got \"404 page not found\"\n");
}

}  // namespace recordings_test
