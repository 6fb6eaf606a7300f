// The inventory a prune relies on: it round-trips through JSON and the parent Secret,
// a missing one means "nothing recorded yet" while a damaged one is reported as
// corrupt (so prune refuses), and a cycle's outcome merges in as the issue specifies.
#include "states/inventory.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <random>

#include "core/encoding.hpp"

namespace inventory_test {

using namespace kstate;
using states::InventoryEntry;

namespace {

InventoryEntry entry(std::string kind, std::string ns, std::string name, std::string uid, std::string group = "",
                     std::string source = "dir/app.yaml") {
  return {std::move(group), "v1", std::move(kind), std::move(ns), std::move(name), std::move(uid), std::move(source)};
}

json::Document secret_with(const std::string& data_json) {
  auto document =
      json::parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"kstate"},"data":)" + data_json + "}");
  REQUIRE(document.ok());
  return std::move(document).value();
}

}  // namespace

TEST_CASE("the inventory encodes deterministically and decodes back", "[inventory]") {
  states::Inventory inventory;
  inventory.entries = {
      entry("ConfigMap", "web", "settings", "u1"),
      entry("Deployment", "web", "frontend", "u2", "apps", "dir/web/deploy.yaml"),
      entry("Namespace", "", "web", "u3"),
      entry("ConfigMap", "web", "a \"quoted\" name", "u4"),
  };
  const std::string text = states::encode_inventory(inventory);
  states::Inventory shuffled;
  shuffled.entries = {inventory.entries[2], inventory.entries[0], inventory.entries[3], inventory.entries[1]};
  CHECK(states::encode_inventory(shuffled) == text);
  // Entries that share group, version, kind and namespace are one group; each file is
  // written once, relative to the folder all share, and entries refer to it by index.
  CHECK(text ==
        R"({"version":2,"sourceRoot":"dir/","sources":["app.yaml","web/deploy.yaml"],"entries":[)"
        R"({"group":"","version":"v1","kind":"ConfigMap","namespace":"web",)"
        R"("names":["a \"quoted\" name","settings"],"uids":["u4","u1"],"sources":[0,0]},)"
        R"({"group":"","version":"v1","kind":"Namespace","namespace":"","names":["web"],"uids":["u3"],"sources":[0]},)"
        R"({"group":"apps","version":"v1","kind":"Deployment","namespace":"web","names":["frontend"],"uids":["u2"],)"
        R"("sources":[1]}]})");

  auto decoded = states::decode_inventory(text);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->entries.size() == 4);
  const InventoryEntry* found = decoded->find({"apps", "Deployment", "web", "frontend"});
  REQUIRE(found != nullptr);
  CHECK(found->uid == "u2");
  CHECK(found->source == "dir/web/deploy.yaml");
  CHECK(decoded->find({"", "ConfigMap", "web", "a \"quoted\" name"}) != nullptr);
  CHECK(decoded->find({"", "ConfigMap", "other", "settings"}) == nullptr);
  CHECK(states::encode_inventory(*decoded) == text);
}

TEST_CASE("a malformed inventory is rejected as a whole", "[inventory]") {
  struct Row {
    const char* name;
    const char* text;
    const char* message_part;
  };
  const Row rows[] = {
      {"not JSON", "{\"version\":1,", "not JSON"},
      {"no version", R"({"entries":[]})", "format version"},
      {"future version", R"({"version":3,"entries":[]})", "format version"},
      {"entries not an array", R"({"version":1,"entries":{}})", "entries array"},
      {"entry not an object", R"({"version":1,"entries":[5]})", "entry 0"},
      {"uid missing",
       R"({"version":1,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","name":"b"}]})",
       "field 'uid'"},
      {"uid empty",
       R"({"version":1,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","name":"b","uid":""}]})",
       "lacks"},
      {"name not a string",
       R"({"version":1,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","name":7,"uid":"u"}]})",
       "field 'name'"},
      {"group not an object", R"({"version":2,"entries":[5]})", "entry group 0 is not an object"},
      {"group without names",
       R"({"version":2,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a"}]})", "names array"},
      {"fewer uids than names",
       R"({"version":2,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b","c"],"uids":["u"]}]})",
       "uids array"},
      {"empty name",
       R"({"version":2,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b",""],"uids":["u","v"]}]})",
       "entry group 0 entry 1 lacks a name or uid"},
      {"uid not a string",
       R"({"version":2,"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b"],"uids":[7]}]})",
       "lacks a name or uid"},
      {"source index out of the table",
       R"({"version":2,"sources":["a.yaml"],"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b"],"uids":["u"],"sources":[1]}]})",
       "entry group 0 entry 0 has no source"},
      {"fewer sources than names",
       R"({"version":2,"sources":["a.yaml"],"entries":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b","c"],"uids":["u","v"],"sources":[0]}]})",
       "sources array"},
      {"source table not strings", R"({"version":2,"sources":[3],"entries":[]})", "sources are not"},
      {"group without kind",
       R"({"version":2,"entries":[{"group":"","version":"v1","kind":"","namespace":"a","names":["b"],"uids":["u"]}]})",
       "lacks a kind"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    auto decoded = states::decode_inventory(row.text);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().kind == ErrorKind::invalid_input);
    CHECK_THAT(decoded.error().message, Catch::Contains(row.message_part));
  }
}

TEST_CASE("loading from the parent Secret tells missing apart from corrupt", "[inventory]") {
  states::Inventory one;
  one.entries = {entry("ConfigMap", "web", "settings", "u1")};
  const std::string good = encoding::base64_encode(states::encode_inventory(one));
  struct Row {
    const char* name;
    std::string data;  // JSON of the Secret's data; empty: no Secret at all
    states::InventoryStatus status;
    std::size_t entries;
  };
  const std::vector<Row> rows = {
      {"no Secret", "", states::InventoryStatus::missing, 0},
      {"no inventory key", R"({"other":"eA=="})", states::InventoryStatus::missing, 0},
      {"valid", R"({"inventory.json":")" + good + R"("})", states::InventoryStatus::ok, 1},
      {"not base64", R"({"inventory.json":"%%%"})", states::InventoryStatus::corrupt, 0},
      {"truncated", R"({"inventory.json":")" + good.substr(0, good.size() / 2 / 4 * 4) + R"("})",
       states::InventoryStatus::corrupt, 0},
      {"not a string", R"({"inventory.json":42})", states::InventoryStatus::corrupt, 0},
      {"empty value", R"({"inventory.json":""})", states::InventoryStatus::corrupt, 0},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    states::LoadedInventory loaded;
    if (row.data.empty()) {
      loaded = states::load_inventory(nullptr);
    } else {
      json::Document secret = secret_with(row.data);
      loaded = states::load_inventory(&secret);
    }
    CHECK(loaded.status == row.status);
    CHECK(loaded.inventory.entries.size() == row.entries);
    CHECK(loaded.problem.empty() == (row.status != states::InventoryStatus::corrupt));
  }
}

TEST_CASE("a cycle's outcome merges into the inventory", "[inventory]") {
  states::Inventory previous;
  previous.entries = {
      entry("ConfigMap", "web", "kept", "u1"),      entry("ConfigMap", "web", "replaced", "u2"),
      entry("ConfigMap", "web", "pruned", "u3"),    entry("ConfigMap", "web", "delete-failed", "u4"),
      entry("ConfigMap", "web", "recreated", "u5"),
  };
  const std::vector<InventoryEntry> applied = {
      entry("ConfigMap", "web", "replaced", "u2-new", "", "dir/moved.yaml"), entry("ConfigMap", "web", "new", "u6"),
      entry("ConfigMap", "web", "recreated", "u5-new"),
      entry("ConfigMap", "web", "dry-run", ""),  // no UID: nothing proven
  };
  const std::vector<states::ObjectKey> removed = {
      {"", "ConfigMap", "web", "pruned"},
      {"", "ConfigMap", "web", "recreated"},
  };
  const states::Inventory merged = states::merge_inventory(previous, applied, removed);
  struct Row {
    const char* name;
    const char* uid;  // nullptr: not in the inventory
    const char* source;
  };
  const Row rows[] = {
      {"kept", "u1", "dir/app.yaml"},
      {"replaced", "u2-new", "dir/moved.yaml"},
      {"pruned", nullptr, ""},
      {"delete-failed", "u4", "dir/app.yaml"},
      {"recreated", "u5-new", "dir/app.yaml"},
      {"new", "u6", "dir/app.yaml"},
      {"dry-run", nullptr, ""},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const InventoryEntry* found = merged.find({"", "ConfigMap", "web", row.name});
    if (row.uid == nullptr) {
      CHECK(found == nullptr);
    } else {
      REQUIRE(found != nullptr);
      CHECK(found->uid == row.uid);
      CHECK(found->source == row.source);
    }
  }
  CHECK(merged.entries.size() == 5);
}

TEST_CASE("pending entries (applied but not yet recorded) round-trip without a UID", "[inventory]") {
  states::Inventory inventory;
  inventory.entries = {entry("ConfigMap", "web", "settings", "u1")};
  const std::string without_pending = states::encode_inventory(inventory);
  CHECK(without_pending.find("pending") == std::string::npos);  // old readers see the same document

  inventory.pending = {entry("ConfigMap", "web", "new", ""), entry("Namespace", "", "fresh", "")};
  const std::string text = states::encode_inventory(inventory);
  CHECK(text.find(R"("pending":[)") != std::string::npos);
  auto decoded = states::decode_inventory(text);
  REQUIRE(decoded.ok());
  CHECK(decoded->entries.size() == 1);
  REQUIRE(decoded->pending.size() == 2);
  CHECK(decoded->is_pending({"", "ConfigMap", "web", "new"}));
  CHECK(decoded->is_pending({"", "Namespace", "", "fresh"}));
  CHECK_FALSE(decoded->is_pending({"", "ConfigMap", "web", "settings"}));
  // A pending entry is not a recorded one: prune looks entries up with find().
  CHECK(decoded->find({"", "ConfigMap", "web", "new"}) == nullptr);
  CHECK(*decoded == inventory);

  // Strict as the entries: a pending entry without a name makes the whole inventory corrupt.
  auto broken = states::decode_inventory(
      R"({"version":1,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","name":"","uid":""}]})");
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(broken.error().message, Catch::Contains("pending entry 0"));
  CHECK_FALSE(states::decode_inventory(R"({"version":1,"entries":[],"pending":{}})").ok());
  auto broken_group = states::decode_inventory(
      R"({"version":2,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":[""]}]})");
  REQUIRE_FALSE(broken_group.ok());
  CHECK_THAT(broken_group.error().message, Catch::Contains("pending entry group 0 entry 0 lacks a name"));
}

TEST_CASE("pending entries keep when they were added and found missing, and older ones without times still decode",
          "[inventory]") {
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point added{seconds(1'800'000'000)};  // 2027-01-15T08:00:00Z
  states::Inventory inventory;
  InventoryEntry fresh = entry("ConfigMap", "web", "fresh", "");
  fresh.since = added;
  InventoryEntry missing = entry("ConfigMap", "web", "missing", "");
  missing.since = added;
  missing.missing_since = added + seconds(75);
  inventory.pending = {fresh, missing};
  const std::string text = states::encode_inventory(inventory);
  // Entries with other times are other groups.
  CHECK_THAT(text, Catch::Contains(R"("since":"2027-01-15T08:00:00Z","names":["fresh"],"sources":[0]})"));
  CHECK_THAT(
      text,
      Catch::Contains(
          R"("since":"2027-01-15T08:00:00Z","missingSince":"2027-01-15T08:01:15Z","names":["missing"],"sources":[0]})"));
  auto decoded = states::decode_inventory(text);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->pending.size() == 2);
  CHECK(decoded->pending[0].since == added);
  CHECK_FALSE(decoded->pending[0].missing_since);
  CHECK(decoded->pending[1].missing_since == added + seconds(75));
  CHECK(*decoded == inventory);
  CHECK(states::encode_inventory(*decoded) == text);

  // Written by a kstate that recorded no times: decodes, with none (such entries are
  // dropped as soon as their object is not found, as before).
  auto old = states::decode_inventory(
      R"({"version":1,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"web","name":"new","uid":""}]})");
  REQUIRE(old.ok());
  REQUIRE(old->pending.size() == 1);
  CHECK_FALSE(old->pending[0].since);
  CHECK_FALSE(old->pending[0].missing_since);
  CHECK(states::encode_inventory(*old).find("since") == std::string::npos);

  // An unreadable time makes the inventory corrupt, like any other malformed field.
  // (Year 4054 overflowed the clock's nanoseconds: found by tests/fuzz/inventory_fuzz.cpp.)
  for (const char* bad : {R"("since":"yesterday")", R"("since":12)", R"("missingSince":"2027-01-15")",
                          R"("since":"4054-01-15T08:00:00Z")"}) {
    for (
        const char* format :
        {R"({"version":1,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","name":"b","uid":"",)",
         R"({"version":2,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"a","names":["b"],)"}) {
      auto broken = states::decode_inventory(std::string(format) + bad + "}]}");
      INFO(format << bad);
      REQUIRE_FALSE(broken.ok());
      CHECK_THAT(broken.error().message, Catch::Contains("RFC 3339"));
    }
  }

  // Once recorded, an entry carries no pending times.
  InventoryEntry applied = fresh;
  applied.uid = "u9";
  states::Inventory merged = states::merge_inventory(inventory, {applied}, {});
  REQUIRE(merged.entries.size() == 1);
  CHECK_FALSE(merged.entries[0].since);
  CHECK(states::encode_inventory(merged).find("since") == std::string::npos);
}

TEST_CASE("an inventory written in format 1 (kstate before format 2) still decodes, and is rewritten in format 2",
          "[inventory]") {
  auto old = states::decode_inventory(
      R"({"version":1,"entries":[)"
      R"({"group":"","version":"v1","kind":"ConfigMap","namespace":"web","name":"settings","uid":"u1","source":"dir/app.yaml"},)"
      R"({"group":"apps","version":"v1","kind":"Deployment","namespace":"web","name":"frontend","uid":"u2"}],)"
      R"("pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"web","name":"new","uid":"","source":"dir/app.yaml",)"
      R"("since":"2027-01-15T08:00:00Z"}]})");
  REQUIRE(old.ok());
  states::Inventory expected;
  expected.entries = {entry("ConfigMap", "web", "settings", "u1"),
                      entry("Deployment", "web", "frontend", "u2", "apps", "")};
  InventoryEntry pending = entry("ConfigMap", "web", "new", "");
  pending.since = std::chrono::system_clock::time_point{std::chrono::seconds(1'800'000'000)};
  expected.pending = {pending};
  CHECK(*old == expected);
  // A UID on a pending entry (kstate wrote ""; a hand edit) means nothing: found by
  // tests/fuzz/inventory_fuzz.cpp, as format 2 has no place for it.
  auto edited = states::decode_inventory(
      R"({"version":1,"entries":[],"pending":[{"group":"","version":"v1","kind":"ConfigMap","namespace":"web","name":"new","uid":"x"}]})");
  REQUIRE(edited.ok());
  REQUIRE(edited->pending.size() == 1);
  CHECK(edited->pending[0].uid.empty());
  const std::string rewritten = states::encode_inventory(*old);
  CHECK_THAT(rewritten, Catch::StartsWith(R"({"version":2,)"));
  auto again = states::decode_inventory(rewritten);
  REQUIRE(again.ok());
  CHECK(*again == expected);
}

TEST_CASE("format 2 fits the inventory of 10,000 objects in the 1 MiB a Secret holds", "[inventory]") {
  // Names as long as real ones tend to be (40 characters), 20 namespaces, one file per
  // namespace and kind. Format 1 needed ~2.3 MB for them (~230 bytes per entry).
  states::Inventory inventory;
  const char* kinds[] = {"ConfigMap", "Secret", "Service", "ServiceAccount"};
  for (int i = 0; i < 10'000; ++i) {
    const std::string ns = "tenant-" + std::to_string(i % 20);
    const char* kind = kinds[i % 4];
    char name[64];
    std::snprintf(name, sizeof name, "platform-observability-collector-cm-%05d", i);
    char uid[40];
    std::snprintf(uid, sizeof uid, "%08x-1111-4222-8333-%012d", i, i);
    inventory.entries.push_back(entry(kind, ns, name, uid, "", "/etc/kstate/manifests/" + ns + "/" + kind + ".yaml"));
  }
  const std::string text = states::encode_inventory(inventory);
  INFO(text.size() << " bytes");
  CHECK(text.size() < std::size_t{1} << 20);  // ~858 kB: 86 bytes per entry, most of them the name and the UID
  auto decoded = states::decode_inventory(text);
  REQUIRE(decoded.ok());
  CHECK(decoded->entries.size() == inventory.entries.size());
  std::sort(inventory.entries.begin(), inventory.entries.end(),
            [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); });
  CHECK(*decoded == inventory);
}

TEST_CASE("format 2 fits 10,000 objects declared one per file", "[inventory]") {
  // As the bench's daemon corpus and kube-addon-manager-style folders are laid out: each
  // path is written once in the table, relative to the folder they share.
  states::Inventory inventory;
  for (int i = 0; i < 10'000; ++i) {
    const std::string ns = "tenant-" + std::to_string(i % 100);
    const std::string name = "object-" + std::to_string(i);
    char uid[40];
    std::snprintf(uid, sizeof uid, "%08x-1111-4222-8333-%012d", i, i);
    inventory.entries.push_back(entry(i % 2 == 0 ? "ConfigMap" : "Secret", ns, name, uid, "",
                                      "/srv/kstate/manifests/" + ns + "/" + name + ".yaml"));
  }
  const std::string text = states::encode_inventory(inventory);
  INFO(text.size() << " bytes");
  CHECK(text.size() < std::size_t{1} << 20);                                           // ~876 kB: 88 bytes per entry
  CHECK(text.find("/srv/kstate/manifests/") == text.rfind("/srv/kstate/manifests/"));  // the root, once
  auto decoded = states::decode_inventory(text);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->entries.size() == inventory.entries.size());
  const InventoryEntry* found = decoded->find({"", "Secret", "tenant-77", "object-9977"});
  REQUIRE(found != nullptr);
  CHECK(found->source == "/srv/kstate/manifests/tenant-77/object-9977.yaml");
}

TEST_CASE("merging agrees with a plain model on random inventories, applies and removals", "[inventory][randomized]") {
  // The model: start from the previous entries, drop the removed keys, then each apply
  // with a UID in order (the last of one key wins), without pending times.
  std::mt19937 random(20261121);
  const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(random); };
  const auto random_entry = [&](const std::string& uid) {
    const char* kinds[] = {"ConfigMap", "Secret", "Role"};
    const char* groups[] = {"", "rbac.authorization.k8s.io"};
    return entry(kinds[pick(3)], "ns-" + std::to_string(pick(3)), "n-" + std::to_string(pick(6)), uid, groups[pick(2)],
                 "dir/" + std::to_string(pick(100)) + ".yaml");
  };
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    states::Inventory previous;
    std::vector<InventoryEntry> applied;
    std::vector<states::ObjectKey> removed;
    for (int i = pick(20); i > 0; --i) {
      previous.entries.push_back(random_entry("old-" + std::to_string(i)));
      previous.entries.back().since = std::chrono::system_clock::time_point(std::chrono::seconds(pick(1000)));
    }
    if (pick(2) == 0) {  // as decoded: sorted, one per key
      auto decoded = states::decode_inventory(states::encode_inventory(previous));
      REQUIRE(decoded.ok());
      previous.entries = decoded->entries;
    }
    for (int i = pick(20); i > 0; --i) {
      applied.push_back(random_entry(pick(4) == 0 ? "" : "new-" + std::to_string(i)));
    }
    for (int i = pick(6); i > 0; --i) {
      removed.push_back(random_entry("").key());
    }

    std::map<states::ObjectKey, InventoryEntry> model;
    for (const auto& old : previous.entries) {
      model[old.key()] = old;  // an unsorted list: the later entry of one key wins
    }
    for (const auto& key : removed) {
      model.erase(key);
    }
    for (const auto& now : applied) {
      if (!now.uid.empty()) {
        InventoryEntry recorded = now;
        recorded.since.reset();
        recorded.missing_since.reset();
        model[now.key()] = recorded;
      }
    }
    std::vector<InventoryEntry> expected;
    for (const auto& [key, value] : model) {
      expected.push_back(value);
    }
    CHECK(states::merge_inventory(previous, applied, removed).entries == expected);
  }
}

}  // namespace inventory_test
