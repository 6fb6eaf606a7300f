// Pending inventory entries outlive the requests of a cycle that died: a `kstate apply`
// killed with a server-side apply still in flight leaves an object the API server may
// create after the next cycle looked for it (a real API server finishes requests whose
// client has gone, up to its request timeout). These tests run reconcile cycles in
// process against kstate-emulator with an injected wall clock, so the grace period is
// crossed without sleeping: a pending entry whose object is missing is kept, recorded
// and pruned once the object appears, and dropped once the grace period is over;
// entries written before kstate recorded times are dropped at once, as they always were.
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>

#include "core/dynamic_client.hpp"
#include "core/encoding.hpp"
#include "core/json.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/inventory.hpp"
#include "states/reconcile.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace pending_grace_test {

using kstate::testing::Emulator;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace states = kstate::states;
namespace fs = std::filesystem;
using WallClock = std::chrono::system_clock;

namespace {

// kstate as the daemon runs it, on an emulator, with a wall clock the test sets.
struct InProcessKstate {
  boost::asio::io_context io;
  std::unique_ptr<kstate::Client> client;
  std::unique_ptr<kstate::discovery::DiscoveryClient> discovery;
  std::unique_ptr<states::DiscoveryResolver> resolver;
  WallClock::time_point now = WallClock::time_point(std::chrono::seconds(1'800'000'000));  // 2027-01-15

  InProcessKstate(const Emulator& emulator, const fs::path& cache_dir) {
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    kstate::TransportOptions transport;
    transport.request_timeout = std::chrono::seconds(10);
    spdlog::set_level(spdlog::level::err);  // the failing applies below are expected
    auto made = kstate::make_client(io.get_executor(), sources, transport);
    REQUIRE(made.ok());
    client = std::move(made).value();
    kstate::discovery::DiscoveryOptions options;
    options.cache_dir = cache_dir.string();
    discovery =
        std::make_unique<kstate::discovery::DiscoveryClient>(*client->transport, client->config.server, options);
    resolver = std::make_unique<states::DiscoveryResolver>(*discovery);
  }

  states::RunReport cycle(const fs::path& dir) {
    auto loaded = kstate::manifests::load_paths({dir.string()});
    states::ReconcileOptions options;
    options.engine.ownership_labels = states::ownership_labels(options.parent);
    options.prune = true;
    options.load_failed = !loaded.failed_files.empty();
    options.manifests_empty = loaded.files.empty();
    options.kstate_version = "test";
    options.now = [this] { return now; };
    return kstate::run_sync(io, states::reconcile(*client->dynamic, *resolver, loaded.states, options));
  }
};

json::Document parse(const std::string& text) {
  auto document = json::parse(text);
  REQUIRE(document.ok());
  return std::move(document).value();
}

std::string config_map(const std::string& name) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\ndata: {a: b}\n";
}

constexpr const char* parent_path = "/api/v1/namespaces/kube-system/secrets/kstate";

// The inventory the parent Secret holds, decoded (whatever its format).
states::Inventory recorded(const Emulator& emulator) {
  auto reply = emulator.request("GET", parent_path);
  REQUIRE(reply.status == 200);
  json::Document parent = parse(reply.body);
  states::LoadedInventory loaded = states::load_inventory(&parent);
  REQUIRE(loaded.status == states::InventoryStatus::ok);
  return std::move(loaded.inventory);
}

// "entries" or "pending" of the recorded inventory as names.
std::set<std::string> recorded_names(const Emulator& emulator, const char* field) {
  states::Inventory inventory = recorded(emulator);
  std::set<std::string> names;
  for (const auto& entry : std::string_view(field) == "entries" ? inventory.entries : inventory.pending) {
    names.insert(entry.name);
  }
  return names;
}

bool exists(const Emulator& emulator, const std::string& name) {
  return emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name).status == 200;
}

// A first cycle that records "late" and "never" as pending and then fails to apply
// them (every ConfigMap PATCH answered 400), as a cycle that died would leave them;
// then their files are removed and another object is declared.
void leave_pending(Emulator& emulator, InProcessKstate& kstate, const fs::path& dir) {
  write_file(dir / "late.yaml", config_map("late"));
  write_file(dir / "never.yaml", config_map("never"));
  emulator.set_faults(
      R"({"failNext":100,"failCode":400,"method":"PATCH","pathPrefix":"/api/v1/namespaces/default/configmaps/"})");
  states::RunReport failed = kstate.cycle(dir);
  emulator.clear_faults();
  REQUIRE(failed.failed() == 2);
  REQUIRE(recorded_names(emulator, "pending") == std::set<std::string>{"late", "never"});
  REQUIRE_FALSE(exists(emulator, "late"));
  REQUIRE_FALSE(exists(emulator, "never"));
  fs::remove(dir / "late.yaml");
  fs::remove(dir / "never.yaml");
  write_file(dir / "other.yaml", config_map("other"));
}

}  // namespace

TEST_CASE("a pending entry whose object appears after the next cycle looked is still recorded and pruned") {
  Emulator emulator;
  TempDir work{"kstate-pending-grace"};
  const fs::path dir = work.path() / "manifests";
  InProcessKstate kstate(emulator, work.path() / "cache");
  leave_pending(emulator, kstate, dir);
  const auto added = kstate.now;

  // The next cycle finds neither object: both stay pending (the request that creates
  // them may still be in flight at the API server).
  kstate.now = added + std::chrono::seconds(10);
  states::RunReport second = kstate.cycle(dir);
  CHECK(second.failed() == 0);
  CHECK(recorded_names(emulator, "pending") == std::set<std::string>{"late", "never"});
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"other"});

  // The in-flight request completes: "late" exists with kstate's labels.
  auto created = emulator.request("POST", "/api/v1/namespaces/default/configmaps",
                                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late",)"
                                  R"("namespace":"default","labels":{"app.kubernetes.io/managed-by":"kstate",)"
                                  R"("applyset.kubernetes.io/part-of":")" +
                                      states::applyset_id(states::ApplySetParent{}) + R"("}},"data":{"a":"b"}})");
  REQUIRE(created.status == 201);

  // A minute later: "late" is recorded and pruned; "never" is still in its grace period.
  kstate.now = added + std::chrono::seconds(70);
  states::RunReport third = kstate.cycle(dir);
  CHECK(third.failed() == 0);
  CHECK_FALSE(exists(emulator, "late"));
  CHECK(exists(emulator, "other"));
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"other"});
  CHECK(recorded_names(emulator, "pending") == std::set<std::string>{"never"});

  // Just before the grace period (counted from the cycle that first found it missing)
  // ends, "never" stays; once it is over, it is dropped.
  kstate.now = added + std::chrono::seconds(10) + states::pending_grace - std::chrono::seconds(1);
  kstate.cycle(dir);
  CHECK(recorded_names(emulator, "pending") == std::set<std::string>{"never"});
  kstate.now = added + std::chrono::seconds(10) + states::pending_grace;
  kstate.cycle(dir);
  CHECK(recorded_names(emulator, "pending").empty());
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"other"});
}

TEST_CASE("pending entries written before kstate recorded times are dropped when their object is not found") {
  Emulator emulator;
  TempDir work{"kstate-pending-old"};
  const fs::path dir = work.path() / "manifests";
  InProcessKstate kstate(emulator, work.path() / "cache");
  leave_pending(emulator, kstate, dir);

  // What an older kstate wrote: pending entries without times.
  states::Inventory inventory = recorded(emulator);
  REQUIRE_FALSE(inventory.pending.empty());
  for (auto& entry : inventory.pending) {
    REQUIRE(entry.since);
    entry.since.reset();
    entry.missing_since.reset();
  }
  const std::string patch = R"({"data":{"inventory.json":")" +
                            kstate::encoding::base64_encode(states::encode_inventory(inventory)) + R"("}})";
  REQUIRE(emulator.request("PATCH", parent_path, patch, "application/merge-patch+json").status == 200);

  kstate.now += std::chrono::seconds(10);
  states::RunReport next = kstate.cycle(dir);
  CHECK(next.failed() == 0);
  CHECK(recorded_names(emulator, "pending").empty());
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"other"});
}

TEST_CASE("a pending entry applied again keeps when it was added, once, next to the new ones") {
  Emulator emulator;
  TempDir work{"kstate-pending-again"};
  const fs::path dir = work.path() / "manifests";
  InProcessKstate kstate(emulator, work.path() / "cache");
  write_file(dir / "a.yaml", config_map("a-first"));
  write_file(dir / "m.yaml", config_map("m-again"));
  emulator.set_faults(
      R"({"failNext":100,"failCode":400,"method":"PATCH","path":"/api/v1/namespaces/default/configmaps/m-again"})");
  const auto added = kstate.now;
  REQUIRE(kstate.cycle(dir).failed() == 1);
  REQUIRE(recorded_names(emulator, "pending") == std::set<std::string>{"m-again"});

  // Still declared and still failing, now among new objects sorted before and after it.
  write_file(dir / "b.yaml", config_map("b-new") + "---\n" + config_map("z-new"));
  kstate.now = added + std::chrono::seconds(30);
  REQUIRE(kstate.cycle(dir).failed() == 1);
  states::Inventory inventory = recorded(emulator);
  REQUIRE(inventory.pending.size() == 1);
  CHECK(inventory.pending[0].name == "m-again");
  CHECK(inventory.pending[0].since == added);  // its grace period is not restarted by a retry
  CHECK_FALSE(inventory.pending[0].missing_since);
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"a-first", "b-new", "z-new"});

  // Applied at last: recorded, nothing left pending.
  emulator.clear_faults();
  REQUIRE(kstate.cycle(dir).failed() == 0);
  CHECK(recorded_names(emulator, "pending").empty());
  CHECK(recorded_names(emulator, "entries") == std::set<std::string>{"a-first", "b-new", "m-again", "z-new"});
}

}  // namespace pending_grace_test
