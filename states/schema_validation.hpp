// Local validation of a custom resource against its CustomResourceDefinition's
// openAPIV3Schema, for test mode when the CRD itself is only created by this run (the
// server cannot validate the CR yet, so kstate checks what it can): types (with
// nullable and x-kubernetes-int-or-string), required, enum, pattern, numeric and size
// bounds, and unknown fields unless x-kubernetes-preserve-unknown-fields. Messages
// follow the API server's wording so they read like what a real apply will say.
// Pure: JSON in, violations out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::states {

struct SchemaViolation {
  std::string field;    // "spec.replicas", "spec.ports[0].name"; empty for the object itself
  std::string message;  // the whole line, field included: `spec.replicas: Required value`
};

// Violations of `object` (a whole custom resource) against `schema` (an
// openAPIV3Schema). apiVersion, kind and metadata are always allowed at the top, as
// the API server allows them; metadata is not checked here.
std::vector<SchemaViolation> validate_against_schema(const json::Value& object, const json::Value& schema);

// The openAPIV3Schema of `version` in `crd` (a CustomResourceDefinition object). Errors
// when the CRD does not define that version; a version without a schema answers null.
Result<const json::Value*> crd_version_schema(const json::Value& crd, std::string_view version);

}  // namespace kstate::states
