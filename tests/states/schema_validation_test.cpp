// Local validation of custom resources against a CRD's openAPIV3Schema: each rule a
// user can break (type, required, enum, pattern, bounds, unknown field) gives the
// API server's wording with the field path, and valid objects give nothing.
#include "states/schema_validation.hpp"

#include <catch2/catch.hpp>

#include "tests/support/temp_dir.hpp"

namespace schema_validation_test {

namespace json = kstate::json;
using kstate::states::crd_version_schema;
using kstate::states::manifest_field_path;
using kstate::states::validate_against_openapi;
using kstate::states::validate_against_schema;

namespace {

json::Document parse(const std::string& text) {
  auto doc = json::parse(text);
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

const char* const crd_text = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
      "type": "object",
      "properties": {
        "spec": {"type": "object", "required": ["size"],
          "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
            "port": {"x-kubernetes-int-or-string": true},
            "note": {"type": "string", "nullable": true},
            "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "ratio": {"type": "number"}
          }},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }}}}]}})";

std::vector<std::string> messages(const std::string& spec) {
  auto crd = parse(crd_text);
  auto schema = crd_version_schema(crd, "v1");
  REQUIRE(schema.ok());
  REQUIRE(*schema != nullptr);
  auto object = parse(R"({"apiVersion": "example.com/v1", "kind": "Widget",
    "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}}, "spec": )" +
                      spec + "}");
  std::vector<std::string> out;
  for (const auto& violation : validate_against_schema(object, **schema)) {
    out.push_back(violation.message);
  }
  return out;
}

}  // namespace

TEST_CASE("schema validation: a valid custom resource has no violations") {
  CHECK(messages(R"({"size": 3, "color": "red", "name": "abc", "port": "http", "note": null, "tags": ["x"],
    "labels": {"k": "v"}, "extra": {"anything": [1, {"deep": true}]}, "ratio": 2})")
            .empty());
  CHECK(messages(R"({"size": 10, "port": 8080, "ratio": 0.5})").empty());
}

TEST_CASE("schema validation: each broken rule is reported with its field path in the server's words") {
  using Catch::Matchers::Equals;
  CHECK_THAT(messages(R"({"size": "three"})"),
             Equals(std::vector<std::string>{
                 R"(spec.size: Invalid value: "string": spec.size in body must be of type integer: "string")"}));
  CHECK_THAT(messages(R"({})"), Equals(std::vector<std::string>{"spec.size: Required value"}));
  CHECK_THAT(
      messages(R"({"size": 1, "color": "green"})"),
      Equals(std::vector<std::string>{R"(spec.color: Unsupported value: "green": supported values: "red", "blue")"}));
  CHECK_THAT(messages(R"({"size": 1, "name": "Abc"})"),
             Equals(std::vector<std::string>{
                 R"(spec.name: Invalid value: "Abc": spec.name in body should match '^[a-z]+$')"}));
  CHECK_THAT(messages(R"({"size": 1, "name": "abcdefghij"})"),
             Equals(std::vector<std::string>{"spec.name: Too long: may not be longer than 8"}));
  CHECK_THAT(messages(R"({"size": 0})"),
             Equals(std::vector<std::string>{
                 "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"}));
  CHECK_THAT(messages(R"({"size": 11})"),
             Equals(std::vector<std::string>{
                 "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"}));
  CHECK_THAT(messages(R"({"size": 1, "port": true})"),
             Equals(std::vector<std::string>{
                 R"(spec.port: Invalid value: true: spec.port in body must be of type integer or string: "boolean")"}));
  CHECK_THAT(messages(R"({"size": 1, "tags": ["a", 2, "c"]})"),
             Equals(std::vector<std::string>{
                 "spec.tags: Too many: 3: must have at most 2 items",
                 R"(spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer")"}));
  CHECK_THAT(
      messages(R"({"size": 1, "labels": {"k": 1}})"),
      Equals(std::vector<std::string>{
          R"(spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: "integer")"}));
  CHECK_THAT(messages(R"({"size": 1, "color": null})"),
             Equals(std::vector<std::string>{
                 R"(spec.color: Invalid value: "null": spec.color in body must be of type string: "null")"}));
}

TEST_CASE("schema validation: unknown fields are reported unless the schema preserves them") {
  using Catch::Matchers::Equals;
  CHECK_THAT(messages(R"({"size": 1, "colour": "red"})"),
             Equals(std::vector<std::string>{R"(unknown field "spec.colour")"}));
  auto crd = parse(crd_text);
  auto schema = crd_version_schema(crd, "v1");
  REQUIRE(schema.ok());
  auto top = parse(R"({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
    "spec": {"size": 1}, "status": {"free": "form"}, "specs": {}})");
  auto found = validate_against_schema(top, **schema);
  REQUIRE(found.size() == 1);
  CHECK(found[0].field == "specs");
  CHECK(found[0].message == R"(unknown field "specs")");
}

TEST_CASE("schema validation: the CRD's schema is found by version, and a missing version is named") {
  auto crd = parse(crd_text);
  auto missing = crd_version_schema(crd, "v2");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message ==
        "CustomResourceDefinition widgets.example.com defines no version v2 (it defines v1)");
  auto without_schema = parse(R"({"metadata": {"name": "x"}, "spec": {"versions": [{"name": "v1"}]}})");
  auto none = crd_version_schema(without_schema, "v1");
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
}

}  // namespace schema_validation_test

namespace schema_validation_test {

namespace {

// The excerpt of a real /openapi/v3/apis/apps/v1 document (tests/states/data/README.md).
struct AppsV1 {
  json::Document document =
      parse(kstate::testing::read_file(KSTATE_SOURCE_DIR "/tests/states/data/openapi-apps-v1.json"));
  const json::Value& components() const { return *json::find_path(document, {"components", "schemas"}); }
  const json::Value& deployment() const { return *json::find(components(), "io.k8s.api.apps.v1.Deployment"); }
  std::vector<std::string> check(const std::string& object) const {
    std::vector<std::string> messages;
    for (const auto& violation : validate_against_openapi(parse(object), deployment(), components())) {
      messages.push_back(violation.message);
    }
    return messages;
  }
};

// A Deployment as a manifest would hold it, with `SPEC` for its spec's extra fields.
std::string deployment(const std::string& replicas = "2", const std::string& extra = "") {
  return R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"demo","labels":{"app":"web"},"creationTimestamp":null,
      "annotations":{"kstate.io/config-hash":"abc"}},
    "spec":{"replicas":)" +
         replicas + R"(,"selector":{"matchLabels":{"app":"web"}},
      "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":0}},
      "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.25",
        "ports":[{"containerPort":80}],"resources":{"requests":{"cpu":0.5,"memory":"64Mi"}}}]}})" +
         extra + R"(},"status":{}})";
}

}  // namespace

TEST_CASE("OpenAPI validation: a valid Deployment has no violations (IntOrString, Quantity, null, defaults)") {
  AppsV1 apps;
  CHECK(apps.check(deployment()).empty());
}

TEST_CASE("OpenAPI validation: what the server would refuse is named by its manifest path") {
  AppsV1 apps;
  CHECK(apps.check(deployment(R"("three")")) ==
        std::vector<std::string>{R"(spec.replicas: Invalid value: "string": spec.replicas in body must be of type )"
                                 R"(integer: "string")"});
  CHECK(apps.check(deployment("2", R"(,"replica":3)")) == std::vector<std::string>{R"(unknown field "spec.replica")"});
  // Missing: the selector (recording 36's 422), a container's name (whose default ""
  // is only its zero value: the server refuses an empty name).
  std::string no_selector = deployment();
  no_selector.replace(no_selector.find(R"("selector":{"matchLabels":{"app":"web"}},)"), 41, "");
  CHECK(apps.check(no_selector) == std::vector<std::string>{"spec.selector: Required value"});
  std::string nameless = deployment();
  nameless.replace(nameless.find(R"("name":"web","image")"), 13, "");
  CHECK(apps.check(nameless) == std::vector<std::string>{"spec.template.spec.containers[0].name: Required value"});
  // Metadata is checked too: recording 26's misspelt field, a label that is not a string.
  std::string misspelt = deployment();
  misspelt.replace(misspelt.find(R"("annotations")"), 13, R"("annotation")");
  CHECK(apps.check(misspelt) == std::vector<std::string>{R"(unknown field "metadata.annotation")"});
  std::string numeric_label = deployment();
  numeric_label.replace(numeric_label.find(R"("labels":{"app":"web"})"), 22, R"("labels":{"version":1.5})");
  CHECK(apps.check(numeric_label) ==
        std::vector<std::string>{R"(metadata.labels.version: Invalid value: "number": metadata.labels.version in )"
                                 R"(body must be of type string: "number")"});
  // IntOrString and Quantity take only their types; enums their values.
  std::string bad_surge = deployment();
  bad_surge.replace(bad_surge.find(R"("25%")"), 5, "true");
  CHECK(apps.check(bad_surge) ==
        std::vector<std::string>{R"(spec.strategy.rollingUpdate.maxSurge: Invalid value: true: )"
                                 R"(spec.strategy.rollingUpdate.maxSurge in body must be of type integer or string: )"
                                 R"("boolean")"});
  std::string bad_policy = deployment();
  bad_policy.replace(bad_policy.find(R"("image":)"), 8, R"("imagePullPolicy":"Sometimes","image":)");
  CHECK(apps.check(bad_policy) ==
        std::vector<std::string>{R"(spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": )"
                                 R"(supported values: "Always", "IfNotPresent", "Never")"});
}

TEST_CASE("OpenAPI validation: an object schema without properties takes any field; references cannot loop") {
  AppsV1 apps;
  std::string managed = deployment();
  managed.replace(managed.find(R"("creationTimestamp":null,)"), 25,
                  R"("managedFields":[{"manager":"kubectl","fieldsV1":{"f:data":{"f:a":{}}}}],)");
  CHECK(apps.check(managed).empty());
  auto looping = parse(R"({"a":{"$ref":"#/components/schemas/b"},"b":{"allOf":[{"$ref":"#/components/schemas/a"}]}})");
  CHECK(validate_against_openapi(parse(R"({"x":1})"), *json::find(looping, "a"), looping).empty());
}

TEST_CASE("a field the server names in structured-merge-diff terms reads as a manifest path") {
  auto object = parse(deployment());
  CHECK(manifest_field_path("metadata.annotation", object) == "metadata.annotation");
  CHECK(manifest_field_path(".metadata.annotation", object) == "metadata.annotation");
  CHECK(manifest_field_path(R"(spec.template.spec.containers[name="web"].imagePullPolicyy)", object) ==
        "spec.template.spec.containers[0].imagePullPolicyy");
  CHECK(manifest_field_path(R"(spec.template.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"].nme)",
                            object) == "spec.template.spec.containers[0].ports[0].nme");
  CHECK(manifest_field_path(R"(spec.template.spec.containers[name="web"].ports[containerPort=80].nme)", object) ==
        "spec.template.spec.containers[0].ports[0].nme");
  CHECK(manifest_field_path(R"(spec.template.spec.containers[name="other"].x)", object) ==
        R"(spec.template.spec.containers[name="other"].x)");
  CHECK(manifest_field_path("spec.template.spec.containers[0].image", object) ==
        "spec.template.spec.containers[0].image");
  auto with_set = parse(R"({"spec":{"finalizers":["a","b"]}})");
  CHECK(manifest_field_path(R"(spec.finalizers[="b"])", with_set) == "spec.finalizers[1]");
}

}  // namespace schema_validation_test
