// Local validation of an object the server cannot validate yet (test mode, when the
// CRD or the namespace it needs is only created by this run): a custom resource
// against its CustomResourceDefinition's openAPIV3Schema, a built-in object against
// the server's published OpenAPI v3 schema of its kind: types (with
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

// What an object to validate holds: all its fields, or only those an update changes
// (object_updated's), of which none can be missing.
enum class Completeness { whole_object, fields_only };

// Violations of `object` (a custom resource) against `schema` (an openAPIV3Schema).
// apiVersion, kind and metadata are always allowed at the top, as the API server
// allows them; metadata is not checked here.
std::vector<SchemaViolation> validate_against_schema(const json::Value& object, const json::Value& schema,
                                                     Completeness completeness = Completeness::whole_object);

// Violations of a built-in object against its kind's schema in the API server's
// OpenAPI v3 document (GET /openapi/v3/<group version>): `schema` is the kind's entry of
// the document's components.schemas, `components` that whole map, which its `$ref`s
// (wrapped in one-element `allOf`s) point into. As the server decodes objects: an
// object schema listing no properties takes any field (RawExtension, FieldsV1), null
// is "not set", oneOf/anyOf of plain types take any of them (IntOrString, Quantity),
// and a required property with a default other than its type's zero value is filled
// in, not missing; metadata is checked too (ObjectMeta: `metadata.annotation` is an
// unknown field). Messages are validate_against_schema's.
std::vector<SchemaViolation> validate_against_openapi(const json::Value& object, const json::Value& schema,
                                                      const json::Value& components,
                                                      Completeness completeness = Completeness::whole_object);

// The field a server names in the manifest's terms. Server-side apply names fields in
// structured-merge-diff's notation, list items by their keys
// (`spec.template.spec.containers[name="web"].imagePullPolicyy`, error_from_response);
// a manifest reader counts them: `spec.template.spec.containers[0].imagePullPolicyy`.
// Items are looked up in `object` (what was sent); a path already in manifest terms, or
// an item not found, is returned as it is.
std::string manifest_field_path(std::string_view server_path, const json::Value& object);

// The openAPIV3Schema of `version` in `crd` (a CustomResourceDefinition object). Errors
// when the CRD does not define that version; a version without a schema answers null.
Result<const json::Value*> crd_version_schema(const json::Value& crd, std::string_view version);

}  // namespace kstate::states
