// EngineOptions that only change how kstate works, not what it does, must change
// nothing a user can see: the same results, changes and comments, and the same
// requests. prepare_ahead (`kstate apply` and `kstate test` build the objects to send
// while the live objects are still being read; the daemon builds each just before its
// comparison) and record_diffs (the daemon keeps no diff text) are run on a mix of
// states that exercises what they could get wrong: generateName objects (their name is
// only known after a look-up), create-only, replace, a CRD with a custom resource of
// this run (its kind resolves late), objects that change between runs and ones that
// do not.
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/engine.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace prepare_ahead_test {

using kstate::testing::Emulator;
using kstate::testing::EmulatorOptions;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace states = kstate::states;

namespace {

std::string manifests(const std::string& color) {
  return R"(apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {color: )" +
         color + R"(}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: fixed, namespace: shop}
data: {size: large}
---
apiVersion: v1
kind: ConfigMap
metadata: {generateName: report-, namespace: shop}
data: {kind: report}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: shop}
stringData: {token: not-a-real-token}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: gadget, namespace: shop}
spec: {color: )" +
         color + R"(}
---
once:
  object_present:
    strategy: create-only
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: once, namespace: shop}
      data: {color: )" +
         color + R"(}
---
swapped:
  object_present:
    strategy: replace
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: swapped, namespace: shop}
      data: {color: )" +
         color + R"(}
)";
}

EmulatorOptions immediate_crds() {
  EmulatorOptions options;
  options.crd_establish_delay_seconds = 0;
  return options;
}

struct Cluster {
  Emulator emulator{immediate_crds()};
  TempDir work{"kstate-prepare"};

  // What a user sees of one run: per state ID, result, whether it changed, comment.
  // Results whose changes hold a diff, by state ID (record_diffs), from the last run.
  std::set<std::string> with_diff;
  // Over the last run's results with a diff: the diffs' length, and what their
  // documents took from the system.
  std::size_t diff_bytes = 0;
  std::size_t diff_documents_bytes = 0;
  // Over the last run's changed results: how many, what their documents took.
  std::size_t changed_results = 0;
  std::size_t changes_documents_bytes = 0;

  std::map<std::string, std::string> run(const std::string& text, bool prepare_ahead, bool record_diffs = true) {
    auto dir = work.path() / "manifests";
    std::filesystem::remove_all(dir);
    write_file(dir / "shop.yaml", text);
    auto loaded = kstate::manifests::load_paths({dir.string()});
    INFO(loaded.error_text());
    REQUIRE(loaded.ok());
    boost::asio::io_context io;
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    auto client = kstate::make_client(io.get_executor(), sources, kstate::TransportOptions{});
    REQUIRE(client.ok());
    kstate::discovery::DiscoveryOptions discovery_options;
    discovery_options.cache_dir = (work.path() / "cache").string();
    kstate::discovery::DiscoveryClient discovery(*(*client)->transport, (*client)->config.server, discovery_options);
    states::DiscoveryResolver resolver(discovery);
    states::EngineOptions options;
    options.prepare_ahead = prepare_ahead;
    options.record_diffs = record_diffs;
    options.ownership_labels = {{"app.kubernetes.io/managed-by", "kstate"}};
    states::Engine engine(*(*client)->dynamic, resolver, options);
    states::RunReport report = kstate::run_sync(io, engine.run(loaded.states));
    std::map<std::string, std::string> seen;
    with_diff.clear();
    diff_bytes = 0;
    diff_documents_bytes = 0;
    changed_results = 0;
    changes_documents_bytes = 0;
    for (auto& result : report.results) {
      if (result.changed()) {
        ++changed_results;
        changes_documents_bytes += result.changes.GetAllocator().reserved_bytes();
      }
      if (const json::Value* diff = json::find(result.changes, "diff")) {
        with_diff.insert(result.id);
        diff_bytes += diff->GetStringLength();
        diff_documents_bytes += result.changes.GetAllocator().reserved_bytes();
      }
      std::string outcome = !result.result ? "pending" : (*result.result ? "ok" : "failed");
      seen[result.id] = outcome + (result.changed() ? " changed: " : " unchanged: ") + result.comment;
    }
    return seen;
  }

  // The requests sent, in a canonical order (some run concurrently), with generated
  // names (random) replaced.
  std::vector<std::string> api_requests() {
    auto log = json::parse(emulator.request_log());
    REQUIRE(log.ok());
    std::vector<std::string> requests;
    for (const auto& entry : (*log)["requests"].GetArray()) {
      std::string path(json::string_or(json::find(entry, "path"), ""));
      if (path.rfind("/emulator/", 0) == 0) {
        continue;
      }
      if (auto generated = path.find("/report-"); generated != std::string::npos) {
        path = path.substr(0, generated) + "/report-GENERATED";
      }
      requests.push_back(std::string(json::string_or(json::find(entry, "method"), "")) + " " + path + "?" +
                         std::string(json::string_or(json::find(entry, "query"), "")));
    }
    std::sort(requests.begin(), requests.end());
    return requests;
  }
};

}  // namespace

TEST_CASE("objects prepared while the live objects are read give the same results and requests as built one by one") {
  Cluster one_by_one;
  Cluster prepared;
  for (std::string color : {"blue", "blue", "green"}) {
    INFO("run with color " << color);
    one_by_one.emulator.reset_request_log();
    prepared.emulator.reset_request_log();
    auto expected = one_by_one.run(manifests(color), false);
    auto seen = prepared.run(manifests(color), true);
    CHECK(seen == expected);
    CHECK(prepared.api_requests() == one_by_one.api_requests());
    for (const auto& [id, outcome] : seen) {
      INFO(id);
      CHECK(outcome.rfind("ok", 0) == 0);
    }
  }
  // Only one generateName object exists, on both.
  for (Cluster* cluster : {&one_by_one, &prepared}) {
    auto list = json::parse(cluster->emulator.request("GET", "/api/v1/namespaces/shop/configmaps").body);
    REQUIRE(list.ok());
    int generated = 0;
    for (const auto& item : (*list)["items"].GetArray()) {
      generated += json::string_or(json::find_path(item, {"metadata", "generateName"}), "") == "report-" ? 1 : 0;
    }
    CHECK(generated == 1);
  }
}

TEST_CASE("without recorded diffs (the daemon) changes are reported the same, and no diff text is kept") {
  Cluster with_diffs;
  Cluster without;
  for (std::string color : {"blue", "blue", "green"}) {
    INFO("run with color " << color);
    with_diffs.emulator.reset_request_log();
    without.emulator.reset_request_log();
    auto expected = with_diffs.run(manifests(color), false, true);
    auto seen = without.run(manifests(color), false, false);
    CHECK(seen == expected);
    CHECK(without.api_requests() == with_diffs.api_requests());
    CHECK(without.with_diff.empty());
    if (color == "green") {
      CHECK(seen.at("ConfigMap/shop/settings") == "ok changed: updated");
      CHECK(with_diffs.with_diff.count("ConfigMap/shop/settings") == 1);
    } else if (std::count_if(expected.begin(), expected.end(),
                             [](const auto& entry) { return entry.second == "ok changed: created"; }) > 0) {
      CHECK_FALSE(with_diffs.with_diff.empty());  // the first run creates, with diffs
    }
  }
}

TEST_CASE("a result's recorded change takes about its own length in memory") {
  // `kstate apply` keeps every diff until the report: a cold apply of 1,000 objects
  // keeps 1.1 MB of them, which took 2.3 MB (a member array for 16 members, and a
  // chunk of its own for the text) before.
  Cluster cluster;
  cluster.run(manifests("blue"), true);
  REQUIRE(cluster.with_diff.size() >= 8);
  CHECK(cluster.diff_documents_bytes <= cluster.diff_bytes + 128 * cluster.with_diff.size());

  // The daemon records each change by its verb and the object's name: a few dozen
  // bytes, which took 1.5 KB each before (15 MB of a 10,000-object first reconcile).
  Cluster daemon_like;
  daemon_like.run(manifests("blue"), false, /*record_diffs=*/false);
  REQUIRE(daemon_like.changed_results >= 8);
  CHECK(daemon_like.changes_documents_bytes <= 160 * daemon_like.changed_results);
}

}  // namespace prepare_ahead_test
