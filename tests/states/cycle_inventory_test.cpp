// A cycle's inventory bookkeeping (states/cycle_inventory.hpp): the pending record
// written before anything is applied, earlier cycles' pending entries looked up on
// the server (recorded, kept through the grace period, dropped after it), what a
// claiming writer inherits, generateName objects counted as declared, and the
// inventory written back.
#include "states/cycle_inventory.hpp"

#include <catch2/catch.hpp>

#include "states/applyset.hpp"
#include "states/prune.hpp"
#include "tests/support/api_resources.hpp"
#include "tests/support/fake_transport.hpp"

namespace cycle_inventory_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using states::Inventory;
using states::InventoryEntry;
using states::ObjectKey;
using std::chrono::seconds;
using TimePoint = std::chrono::system_clock::time_point;

namespace {

InventoryEntry config_map(std::string name, std::string uid = "", std::string source = "/m/app.yaml") {
  InventoryEntry entry;
  entry.version = "v1";
  entry.kind = "ConfigMap";
  entry.ns = "team";
  entry.name = std::move(name);
  entry.uid = std::move(uid);
  entry.source = std::move(source);
  return entry;
}

const TimePoint earlier{seconds(1'000'000)};
const TimePoint now = earlier + seconds(30);

struct ConfigMapsResolver final : states::KindResolver {
  asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) override {
    if (gvk.kind == "ConfigMap") {
      co_return kstate::testing::configmaps_resource();
    }
    co_return Error(ErrorKind::not_found, "no matches for kind \"" + gvk.kind + "\"");
  }
  asio::awaitable<Status> refresh() override { co_return ok_status(); }
};

std::string labelled(const std::string& name, const std::string& uid, bool kstate_labels) {
  const std::string labels = kstate_labels ? R"("labels":{"app.kubernetes.io/managed-by":"kstate"},)" : "";
  return R"({"kind":"ConfigMap","metadata":{"name":")" + name + R"(","namespace":"team",)" + labels + R"("uid":")" +
         uid + R"("}})";
}

// An inventory with one pending entry (added `earlier`) and the server it is looked up on.
struct Lookup {
  FakeTransport fake;
  DynamicClient client{fake};
  ConfigMapsResolver resolver;
  boost::asio::io_context io;
  Inventory inventory;
  explicit Lookup(const std::string& name) {
    InventoryEntry pending = config_map(name);
    pending.since = earlier;
    inventory.pending = {pending};
  }
  void recover(TimePoint at, const std::string& id = "id") {
    run_sync(io, states::recover_pending(client, resolver, inventory, {}, id, "team", at));
  }
};

}  // namespace

TEST_CASE("add_pending: intents become pending once, dated now; earlier pending keep their date") {
  Inventory inventory;
  inventory.entries = {config_map("recorded", "u-1")};
  InventoryEntry old_pending = config_map("old");
  old_pending.since = earlier;
  old_pending.missing_since = earlier;
  inventory.pending = {old_pending};

  states::add_pending(inventory, {config_map("new"), config_map("old"), config_map("new", "", "/m/other.yaml")},
                      /*earlier_pending=*/true, now);

  REQUIRE(inventory.pending.size() == 2);
  CHECK(inventory.pending[0].name == "new");
  CHECK(inventory.pending[0].since == now);
  CHECK(inventory.pending[0].source == "/m/app.yaml");  // declared twice: the first counts
  CHECK(inventory.pending[1].name == "old");
  CHECK(inventory.pending[1].since == earlier);                 // its grace period starts again...
  CHECK_FALSE(inventory.pending[1].missing_since.has_value());  // ...when a later cycle misses it
}

TEST_CASE("next_inventory: applied recorded, removed forgotten, pending this cycle did not record kept") {
  Inventory loaded;
  loaded.entries = {config_map("kept", "u-1"), config_map("pruned", "u-2")};
  loaded.pending = {config_map("applied"), config_map("failed")};
  const Inventory next =
      states::next_inventory(loaded, {config_map("applied", "u-3")}, {config_map("pruned").key()}, "team");
  REQUIRE(next.entries.size() == 2);
  CHECK(next.entries[0].name == "applied");
  CHECK(next.entries[0].uid == "u-3");
  CHECK(next.entries[1].name == "kept");
  REQUIRE(next.pending.size() == 1);
  CHECK(next.pending[0].name == "failed");
}

TEST_CASE("inherit_undeclared marks what this writer does not declare, once") {
  Inventory inventory;
  inventory.entries = {config_map("mine", "u-1"), config_map("theirs", "u-2")};
  const std::set<ObjectKey> declared = {inventory.entries[0].key()};
  CHECK(states::inherit_undeclared(inventory, declared) == 1);
  CHECK_FALSE(states::is_inherited(inventory.entries[0]));
  CHECK(states::is_inherited(inventory.entries[1]));
  CHECK(states::inherit_undeclared(inventory, declared) == 0);
}

TEST_CASE("declare_generated: a generateName state declares its recorded objects by file, kind and prefix") {
  manifests::State state;
  state.function = manifests::Function::object_present;
  state.source.file = "/m/jobs.yaml";
  state.object = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"run-"}})").value();
  std::vector<manifests::State> states_declared;
  states_declared.push_back(std::move(state));
  Inventory inventory;
  inventory.entries = {config_map("run-abc12", "u-1", "/m/jobs.yaml"), config_map("run-xyz34", "u-2", "/m/other.yaml"),
                       config_map("other-abc", "u-3", "/m/jobs.yaml")};
  std::set<ObjectKey> declared;
  states::declare_generated(states_declared, inventory, declared);
  REQUIRE(declared.size() == 1);
  CHECK(declared.count(inventory.entries[0].key()) == 1);
}

TEST_CASE("recover_pending: an earlier cycle's pending entry is recorded when found with kstate's labels") {
  Lookup lookup("interrupted");
  FakeTransport& fake = lookup.fake;
  struct Row {
    const char* name;
    int status;
    std::string body;
    TimePoint at;
    bool recorded;
    bool still_pending;
  };
  const Row rows[] = {
      {"found with kstate's labels: recorded with its UID", 200,
       R"({"kind":"ConfigMapList","items":[)" + labelled("interrupted", "u-9", true) + "]}", now, true, false},
      {"found without kstate's labels: not recorded; kept while its grace runs", 200,
       R"({"kind":"ConfigMapList","items":[)" + labelled("interrupted", "u-9", false) + "]}", now, false, true},
      {"not found within the grace period: kept", 200, R"({"kind":"ConfigMapList","items":[]})", now, false, true},
      {"the lookup failed: kept", 403,
       R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"})",
       now + states::pending_grace * 10, false, true},
  };
  for (const Row& row : rows) {
    DYNAMIC_SECTION(row.name) {
      fake.respond(row.status, row.body);
      lookup.recover(row.at, "applyset-id");
      REQUIRE(fake.requests().size() == 1);
      CHECK(fake.requests()[0].path == "/api/v1/namespaces/team/configmaps");
      CHECK(fake.requests()[0].target().find("labelSelector=applyset.kubernetes.io%2Fpart-of%3Dapplyset-id") !=
            std::string::npos);
      const InventoryEntry* recorded = lookup.inventory.find(config_map("interrupted").key());
      CHECK((recorded != nullptr) == row.recorded);
      if (recorded != nullptr) {
        CHECK(recorded->uid == "u-9");
      }
      CHECK(lookup.inventory.pending.size() == (row.still_pending ? 1U : 0U));
    }
  }
}

TEST_CASE("recover_pending: a pending entry missing for the whole grace period is dropped") {
  Lookup lookup("never-made");
  const std::string empty = R"({"kind":"ConfigMapList","items":[]})";
  lookup.fake.respond(200, empty);
  lookup.recover(now);
  REQUIRE(lookup.inventory.pending.size() == 1);
  CHECK(lookup.inventory.pending[0].missing_since == now);
  lookup.fake.respond(200, empty);
  lookup.recover(now + states::pending_grace - seconds(1));
  CHECK(lookup.inventory.pending.size() == 1);
  lookup.fake.respond(200, empty);
  lookup.recover(now + states::pending_grace);
  CHECK(lookup.inventory.pending.empty());
  CHECK(lookup.inventory.entries.empty());
}

}  // namespace cycle_inventory_test
