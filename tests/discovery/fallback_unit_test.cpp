// Discovery's fallback decisions with the fake transport (no server): an old server
// that answers the aggregated Accept header with legacy JSON has its /api and /apis
// answers reused (2 + one request per group-version), one that answers 406 is asked
// again with plain JSON, and a failing group-version is skipped, not fatal.
#include <catch2/catch.hpp>

#include "core/dynamic_client.hpp"
#include "discovery/discovery.hpp"
#include "tests/support/fake_transport.hpp"

namespace fallback_unit_test {

using namespace kstate;
using namespace kstate::discovery;
using kstate::testing::FakeTransport;

namespace {

const char* api_versions = R"({"kind":"APIVersions","versions":["v1"]})";
const char* group_list = R"({"kind":"APIGroupList","apiVersion":"v1","groups":[
  {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],
   "preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
  {"name":"metrics.k8s.io","versions":[{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],
   "preferredVersion":{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}}]})";
const char* core_resources = R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
  {"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list"],
   "shortNames":["cm"]}]})";
const char* apps_resources = R"({"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
  {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get","patch"]},
  {"name":"deployments/scale","singularName":"","namespaced":true,"kind":"Scale","verbs":["get"]}]})";

// An old API server: legacy documents whatever the Accept header asks, or 406 when
// `refuse_aggregated_only` and the header has no plain JSON.
Result<Response> old_server(const Request& request, bool answer_406) {
  Response response;
  response.status = 200;
  response.headers = {{"content-type", "application/json"}};
  bool aggregated_only = request.accept.find("apidiscovery") != std::string::npos &&
                         request.accept.find(",application/json") == std::string::npos;
  if (answer_406 && request.accept.find("apidiscovery") != std::string::npos) {
    aggregated_only = true;
  }
  if (aggregated_only && (request.path == "/api" || request.path == "/apis")) {
    response.status = 406;
    response.body = R"({"kind":"Status","status":"Failure","reason":"NotAcceptable","code":406})";
  } else if (request.path == "/api") {
    response.body = api_versions;
  } else if (request.path == "/apis") {
    response.body = group_list;
  } else if (request.path == "/api/v1") {
    response.body = core_resources;
  } else if (request.path == "/apis/apps/v1") {
    response.body = apps_resources;
  } else {
    response.status = 503;  // a broken aggregated API (metrics-server down)
    response.body = R"({"kind":"Status","status":"Failure","reason":"ServiceUnavailable","code":503})";
  }
  return response;
}

}  // namespace

TEST_CASE("legacy answers to the aggregated Accept header are reused: 2 + one request per group-version",
          "[discovery][fake]") {
  FakeTransport fake;
  fake.handle([](const Request& request) { return old_server(request, false); });
  boost::asio::io_context io;
  FetchOptions options;
  auto fetched = run_sync(io, fetch_resources(fake, options));
  REQUIRE(fetched.ok());
  CHECK(fetched->format == "legacy");
  CHECK(fetched->core_resources.size() == 1);
  CHECK(fetched->group_resources.size() == 1);  // deployments (scale is a subresource)
  REQUIRE(fetched->failures.size() == 1);
  CHECK(fetched->failures[0].group_version == "metrics.k8s.io/v1beta1");
  CHECK(fetched->failures[0].error.http_status == 503);
  // /api, /apis (answers reused), /api/v1, /apis/apps/v1, /apis/metrics.k8s.io/v1beta1.
  CHECK(fake.requests().size() == 5);
  CHECK(fake.requests()[0].accept == std::string(aggregated_accept));
  WARN("legacy fallback with reused answers: " << fake.requests().size() << " requests for 3 group-versions");
}

TEST_CASE("a 406 to the aggregated Accept header falls back to plain JSON discovery", "[discovery][fake]") {
  FakeTransport fake;
  fake.handle([](const Request& request) { return old_server(request, true); });
  boost::asio::io_context io;
  FetchOptions options;
  auto fetched = run_sync(io, fetch_resources(fake, options));
  REQUIRE(fetched.ok());
  CHECK(fetched->format == "legacy");
  CHECK(fetched->core_resources.size() == 1);
  // 406, then /api, /apis and the three group-versions with Accept: application/json.
  REQUIRE(fake.requests().size() == 6);
  CHECK(fake.requests()[0].path == "/api");
  CHECK(fake.requests()[1].path == "/api");
  CHECK(fake.requests()[1].accept == "application/json");
  CHECK(fake.stats().requests["GET 406"] == 1);
}

}  // namespace fallback_unit_test
