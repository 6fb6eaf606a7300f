// What kube-apiserver does to a built-in object between decoding a request and
// storing it, as pure functions over JSON:
// - decoding into the Go types: quantities canonicalised (0.5 -> 500m), Lease
//   MicroTimes checked for exactly 6 fractional digits and converted to UTC,
//   Secret stringData folded into base64 data; a value that does not decode is a
//   400 "<Kind> in version "v1" cannot be handled as a <Kind>: ...";
// - the scheme's defaults (Deployment strategy, revisionHistoryLimit, pod template
//   defaults, Service protocol and targetPort, Job completions, Namespace label...);
// - the fields Go always serialises (e.g. spec.template.metadata.creationTimestamp:
//   null, a Deployment's status: {}), derived from the kind's zero value, which is
//   also what managedFields of a create are computed against;
// - the create strategies (Namespace finalizer and phase, Job selector and labels,
//   status cleared for kinds with a status subresource).
// Recordings 10, 14, 31, 34, 35, 51, 52, 59 and 73 show each of these.
#pragma once

#include <optional>
#include <string>

#include "core/json.hpp"
#include "tests/emulator/catalog.hpp"

namespace kstate::emulator {

// The kind's Go zero value as kube-apiserver serialises it (non-omitempty fields only).
// Custom resources: an empty object.
const json::Value& zero_object(const ResourceType& type);

// Decoding checks and normal forms (quantities, MicroTime, Secret stringData). Returns
// the reason the object cannot be decoded (the text after "cannot be handled as a
// <Kind>: "), or nothing.
std::optional<std::string> normalize_decoded(const ResourceType& type, json::Value& object, json::Allocator& allocator);

// The message of a 400 for an object that does not decode.
std::string decode_error_message(const ResourceType& type, const std::string& reason);

// The scheme's defaults, then the fields the Go types always serialise.
void apply_defaults(const ResourceType& type, json::Value& object, json::Allocator& allocator);

// The create strategy's changes, made after managedFields are recorded (so no manager
// owns them): Namespace finalizer and phase, Job selector and labels from its uid,
// status cleared for kinds with a status subresource, a CRD's initial status.
void prepare_for_create(const ResourceType& type, json::Value& object, json::Allocator& allocator);

// MicroTime as metav1.MicroTime parses it: RFC 3339 with exactly 6 fractional digits.
// Returns the UTC form ("2025-12-31T22:00:05.123456Z"), or the parse error
// ("parsing time ... as ...: cannot parse ... as ...").
struct MicroTime {
  std::optional<std::string> utc;
  std::string error;
};
MicroTime parse_micro_time(std::string_view text);

}  // namespace kstate::emulator
