// Normalisation and redaction of objects before they are shown or compared.
// Test mode compares the live object with what the server returned for a dryRun
// write; fields the server owns (managedFields, resourceVersion, uid, generation,
// creationTimestamp, status) would make every diff noisy, so they are dropped.
// Secret values and the last-applied annotation are masked the way `kubectl diff`
// masks them, so that no diff, report or log can carry them.
#pragma once

#include "core/json.hpp"

namespace kstate::states {

struct NormalizeOptions {
  bool keep_status = false;
};

// A copy of `object` without the server-owned fields listed above.
json::Document normalize_for_diff(const json::Value& object, const NormalizeOptions& options = {});

inline constexpr const char* last_applied_annotation = "kubectl.kubernetes.io/last-applied-configuration";

// Masks secret values in a before/after pair in place (either may be Null for a
// create or a delete): Secret `data` and `stringData` values, and the last-applied
// annotation of any object, become "***" when both sides are equal or only one
// side has the key, and "*** (before)" / "*** (after)" when the value changed, so a
// diff still shows *that* a secret changed but never *what* it is.
void mask_secrets(json::Value& before, json::Value& after, json::Allocator& before_allocator,
                  json::Allocator& after_allocator);

// True for v1 Secrets (the kinds whose values are masked).
bool is_secret(const json::Value& object);

}  // namespace kstate::states
