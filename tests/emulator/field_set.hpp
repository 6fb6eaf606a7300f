// Sets of field paths in the FieldsV1 form kube-apiserver stores in
// metadata.managedFields (`{"f:spec":{"f:replicas":{}},"f:data":{".":{},"f:k":{}}}`),
// and server-side apply built on them, following sigs.k8s.io/structured-merge-diff
// as kube-apiserver 1.32 uses it:
// - an Apply entry lists exactly the fields of the applied configuration
//   (ToFieldSet: leaves, list items, empty or null values; no "." on maps);
// - an Update entry (POST, PUT, non-apply PATCH) lists what the write added or
//   changed compared with the stored object (or, on create, with the kind's Go zero
//   value), so "." appears on every map, list or item the write brought into being;
// - fields a write changes or removes are taken from every other manager;
// - an applier that omits a field it owned removes it unless another manager owns it.
// Pure code, no I/O.
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

// What the schema says about the fields of a kind: built-in kinds have atomic label
// selectors (replaced as a whole, owned as one field); custom resources do not.
struct FieldRules {
  bool custom = false;
};

// The fields an object sets (structured-merge-diff's ToFieldSet), without the ones
// managedFields never list (apiVersion, kind, metadata.name, uid, resourceVersion...).
// `skip_status` drops .status (the main resource of kinds with a status subresource).
FieldSet fields_of(const json::Value& object, bool skip_status, const FieldRules& rules = {});

// What changed between two versions of an object, path by path.
struct Comparison {
  FieldSet added;
  FieldSet modified;
  FieldSet removed;
};
Comparison compare_objects(const json::Value& old_object, const json::Value& new_object, const FieldRules& rules = {});

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
// Writes the entries in kube-apiserver's order (Apply before Update, then by time,
// manager, apiVersion, subresource); entries without fields are dropped.
void write_managed_fields(json::Value& object, std::vector<ManagedFieldsEntry> entries, json::Allocator& allocator);

struct ApplyConflict {
  std::string manager;  // as conflict messages print it: "\"kstate\"" or "\"kubectl\" using v1"
  std::string path;     // rendered
};

struct ApplyRequest {
  std::string manager;
  std::string api_version;
  std::string time;
  bool force = false;
  bool skip_status = false;  // the main resource of a kind with a status subresource
  std::string subresource;   // "status" for writes through it
  FieldRules rules;
  // The kind's Go zero value: what a create starts from, and what the fields of an
  // object without managedFields are compared with when it is first applied to.
  const json::Value* zero_object = nullptr;
};

// Server-side apply of `applied` onto `live` (null Value for create). On success
// `live` holds the merged object with updated managedFields; otherwise the conflicts.
Result<std::vector<ApplyConflict>> server_side_apply(json::Value& live, const json::Value& applied,
                                                     const ApplyRequest& request, json::Allocator& allocator);

// Ownership after a non-apply write (create, update, patch) by request.manager
// (operation Update): what the write added or changed moves to it, what it removed
// leaves every manager. `old_object` is null on create (compared with the zero value).
void record_update(const json::Value* old_object, json::Value& new_object, const ApplyRequest& request,
                   json::Allocator& allocator);

}  // namespace kstate::emulator
