// Unknown fields and wrong types in built-in kinds, as kube-apiserver reports them:
// a Warning (or 400 with Strict) naming the field for POST/PUT, 400 "cannot unmarshal"
// for a wrong type, and 500 "failed to create typed patch object" for both in a
// server-side apply (recordings 26, 27 show the shapes for metadata.annotation).
#include "tests/emulator/builtin_schema.hpp"

#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace builtin_schema_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const char* kDeployment = R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{
  "replicas":REPLICAS,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
  "spec":{"volumes":[{"name":"v","hostPath":{"path":"/tmp"}}],"containers":[{"name":"c","image":"nginx",
  PULL:"Always","ports":[{"containerPort":80}]}]}}}})";

std::string deployment(const std::string& replicas, const std::string& pull_field = "\"imagePullPolicy\"") {
  std::string text = kDeployment;
  text.replace(text.find("REPLICAS"), 8, replicas);
  text.replace(text.find("PULL"), 4, pull_field);
  return text;
}

const ResourceType& type_of(const Catalog& catalog, const char* group, const char* plural) {
  const ResourceType* type = catalog.find(group, "v1", plural);
  REQUIRE(type != nullptr);
  return *type;
}

}  // namespace

TEST_CASE("a built-in object's fields are checked down the pod template; unknown ones are named both ways") {
  Catalog catalog;
  const auto& deployments = type_of(catalog, "apps", "deployments");
  auto valid = json::parse(deployment("1"));
  REQUIRE(valid);
  CHECK(check_builtin_fields(deployments, *valid, false).empty());  // volume sources are not described: admitted

  auto typo = json::parse(deployment("1", "\"imagePullPolcy\""));
  REQUIRE(typo);
  auto problems = check_builtin_fields(deployments, *typo, true);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == FieldProblemKind::unknown);
  CHECK(problems[0].path == "spec.template.spec.containers[0].imagePullPolcy");
  CHECK(problems[0].apply_path == ".spec.template.spec.containers[name=\"c\"].imagePullPolcy");
  CHECK(json::find((*json::find_path(*typo, {"spec", "template", "spec", "containers"}))[0], "imagePullPolcy") ==
        nullptr);  // dropped

  auto wrong = json::parse(deployment("\"three\""));
  REQUIRE(wrong);
  problems = check_builtin_fields(deployments, *wrong, false);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].kind == FieldProblemKind::wrong_type);
  CHECK(problems[0].decode_message ==
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32");
  CHECK(problems[0].apply_path == ".spec.replicas");
  CHECK(problems[0].apply_message == "expected numeric (int or float), got string");

  const auto& classes = type_of(catalog, "storage.k8s.io", "storageclasses");
  auto storage = json::parse(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"s"},)"
                             R"("provisioner":"x","parameters":{"a":"b"},"provisoner":"y"})");
  REQUIRE(storage);
  problems = check_builtin_fields(classes, *storage, false);
  REQUIRE(problems.size() == 1);  // kinds without a table: their top-level names
  CHECK(problems[0].path == "provisoner");
}

TEST_CASE("through the API: POST warns or refuses, a wrong type is 400, server-side apply is 500 for both") {
  Harness h;
  const std::string path = "/apis/apps/v1/namespaces/default/deployments";
  auto warned = h.post(path, deployment("1", "\"imagePullPolcy\""));
  REQUIRE(warned.status == 201);
  REQUIRE(warned.headers.size() == 1);
  CHECK(warned.headers[0].second == "299 - \"unknown field \\\"spec.template.spec.containers[0].imagePullPolcy\\\"\"");
  CHECK(h.del(path + "/web").status == 200);
  auto strict = h.post(path + "?fieldValidation=Strict", deployment("1", "\"imagePullPolcy\""));
  CHECK(strict.status == 400);
  auto wrong = h.post(path, deployment("\"three\""));
  CHECK(wrong.status == 400);
  CHECK(str(parse(wrong), {"message"}) ==
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go "
        "struct field DeploymentSpec.spec.replicas of type int32");
  auto applied = h.apply(path + "/web?fieldManager=kstate", deployment("\"three\""));
  CHECK(applied.status == 500);
  CHECK(str(parse(applied), {"message"}) ==
        "failed to create typed patch object (/web; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int "
        "or float), got string");
  CHECK(str(parse(applied), {"reason"}).empty());
}

}  // namespace builtin_schema_test
