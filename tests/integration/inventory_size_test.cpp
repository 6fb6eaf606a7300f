// The inventory of a large directory fits in its ApplySet parent Secret. kube-apiserver
// refuses a Secret whose data holds more than 1 MiB, and the emulator does too: with
// one JSON object per entry (inventory format 1) 6,000 objects took ~1.4 MB, so their
// pending entries could not be recorded and nothing was applied. Format 2 groups the
// entries by kind and namespace and writes each file once, so they need ~0.5 MB.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "core/encoding.hpp"
#include "core/json.hpp"
#include "states/inventory.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace inventory_size_test {

using kstate::testing::Emulator;
using kstate::testing::TempDir;

// Thousands of objects: about 3 s optimized, 48-60 s under ASan on a loaded 2-core
// machine, beyond run_process's default 60 s; ctest's own limit is 300 s.
const kstate::testing::RunOptions kLongRun{{}, std::nullopt, std::chrono::milliseconds(240000), {}};
namespace json = kstate::json;
namespace fs = std::filesystem;

namespace {

constexpr int per_namespace = 300;

// Names as long as real ones tend to be (Helm's release-chart-component style).
std::string object_name(int index) {
  char name[64];
  std::snprintf(name, sizeof name, "platform-observability-collector-config-%05d", index);
  return name;
}

void write_manifests(const fs::path& dir, int namespaces) {
  fs::create_directories(dir);
  for (int n = 0; n < namespaces; ++n) {
    const std::string ns = "tenant-" + std::to_string(n);
    std::string text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n";
    for (int i = 0; i < per_namespace; ++i) {
      text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + object_name(i) + ", namespace: " + ns +
              "}\ndata: {level: info}\n";
    }
    kstate::testing::write_file(dir / (ns + ".yaml"), text);
  }
}

}  // namespace

TEST_CASE("6000 objects are applied and recorded within the 1 MiB a Secret can hold", "[integration][inventory]") {
  Emulator emulator;
  TempDir work{"kstate-inventory-size"};
  const fs::path dir = work.path() / "manifests";
  const int namespaces = 20;
  write_manifests(dir, namespaces);
  const std::string cache = (work.path() / "cache").string();

  auto applied = kstate::testing::run_process({KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate",
                                               "--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir",
                                               cache, "--output", "json", "--qps", "100000", "--burst", "100000"},
                                              kLongRun);  // the default 500/s would take 8 s
  INFO(applied.err.substr(0, 2000) << applied.out.substr(0, 2000));
  REQUIRE(applied.exit_code == 0);

  auto reply = emulator.request("GET", "/api/v1/namespaces/kube-system/secrets/kstate");
  REQUIRE(reply.status == 200);
  auto parent = json::parse(reply.body);
  REQUIRE(parent.ok());
  auto loaded = kstate::states::load_inventory(&*parent);
  REQUIRE(loaded.status == kstate::states::InventoryStatus::ok);
  CHECK(loaded.inventory.entries.size() == static_cast<std::size_t>(namespaces * (per_namespace + 1)));
  CHECK(loaded.inventory.pending.empty());
  const auto decoded = kstate::encoding::base64_decode(
      json::string_or(json::find_path(*parent, {"data", std::string(kstate::states::inventory_data_key)}), ""));
  REQUIRE(decoded);
  CHECK(decoded->size() < std::size_t{600'000});

  // Every object is there, and a second run finds nothing to change.
  auto listed = emulator.request("GET", "/api/v1/configmaps?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkstate");
  REQUIRE(listed.status == 200);
  auto items = json::parse(listed.body);
  REQUIRE(items.ok());
  CHECK(json::find(*items, "items")->Size() == static_cast<rapidjson::SizeType>(namespaces * per_namespace));
  auto again = kstate::testing::run_process(
      {KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate", "--kubeconfig",
       emulator.kubeconfig_path().string(), "--cache-dir", cache, "--qps", "100000", "--burst", "100000"},
      kLongRun);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("changed=0") != std::string::npos);
}

TEST_CASE("an inventory too large for its Secret is refused before anything is applied, with one clear error",
          "[integration][inventory]") {
  // 21,000 objects with 45-character names: even their pending entries (names only) take
  // more than 1 MiB.
  Emulator emulator;
  TempDir work{"kstate-inventory-too-large"};
  const fs::path dir = work.path() / "manifests";
  write_manifests(dir, 70);
  emulator.reset_request_log();

  auto applied =
      kstate::testing::run_process({KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate", "--kubeconfig",
                                    emulator.kubeconfig_path().string(), "--cache-dir",
                                    (work.path() / "cache").string(), "--qps", "100000", "--burst", "100000"},
                                   kLongRun);
  CHECK(applied.exit_code == 2);
  const std::string output = applied.out + applied.err;
  INFO(output.substr(0, 3000));
  CHECK(output.find("inventory: cannot record the objects about to be applied in the ApplySet parent Secret "
                    "kube-system/kstate: the inventory of 21070 objects takes") != std::string::npos);
  CHECK(output.find("more than the 1048576 a Secret can hold (about 10,000 objects fit): split the manifests") !=
        std::string::npos);
  CHECK(output.find("(nothing applied, nothing pruned)") != std::string::npos);
  // Nothing was written: no object, and no parent (the doomed record was not even sent).
  CHECK(emulator.count_requests("PATCH", "/") == 0);
  CHECK(emulator.count_requests("POST", "/") == 0);
  CHECK(emulator.request("GET", "/api/v1/namespaces/kube-system/secrets/kstate").status == 404);
}

}  // namespace inventory_size_test
