// Cheap "is the live object already as declared?" checks, so that re-applying an
// unchanged directory sends no writes at all (one LIST per kind and namespace is
// enough): the desired object, in the form the API server stores it, must be a subset
// of the live one, and the hash of the configuration kstate last applied (kept in an
// annotation) must match, which also catches fields removed from a manifest that a
// subset check cannot see.
//
// "The form the server stores it" (is_stored_subset), as a real kube-apiserver 1.32
// does (recordings 14, 22, 31-35):
// - a Secret's stringData is folded into base64 `data` (stringData is write-only);
// - quantities of built-in kinds are canonicalised ("cpu: 0.5" is stored "500m",
//   "1024Mi" is "1Gi"): compared in the server's form at the fields that hold them
//   (quantity_fields; never elsewhere: a ConfigMap's "0.5" stays "0.5");
// - what the server owns is not compared: metadata uid, resourceVersion, generation,
//   creationTimestamp (`null` in generated manifests), selfLink, managedFields, and
//   `status` of a kind whose status is a subresource (an apply ignores it);
// - a zero value (false, 0, "", {}, [], null) the manifest sets matches a field the
//   live object lacks: Go drops zero values of `omitempty` fields when it serialises
//   (`readOnly: false`, `initialDelaySeconds: 0`, `annotations: {}`), so re-applying
//   them changes nothing. (Limit: a pointer field someone removed out of band while
//   the manifest sets it to its zero value is not seen.)
// - fields the server adds (defaults, controllers' annotations and status) are extra
//   members of the live object, which a subset ignores; lists compare element-wise
//   and must have the same length.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace kstate::states {

// The annotation holding the SHA-256 of the configuration kstate last applied.
inline constexpr const char* config_hash_annotation = "kstate.io/config-hash";

// True when every field of `desired` is present in `live` with an equal value
// (objects recursively; arrays element-wise with equal lengths; numbers by value).
bool is_subset(const json::Value& desired, const json::Value& live);

// What the comparison needs to know about the kind beyond the object itself.
struct StoredFormOptions {
  // The kind has a status subresource (discovery says so): `status` in a manifest is
  // ignored by the main resource's writes, so it is not compared.
  bool status_subresource = false;
};

// `desired` as the server will store it (stringData folded into data), for is_subset.
json::Document as_stored(const json::Value& desired);
// Whether `live` already holds `desired` as the server stores it (rules above).
bool is_stored_subset(const json::Value& desired, const json::Value& live, const StoredFormOptions& options = {});

// Whether the field at `path` (member names; "*" for an array element) of an object of
// this group and kind holds a resource quantity the server canonicalises.
bool is_quantity_field(std::string_view group, std::string_view kind, const std::vector<std::string_view>& path);

// SHA-256 (hex) of the compact JSON of `object` without the hash annotation itself.
std::string config_hash(const json::Value& object);

// The value of the hash annotation on `object`, empty when absent.
std::string recorded_config_hash(const json::Value& object);

}  // namespace kstate::states
