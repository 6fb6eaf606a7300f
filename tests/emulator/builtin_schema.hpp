// The fields built-in kinds declare, and their types, for the kinds manifests use
// most (workloads and their pod templates, Services, ConfigMaps, Secrets, RBAC,
// Leases...): what kube-apiserver checks with its OpenAPI schema when it decodes a
// request. A field a kind does not declare is an unknown field (a Warning, or 400
// with fieldValidation=Strict, or 500 for server-side apply); a value of the wrong
// type does not decode (400, or 500 for server-side apply). Subtrees the table does
// not describe (probes, affinity, volume sources, most status) are not checked.
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "tests/emulator/catalog.hpp"

namespace kstate::emulator {

enum class FieldProblemKind { unknown, wrong_type };

struct FieldProblem {
  FieldProblemKind kind = FieldProblemKind::unknown;
  // "spec.template.spec.containers[0].imagePullPolcy": as decoding warnings name fields.
  std::string path;
  // ".spec.template.spec.containers[name=\"c\"].imagePullPolcy": as server-side apply does.
  std::string apply_path;
  // wrong_type: the Go decoder's "json: cannot unmarshal ..." text, and server-side
  // apply's "expected ..., got ..." text.
  std::string decode_message;
  std::string apply_message;
};

// Checks a built-in kind's object against the table; with `drop_unknown`, unknown
// fields are removed from it (as decoding into Go types drops them).
std::vector<FieldProblem> check_builtin_fields(const ResourceType& type, json::Value& object, bool drop_unknown);

// The table as OpenAPI v3 schemas, in kube-apiserver's shape (the components.schemas of
// /openapi/v3/<group version>, with --openapi-schemas): one schema per kind of `types`
// that the table describes, named like kube-apiserver's (io.k8s.api.apps.v1.Deployment)
// and listing its x-kubernetes-group-version-kind, and the schemas they reference
// (`$ref`s wrapped in one-element `allOf`s; IntOrString and Quantity as `oneOf`s of
// plain types; `required` as kube-apiserver's for the fields the table has). What the
// table does not describe takes anything. No patch extensions: kubectl keeps its
// compiled-in strategic-merge rules.
void add_openapi_schemas(const std::vector<const ResourceType*>& types, json::Value& schemas,
                         json::Allocator& allocator);

}  // namespace kstate::emulator
