// Sets of field paths in the FieldsV1 form kube-apiserver stores in
// metadata.managedFields (`{"f:spec":{"f:replicas":{}},"f:data":{".":{},"f:k":{}}}`),
// and server-side apply built on them: which fields an object sets, who owns
// which field, conflicts between managers, removal of fields a manager stopped
// applying, and ownership updates for non-apply writes. Pure code, no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

// A tree of path elements: "f:<field>", "k:<json of key fields>" (list item by
// merge key), "v:<json value>" (set item). `self` means the path itself is in the
// set (a leaf, or "." for a map/item that also has owned children).
struct FieldSet {
  bool self = false;
  std::map<std::string, FieldSet> children;

  bool empty() const { return !self && children.empty(); }
  void merge(const FieldSet& other);     // union
  void subtract(const FieldSet& other);  // removes every path of other
  FieldSet intersect(const FieldSet& other) const;
  bool contains_any_at_or_below(const std::vector<std::string>& path) const;
  // Every path in the set, each as its elements.
  std::vector<std::vector<std::string>> paths() const;

  json::Document to_json() const;
  static FieldSet from_json(const json::Value& fields_v1);
};

// The fields an object sets. `skip_status` drops .status (for kinds with a status subresource).
FieldSet fields_of(const json::Value& object, bool skip_status);
// The value at a path, or nullptr.
const json::Value* value_at(const json::Value& object, const std::vector<std::string>& path);
// ".spec.containers[name=\"web\"].image": the form apply conflict messages use.
std::string render_path(const std::vector<std::string>& path);

struct ManagedFieldsEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;
  std::string subresource;
  FieldSet fields;
};

std::vector<ManagedFieldsEntry> read_managed_fields(const json::Value& object);
void write_managed_fields(json::Value& object, const std::vector<ManagedFieldsEntry>& entries,
                          json::Allocator& allocator);

struct ApplyConflict {
  std::string manager;
  std::string api_version;
  std::string path;  // rendered
};

struct ApplyRequest {
  std::string manager;
  std::string api_version;
  std::string time;
  bool force = false;
  bool skip_status = false;
  std::string subresource;
};

// Server-side apply of `applied` onto `live` (null Value for create). On success
// `live` holds the merged object with updated managedFields; otherwise the conflicts.
Result<std::vector<ApplyConflict>> server_side_apply(json::Value& live, const json::Value& applied,
                                                     const ApplyRequest& request, json::Allocator& allocator);

// Ownership after a non-apply write (create, update, patch): fields the write
// changed move to `manager` (operation Update); fields that no longer exist are
// dropped from every manager.
void record_update(const json::Value* old_object, json::Value& new_object, const ApplyRequest& request,
                   json::Allocator& allocator);

}  // namespace kstate::emulator
