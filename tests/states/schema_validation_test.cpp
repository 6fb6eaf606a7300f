// Local validation of custom resources against a CRD's openAPIV3Schema: each rule a
// user can break (type, required, enum, pattern, bounds, unknown field) gives the
// API server's wording with the field path, and valid objects give nothing.
#include "states/schema_validation.hpp"

#include <catch2/catch.hpp>

namespace schema_validation_test {

namespace json = kstate::json;
using kstate::states::crd_version_schema;
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
