// Discovery as kube-apiserver serves it: /version, legacy /api, /apis,
// /apis/G, /apis/G/V, aggregated discovery v2 and v2beta1 chosen by Accept with
// ETag / If-None-Match, and OpenAPI v3 index documents.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace discovery_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

Response get_with(Harness& h, const std::string& path, const std::string& accept, const std::string& etag = "") {
  Request request;
  request.method = "GET";
  request.path = path;
  request.accept = accept;
  request.if_none_match = etag;
  request.identity = Harness::admin();
  return h.api.handle(request);
}

const json::Value* find_resource(const json::Value& list, const std::string& name) {
  for (const auto& entry : json::find(list, "resources")->GetArray()) {
    if (str(entry, {"name"}) == name) {
      return &entry;
    }
  }
  return nullptr;
}

const char* kAggregatedV2 =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/"
    "json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

}  // namespace

TEST_CASE("/version reports the configured version") {
  ApiServer::Options options;
  options.version = "1.30";
  Harness h(options);
  auto version = parse(h.get("/version"));
  CHECK(str(version, {"major"}) == "1");
  CHECK(str(version, {"minor"}) == "30");
  CHECK(str(version, {"gitVersion"}) == "v1.30.0");
}

TEST_CASE("legacy discovery lists groups, versions and resources with scope, verbs, short names, subresources") {
  Harness h;
  auto api = parse(h.get("/api"));
  CHECK(str(api, {"kind"}) == "APIVersions");
  auto groups = parse(h.get("/apis"));
  CHECK(str(groups, {"kind"}) == "APIGroupList");
  std::vector<std::string> names;
  for (const auto& group : json::find(groups, "groups")->GetArray()) {
    names.push_back(str(group, {"name"}));
  }
  for (const char* expected : {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io",
                               "coordination.k8s.io", "networking.k8s.io", "policy", "storage.k8s.io",
                               "scheduling.k8s.io", "admissionregistration.k8s.io", "autoscaling"}) {
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  auto apps_group = parse(h.get("/apis/apps"));
  CHECK(str(apps_group, {"preferredVersion", "groupVersion"}) == "apps/v1");

  auto core = parse(h.get("/api/v1"));
  CHECK(str(core, {"groupVersion"}) == "v1");
  const auto* namespaces = find_resource(core, "namespaces");
  REQUIRE(namespaces != nullptr);
  CHECK_FALSE(json::find(*namespaces, "namespaced")->GetBool());
  const auto* configmaps = find_resource(core, "configmaps");
  REQUIRE(configmaps != nullptr);
  CHECK(json::find(*configmaps, "namespaced")->GetBool());
  CHECK(std::string((*json::find(*configmaps, "shortNames"))[0].GetString()) == "cm");
  CHECK(json::find(*configmaps, "verbs")->Size() == 8);

  auto apps = parse(h.get("/apis/apps/v1"));
  CHECK(find_resource(apps, "deployments/status") != nullptr);
  const auto* scale = find_resource(apps, "deployments/scale");
  REQUIRE(scale != nullptr);
  CHECK(str(*scale, {"group"}) == "autoscaling");
  CHECK(str(*scale, {"kind"}) == "Scale");
  CHECK(find_resource(apps, "daemonsets/scale") == nullptr);
  CHECK(h.get("/apis/apps/v2").status == 404);
  CHECK(h.get("/apis/nothing").status == 404);
}

TEST_CASE("aggregated discovery v2 and v2beta1 are selected by Accept and carry an ETag honoured by If-None-Match") {
  Harness h;
  auto v2 = get_with(h, "/apis", kAggregatedV2);
  REQUIRE(v2.status == 200);
  CHECK(v2.content_type == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  auto document = parse(v2);
  CHECK(str(document, {"kind"}) == "APIGroupDiscoveryList");
  CHECK(str(document, {"apiVersion"}) == "apidiscovery.k8s.io/v2");
  bool found_deployments = false;
  for (const auto& group : json::find(document, "items")->GetArray()) {
    if (str(group, {"metadata", "name"}) != "apps") {
      continue;
    }
    for (const auto& resource : (*json::find(group, "versions"))[0]["resources"].GetArray()) {
      if (str(resource, {"resource"}) == "deployments") {
        found_deployments = true;
        CHECK(str(resource, {"scope"}) == "Namespaced");
        CHECK(str(resource, {"responseKind", "kind"}) == "Deployment");
        CHECK(json::find(resource, "subresources")->Size() == 2);
      }
    }
  }
  CHECK(found_deployments);
  std::string etag;
  for (const auto& [name, value] : v2.headers) {
    if (name == "Etag") {  // (as Go spells it, recording 04)
      etag = value;
    }
  }
  REQUIRE_FALSE(etag.empty());
  auto cached = get_with(h, "/apis", kAggregatedV2, etag);
  CHECK(cached.status == 304);
  CHECK(cached.body.empty());
  CHECK(get_with(h, "/apis", kAggregatedV2, "\"stale\"").status == 200);

  auto beta = get_with(h, "/api", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList");
  CHECK(str(parse(beta), {"apiVersion"}) == "apidiscovery.k8s.io/v2beta1");
  auto legacy = get_with(h, "/api", "application/json");
  CHECK(str(parse(legacy), {"kind"}) == "APIVersions");
}

TEST_CASE("OpenAPI v3 lists every group-version - each document advertises fieldValidation on PATCH") {
  Harness h;
  auto index = parse(h.get("/openapi/v3"));
  auto url = str(index, {"paths", "apis/apps/v1", "serverRelativeURL"});
  REQUIRE(url.rfind("/openapi/v3/apis/apps/v1?hash=", 0) == 0);
  auto apps = parse(h.get("/openapi/v3/apis/apps/v1"));
  const auto* patch =
      json::find_path(apps, {"paths", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch"});
  REQUIRE(patch != nullptr);
  CHECK(str(*patch, {"x-kubernetes-group-version-kind", "kind"}) == "Deployment");
  CHECK(h.get("/openapi/v3/api/v1").status == 200);
  CHECK(h.get("/openapi/v3/apis/nothing/v1").status == 404);
  // No schemas by default: kubectl keeps its compiled-in patch rules.
  const auto* none = json::find_path(apps, {"components", "schemas"});
  REQUIRE(none != nullptr);
  CHECK(none->ObjectEmpty());
}

TEST_CASE("OpenAPI v3 with --openapi-schemas: the built-in field table in kube-apiserver's shape") {
  ApiServer::Options options;
  options.openapi_schemas = true;
  Harness h(options);
  auto dumped = [](const json::Value& object, std::initializer_list<std::string_view> path) {
    const json::Value* value = json::find_path(object, path);
    return value != nullptr ? json::dump(*value) : std::string();
  };
  auto apps = parse(h.get("/openapi/v3/apis/apps/v1"));
  const auto* schemas = json::find_path(apps, {"components", "schemas"});
  REQUIRE(schemas != nullptr);
  const auto* deployment = json::find(*schemas, "io.k8s.api.apps.v1.Deployment");
  REQUIRE(deployment != nullptr);
  CHECK(dumped(*deployment, {"x-kubernetes-group-version-kind"}) ==
        R"([{"group":"apps","kind":"Deployment","version":"v1"}])");
  CHECK(dumped(*deployment, {"properties", "spec"}) ==
        R"({"allOf":[{"$ref":"#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]})");
  CHECK(dumped(*deployment, {"properties", "metadata"}) ==
        R"({"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]})");
  const auto* spec = json::find(*schemas, "io.k8s.api.apps.v1.DeploymentSpec");
  REQUIRE(spec != nullptr);
  CHECK(dumped(*spec, {"required"}) == R"(["selector","template"])");
  CHECK(dumped(*spec, {"properties", "replicas"}) == R"({"type":"integer","format":"int32"})");
  // Referenced schemas of other groups come along (the pod template's), as in kube-apiserver's documents.
  CHECK(dumped(*schemas, {"io.k8s.api.core.v1.Container", "required"}) == R"(["name"])");
  CHECK(dumped(*schemas, {"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "oneOf"}) ==
        R"([{"type":"integer"},{"type":"string"}])");
  // The core group's document has ConfigMap and Namespace; a group without table kinds, none.
  auto core = parse(h.get("/openapi/v3/api/v1"));
  CHECK(json::find_path(core, {"components", "schemas", "io.k8s.api.core.v1.ConfigMap"}) != nullptr);
  CHECK(json::find_path(core, {"components", "schemas", "io.k8s.api.core.v1.Namespace"}) != nullptr);
}

}  // namespace discovery_test
