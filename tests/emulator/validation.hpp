// Validation kube-apiserver applies before storing an object: name formats per
// kind, immutable fields on update, the 1 MiB a Secret's or ConfigMap's data may hold, and
// CustomResourceDefinition schemas (types, required, enums,
// x-kubernetes-preserve-unknown-fields, pruning). Pure functions returning the
// field causes a 422 Invalid Status carries.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "tests/emulator/catalog.hpp"

namespace kstate::emulator {

struct FieldCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, FieldValueTypeInvalid
  std::string message;
  std::string field;
};

// DNS-1123 label (namespaces, services), subdomain (most kinds), or path segment (RBAC).
std::vector<FieldCause> validate_name(const ResourceType& type, std::string_view name);
// Fields that may not change on update; empty when the update is allowed.
std::vector<FieldCause> validate_immutable(const ResourceType& type, const json::Value& old_object,
                                           const json::Value& new_object);
// Kind-specific checks on create and update (e.g. CRD names, Service ports, data size).
std::vector<FieldCause> validate_object(const ResourceType& type, const json::Value& object);

// Validates a custom resource against its openAPIV3Schema and prunes unknown fields.
// `unknown` receives pruned paths, the returned causes are schema violations.
std::vector<FieldCause> validate_and_prune(const json::Value& schema, json::Value& object,
                                           std::vector<std::string>& unknown);

}  // namespace kstate::emulator
