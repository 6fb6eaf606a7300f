// Cheap "is the live object already as declared?" checks, so that re-applying an
// unchanged directory sends no writes at all (one LIST per kind and namespace is
// enough): the desired object must be a subset of the live one, and the hash of the
// configuration kstate last applied (kept in an annotation) must match, which also
// catches fields removed from a manifest that a subset check cannot see.
#pragma once

#include <string>

#include "core/json.hpp"

namespace kstate::states {

// The annotation holding the SHA-256 of the configuration kstate last applied.
inline constexpr const char* config_hash_annotation = "kstate.io/config-hash";

// True when every field of `desired` is present in `live` with an equal value
// (objects recursively; arrays element-wise with equal lengths; numbers by value).
bool is_subset(const json::Value& desired, const json::Value& live);

// `desired` as the server will store it, for is_subset: a Secret's stringData is
// write-only (the server folds it into data as base64), so it is folded here too.
json::Document as_stored(const json::Value& desired);
// is_subset(as_stored(desired), live), copying `desired` only when storing changes it.
bool is_stored_subset(const json::Value& desired, const json::Value& live);

// SHA-256 (hex) of the compact JSON of `object` without the hash annotation itself.
std::string config_hash(const json::Value& object);

// The value of the hash annotation on `object`, empty when absent.
std::string recorded_config_hash(const json::Value& object);

}  // namespace kstate::states
