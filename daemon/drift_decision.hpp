// Whether a watch event on an object kstate manages is drift to correct (issue 41),
// decided from the event and what the watch saw of the object before, as a pure
// function with table tests. What kstate manages is what its own managedFields entry
// lists: server-side apply moves a field's ownership to whoever changes it (an Update,
// a forced apply), so a change by someone else to a field kstate applied always
// changes kstate's entry, and a change to status or to fields kstate does not own
// (a controller, an autoscaler) never does. kstate's own writes move its entry's
// `time` (the API server stamps only the entry of the manager that wrote), so they
// are told apart from fields taken away, which leave the time as it was; the time has
// whole seconds, so within one second a write of kstate's is told by its entry having
// gained fields: another writer can take fields from kstate's set, never add to it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.hpp"
#include "core/watch.hpp"

namespace kstate::daemon {

// kstate's managedFields entry on the object itself (not a subresource's), reduced to
// what the decision compares.
struct ManagerEntry {
  std::string operation;        // Apply | Update
  std::string api_version;      // the version kstate wrote with
  std::string time;             // when kstate last changed the object (whole seconds)
  std::string fields;           // a digest of fieldsV1's compact JSON (equal fields, equal digests)
  std::size_t field_count = 0;  // members in fieldsV1, at every depth
  friend bool operator==(const ManagerEntry&, const ManagerEntry&) = default;
};

// What the watch keeps of an object between two events.
struct ObjectSnapshot {
  std::string uid;
  std::optional<ManagerEntry> kstate_entry;
  bool ownership_labels = true;  // still carries every label of kstate's ApplySet
  // The other field manager that changed the object last (newest entry time, not
  // kstate, not a subresource): who to name when kstate's fields were taken.
  std::string latest_other_manager;
};

// The snapshot of `object` (a full object or a PartialObjectMetadata) for kstate's
// `field_manager` and the labels `ownership_labels` (name -> value) it must carry.
ObjectSnapshot snapshot_of(const json::Value& object, std::string_view field_manager,
                           const std::map<std::string, std::string>& ownership_labels);

enum class Drift {
  none,            // status or fields kstate does not own changed: nothing to do
  own_write,       // kstate's entry has a new time: kstate itself wrote this change
  first_sight,     // no earlier snapshot (the first list, an object created): remembered only
  deleted,         // the object is gone (or left kstate's label selector): re-create it
  labels_removed,  // kstate's ownership labels were changed: apply them again
  replaced,        // deleted and created again by someone else (new uid): apply again
  fields_taken,    // kstate's entry changed without kstate writing: another writer changed its fields
};
const char* to_string(Drift drift);
// Whether `drift` means the object's state runs again.
bool needs_correction(Drift drift);

// `before`: the snapshot of the previous event (null when there is none);
// `after`: the event's object's snapshot (ignored for DELETED).
Drift decide_drift(WatchEventType type, const ObjectSnapshot* before, const ObjectSnapshot& after);

}  // namespace kstate::daemon
