// Ownership marks of KEP-3659 ApplySets, so that `kubectl get -l
// applyset.kubernetes.io/part-of=<id>` (and kubectl's own ApplySet tooling) sees exactly
// the objects kstate manages. The parent is a Secret (kube-system/kstate by default);
// its ID is "applyset-" + base64url-without-padding(sha256("<name>.<namespace>.<kind>.<group>"))
// + "-v1", as kubectl computes it. Members carry the part-of label and
// app.kubernetes.io/managed-by: kstate; the parent carries the ID label, the tooling and
// contains-group-kinds annotations and kstate's inventory. Pure logic: no I/O.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "states/inventory.hpp"

namespace kstate::states {

constexpr std::string_view applyset_part_of_label = "applyset.kubernetes.io/part-of";
constexpr std::string_view applyset_id_label = "applyset.kubernetes.io/id";
constexpr std::string_view applyset_tooling_annotation = "applyset.kubernetes.io/tooling";
constexpr std::string_view applyset_group_kinds_annotation = "applyset.kubernetes.io/contains-group-kinds";
constexpr std::string_view applyset_namespaces_annotation = "applyset.kubernetes.io/additional-namespaces";
constexpr std::string_view managed_by_label = "app.kubernetes.io/managed-by";
constexpr std::string_view managed_by_value = "kstate";

struct ApplySetParent {
  std::string name = "kstate";
  std::string ns = "kube-system";
};

// The KEP-3659 ID of a parent object; kind/group default to a core Secret.
std::string applyset_id(std::string_view name, std::string_view ns, std::string_view kind = "Secret",
                        std::string_view group = "");
inline std::string applyset_id(const ApplySetParent& parent) {
  return applyset_id(parent.name, parent.ns);
}

// Adds (or overwrites) the part-of and managed-by labels of a desired object in place.
void add_member_labels(json::Value& object, std::string_view id, json::Allocator& allocator);
// Whether a live object (its metadata.labels) still carries both labels with our values.
bool has_member_labels(const json::Value& object, std::string_view id);

// "Deployment.apps,Namespace,Widget.example.com": sorted, unique, core kinds without group.
std::string contains_group_kinds(const Inventory& inventory);

// The parent Secret to apply: ID label, tooling "kstate/<version>", contains-group-kinds
// and additional-namespaces annotations (from the inventory) and the inventory itself
// in data[inventory.json] (base64). Type Opaque.
json::Document make_parent_secret(const ApplySetParent& parent, std::string_view kstate_version,
                                  const Inventory& inventory);
// The same with the inventory already encoded (encode_inventory(inventory)), and the
// writer that reconciles the set (states/writer.hpp) in annotation kstate.io/writer
// when not empty.
json::Document make_parent_secret(const ApplySetParent& parent, std::string_view kstate_version,
                                  const Inventory& inventory, std::string_view encoded_inventory,
                                  std::string_view writer = {});

// What kube-apiserver lets a Secret's data hold in all (decoded bytes): the inventory's
// JSON is the parent's only data, so this bounds it.
constexpr std::size_t max_secret_data_bytes = std::size_t{1} << 20;

}  // namespace kstate::states
