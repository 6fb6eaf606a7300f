// decide_drift as a table: which watch events on a managed object make kstate run its
// state again (deleted, labels removed, replaced, fields kstate applies taken by
// another writer) and which do not (its own writes, status and fields it does not own
// changed by controllers, the first sight of an object); and snapshot_of on objects
// with managedFields as the API server sends them (recording 29's shape).
#include "daemon/drift_decision.hpp"

#include <catch2/catch.hpp>

namespace drift_decision_test {

using namespace kstate;
using namespace kstate::daemon;

namespace {

const std::map<std::string, std::string> labels = {{"applyset.kubernetes.io/part-of", "applyset-abc-v1"}};

ManagerEntry entry(std::string time, std::string fields, std::size_t count = 10) {
  return ManagerEntry{"Apply", "v1", std::move(time), std::move(fields), count};
}

ObjectSnapshot snapshot(std::optional<ManagerEntry> kstate, bool labelled = true, std::string uid = "u1") {
  ObjectSnapshot result;
  result.uid = std::move(uid);
  result.kstate_entry = std::move(kstate);
  result.ownership_labels = labelled;
  return result;
}

}  // namespace

TEST_CASE("decide_drift: what a watch event on a managed object means", "[drift]") {
  const ObjectSnapshot applied = snapshot(entry("2026-11-27T10:00:00Z", "A"));
  struct Row {
    const char* what;
    WatchEventType type;
    std::optional<ObjectSnapshot> before;
    ObjectSnapshot after;
    Drift expected;
  };
  const std::vector<Row> rows = {
      {"the object was deleted", WatchEventType::deleted, applied, applied, Drift::deleted},
      {"deleted before the watch knew it (a relist's difference)", WatchEventType::deleted, std::nullopt, applied,
       Drift::deleted},
      {"first seen (the initial list)", WatchEventType::added, std::nullopt, applied, Drift::first_sight},
      {"first seen in a MODIFIED (a relist after 410)", WatchEventType::modified, std::nullopt, applied,
       Drift::first_sight},
      {"a controller changed status: kstate's entry as it was", WatchEventType::modified, applied, applied,
       Drift::none},
      {"another manager changed a field kstate does not own", WatchEventType::modified, applied, applied, Drift::none},
      {"kstate wrote: its entry's time moved", WatchEventType::modified, applied,
       snapshot(entry("2026-11-27T10:05:00Z", "B")), Drift::own_write},
      {"kstate's first write on an adopted object", WatchEventType::modified, snapshot(std::nullopt),
       snapshot(entry("2026-11-27T10:05:00Z", "A")), Drift::own_write},
      {"another writer took some of kstate's fields: same time, fewer fields", WatchEventType::modified, applied,
       snapshot(entry("2026-11-27T10:00:00Z", "A-minus-replicas", 8)), Drift::fields_taken},
      {"kstate took its fields back within the same second: its set grew", WatchEventType::modified,
       snapshot(entry("2026-11-27T10:00:00Z", "A-minus-replicas", 8)), applied, Drift::own_write},
      {"same time, as many fields but other ones: not kstate's doing as far as can be told", WatchEventType::modified,
       applied, snapshot(entry("2026-11-27T10:00:00Z", "C")), Drift::fields_taken},
      {"kstate wrote with another apiVersion in the same second", WatchEventType::modified, applied,
       snapshot(ManagerEntry{"Apply", "v2", "2026-11-27T10:00:00Z", "A", 10}), Drift::own_write},
      {"another writer took all of kstate's fields: the entry is gone", WatchEventType::modified, applied,
       snapshot(std::nullopt), Drift::fields_taken},
      {"an object kstate never wrote, changed by others", WatchEventType::modified, snapshot(std::nullopt),
       snapshot(std::nullopt), Drift::none},
      {"kstate's ownership labels were removed", WatchEventType::modified, applied,
       snapshot(entry("2026-11-27T10:00:00Z", "A"), false), Drift::labels_removed},
      {"deleted and created again by someone else", WatchEventType::modified, applied,
       snapshot(entry("2026-11-27T10:00:00Z", "A"), true, "u2"), Drift::replaced},
      {"a bookmark", WatchEventType::bookmark, applied, applied, Drift::none},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    CHECK(to_string(decide_drift(row.type, row.before ? &*row.before : nullptr, row.after)) ==
          std::string(to_string(row.expected)));
  }
}

TEST_CASE("needs_correction: only drift runs the object's state again", "[drift]") {
  CHECK(needs_correction(Drift::deleted));
  CHECK(needs_correction(Drift::fields_taken));
  CHECK(needs_correction(Drift::labels_removed));
  CHECK(needs_correction(Drift::replaced));
  CHECK_FALSE(needs_correction(Drift::none));
  CHECK_FALSE(needs_correction(Drift::own_write));
  CHECK_FALSE(needs_correction(Drift::first_sight));
}

TEST_CASE("snapshot_of reads kstate's own entry, ignores subresources, names the latest other manager", "[drift]") {
  auto object = json::parse(R"({
    "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
    "metadata": {"name": "web", "namespace": "default", "uid": "u1",
      "labels": {"applyset.kubernetes.io/part-of": "applyset-abc-v1"},
      "managedFields": [
        {"manager": "kstate", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-27T10:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-11-27T10:09:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}},
         "subresource": "status"},
        {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T10:03:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}},
        {"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T10:01:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}
      ]}})");
  REQUIRE(object.ok());
  const ObjectSnapshot seen = snapshot_of(*object, "kstate", labels);
  CHECK(seen.uid == "u1");
  CHECK(seen.ownership_labels);
  REQUIRE(seen.kstate_entry.has_value());
  CHECK(seen.kstate_entry->time == "2026-11-27T10:00:00Z");
  CHECK(seen.kstate_entry->operation == "Apply");
  CHECK(seen.latest_other_manager == "kubectl-edit");  // the status writer is newer, but a subresource's

  auto taken = json::parse(R"({"metadata": {"name": "web", "uid": "u1", "labels": {"other": "x"},
      "managedFields": [{"manager": "kstate", "operation": "Apply", "apiVersion": "apps/v1",
        "time": "2026-11-27T10:00:00Z", "fieldsV1": {}}]}})");
  REQUIRE(taken.ok());
  const ObjectSnapshot after = snapshot_of(*taken, "kstate", labels);
  CHECK_FALSE(after.ownership_labels);
  REQUIRE(after.kstate_entry.has_value());
  CHECK(after.kstate_entry->fields != seen.kstate_entry->fields);
  CHECK(seen.kstate_entry->field_count == 2);  // f:spec, f:replicas
  CHECK(after.kstate_entry->field_count == 0);
  CHECK(to_string(decide_drift(WatchEventType::modified, &seen, after)) == std::string("labels_removed"));

  auto without = json::parse(R"({"metadata": {"name": "web"}})");
  REQUIRE(without.ok());
  CHECK_FALSE(snapshot_of(*without, "kstate", labels).kstate_entry.has_value());
}

}  // namespace drift_decision_test
