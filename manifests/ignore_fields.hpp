// Fields left to other writers: an HPA owns spec.replicas, cert-manager injects a
// caBundle, an admission webhook adds a sidecar. A manifest may still set such a field
// (so that the object is created complete), and names it in the annotation
// `kstate.io/ignore-fields: /spec/replicas,/spec/template/metadata/annotations/x`
// (JSON pointers, RFC 6901); the daemon's config adds rules by kind, optionally by
// namespace and name (`ignore-fields:`). The field is then set when the object is
// created and never written again: on an existing object its value is the live one
// (or it is left out when the live object has none), so diffs, drift checks and the
// "already good" comparison leave it out, and kstate never writes because of it nor
// puts back what the other writer set; and when kstate writes the object for another
// change, the fields another manager owns leave the apply (give_up_fields), so that
// kstate's field manager gives their ownership up. A pointer may cross list items
// (`/webhooks/0/clientConfig/caBundle`): the number picks the item in the live object,
// managedFields name that item by its key fields (`k:{"name":"a"}`), its value (`v:`)
// or its position (`i:`), and the field leaves the desired item with the same key.
// Pure logic with table tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::manifests {

inline constexpr std::string_view ignore_fields_annotation = "kstate.io/ignore-fields";

// A comma-separated list of JSON pointers; an error (invalid_input) names the first
// that is not one ("spec.replicas: a JSON pointer starts with /").
Result<std::vector<std::string>> parse_ignore_fields(std::string_view text);

// A config rule: the fields of every object of `kind` (and `group`, when given), in
// `ns` and named `name` when given.
struct IgnoreFieldsRule {
  std::string group;  // "" matches the core group only when group_given
  bool group_given = false;
  std::string kind;
  std::string ns;    // "" = any
  std::string name;  // "" = any
  std::vector<std::string> pointers;
  bool matches(std::string_view object_group, std::string_view object_kind, std::string_view object_ns,
               std::string_view object_name) const;
};

// A rule as the config's `ignore-fields:` list and --ignore-fields write it:
// "KIND[.GROUP][/NAME | /NAMESPACE/NAME]=POINTER,POINTER", e.g.
// "Deployment.apps=/spec/replicas" (every Deployment), "Deployment/web=/spec/replicas"
// (every one named web), "Deployment/shop/web=..." (that one; "*" as the namespace:
// any). An error (invalid_input) says what is wrong.
Result<IgnoreFieldsRule> parse_ignore_fields_rule(std::string_view text);

// The fields of an existing object left to others: each pointer of `pointers` takes
// its value in `desired` from `live`, or is removed from `desired` when `live` has
// none. A pointer `desired` does not reach is left as it is.
void leave_fields_to_others(json::Document& desired, const json::Value& live, const std::vector<std::string>& pointers);

// Before kstate writes an existing object: the ignored fields that another field
// manager owns (in `live`'s metadata.managedFields) are removed from `desired`, so that
// server-side apply takes kstate's ownership of them away and keeps the other writer's
// value. A field only kstate owns keeps its live value (removing it would reset it).
// Under a list item (a number in the pointer), the number picks the item in `live`;
// the field is removed from the desired item managedFields identify as that one (same
// key fields, same value for a set, same position for `i:`); when no single desired
// item is, the field keeps its live value (safety first: never touch another item).
void give_up_fields(json::Document& desired, const json::Value& live, const std::vector<std::string>& pointers,
                    std::string_view field_manager);

// Whether a manager other than `field_manager`'s Apply entry owns the field at
// `pointer` (numbers pick items of `live`'s lists) according to `live`'s managedFields.
bool owned_by_another_manager(const json::Value& live, const std::string& pointer, std::string_view field_manager);

}  // namespace kstate::manifests
