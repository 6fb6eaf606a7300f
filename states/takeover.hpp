// Taking an object over from the managers that wrote it before kstate: `kubectl apply`
// (client-side: manager kubectl-client-side-apply, and its last-applied-configuration
// annotation), other kubectl commands (kubectl, kubectl-edit, kubectl-replace, ...),
// objects older than managed fields (before-first-apply), Salt and MetalK8s (the Python
// client's PUTs, manager OpenAPI-Generator) and kstate's own `replace` strategy (PUT,
// an Update under kstate's name). Their field ownership is recorded as `Update` entries
// of metadata.managedFields. A server-side apply never removes a field another manager
// still owns (recording 50: data.three stays), so a key removed from the manifest would
// stay for ever. As `kubectl apply --server-side` does (client-go's csaupgrade), the
// fields those entries own are moved into kstate's `Apply` entry first (one JSON patch of
// metadata.managedFields, guarded by the resourceVersion it was computed from); the
// apply that follows then removes what the manifest leaves out, the last-applied
// annotation included. Pure functions; the engine sends the requests.
//
// Opt-out per object: the annotation `kstate.io/takeover: disabled` on the manifest
// (for objects shared with kubectl on purpose): kstate then only forces its own fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace kstate::states {

inline constexpr const char* takeover_annotation = "kstate.io/takeover";

// Whether a managedFields entry (manager, operation, subresource) is one kstate takes
// its fields from when it applies as `field_manager`.
bool is_taken_over(std::string_view manager, std::string_view operation, std::string_view subresource,
                   std::string_view field_manager);

struct TakeoverPlan {
  // The managers whose entries were merged or dropped, in managedFields order, each once.
  std::vector<std::string> managers;
  // metadata.managedFields as it must be: their entries gone, their fields in
  // field_manager's Apply entry (an entry of theirs becomes it when there is none).
  json::Document managed_fields;
  // The fields field_manager's Apply entry owns after the merge (a FieldsV1 tree).
  json::Document owned_fields;

  bool needed() const { return !managers.empty(); }
};

// The takeover of `managed_fields` (an object's metadata.managedFields, as the server
// sent it) by `field_manager`. Entries of another apiVersion than the Apply entry are
// dropped, not merged: field sets are per version (as csaupgrade).
TakeoverPlan plan_takeover(const json::Value& managed_fields, std::string_view field_manager);

// The JSON patch (RFC 6902) that applies a plan: a test of resourceVersion (so that
// the patch fails with a conflict if the object changed since it was read), then the
// new managedFields.
std::string takeover_patch(const TakeoverPlan& plan, std::string_view resource_version);

// What the apply after a takeover removes, for test mode (whose dry-run apply cannot
// see a takeover that was not made): the fields of `owned` (FieldsV1) that `applied`
// does not set and no entry of `others` owns, removed from `object` in place. Only
// fields of objects and maps ("f:" keys) are followed; list items are left as they are
// (returns false when some were skipped, so the caller can say the diff may miss them).
bool remove_released_fields(json::Value& object, const json::Value& owned, const json::Value& applied,
                            const std::vector<const json::Value*>& others);

// The managers as a report shows them: "kubectl-client-side-apply, kubectl-edit".
std::string managers_text(const std::vector<std::string>& managers);

}  // namespace kstate::states
