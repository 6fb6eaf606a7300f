// The LISTs `kstate apply` starts from the inventory before its manifests are loaded
// (ReconcileOptions::read_ahead): begin_cycle sends them, before any state is known,
// and the cycle that follows reads its live objects from their answers, sending none
// of them twice; a LIST the manifests no longer need changes nothing. Runs begin_cycle
// and reconcile in process against kstate-emulator, as `kstate apply` calls them.
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/reconcile.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace read_ahead_test {

using kstate::testing::Emulator;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace states = kstate::states;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> namespaces = {"team-a", "team-b", "team-c"};

// Three namespaces, each with two ConfigMaps and (unless left out) a Secret.
void write_manifests(const fs::path& dir, bool with_secrets) {
  fs::remove_all(dir);
  for (const auto& ns : namespaces) {
    std::string text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n";
    for (const char* name : {"one", "two"}) {
      text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + std::string(name) + "\n  namespace: " + ns +
              "\ndata:\n  color: blue\n";
    }
    if (with_secrets) {
      text += "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: " + ns +
              "\nstringData:\n  token: not-a-real-token\n";
    }
    write_file(dir / (ns + ".yaml"), text);
  }
}

struct InProcessApply {
  Emulator emulator;
  TempDir work{"kstate-read-ahead"};
  boost::asio::io_context io;
  std::unique_ptr<kstate::Client> client;
  std::unique_ptr<kstate::discovery::DiscoveryClient> discovery;
  std::unique_ptr<states::DiscoveryResolver> resolver;
  states::ReconcileOptions options;

  InProcessApply() {
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    auto made = kstate::make_client(io.get_executor(), sources, {});
    REQUIRE(made.ok());
    client = std::move(made).value();
    kstate::discovery::DiscoveryOptions discovery_options;
    discovery_options.cache_dir = (work.path() / "cache").string();
    discovery = std::make_unique<kstate::discovery::DiscoveryClient>(*client->transport, client->config.server,
                                                                     discovery_options);
    resolver = std::make_unique<states::DiscoveryResolver>(*discovery);
    options.engine.ownership_labels = states::ownership_labels(options.parent);
    options.kstate_version = "test";
    options.read_ahead = true;
    spdlog::set_level(spdlog::level::warn);
  }

  // As `kstate apply` does: the cycle's start, then (its LISTs in flight) the load.
  states::CycleStart begin() {
    return kstate::run_until_complete(io, states::begin_cycle(*client->dynamic, *resolver, options));
  }
  states::RunReport finish(states::CycleStart& start, bool with_secrets) {
    write_manifests(work.path() / "manifests", with_secrets);
    auto loaded = kstate::manifests::load_paths({(work.path() / "manifests").string()});
    REQUIRE(loaded.errors.empty());
    options.manifests_empty = loaded.files.empty();
    auto report = kstate::run_sync(io, states::reconcile(*client->dynamic, *resolver, loaded.states, options, start));
    if (start.read_ahead) {
      kstate::run_sync(io, start.read_ahead->finished());
    }
    return report;
  }
  states::RunReport apply(bool with_secrets) {
    auto start = begin();
    return finish(start, with_secrets);
  }

  // Method and path (with query) of each request since the log was last reset.
  std::vector<std::string> requests() {
    auto log = json::parse(emulator.request_log());
    REQUIRE(log.ok());
    std::vector<std::string> seen;
    for (const auto& entry : (*log)["requests"].GetArray()) {
      std::string path(json::string_or(json::find(entry, "path"), ""));
      if (path.starts_with("/emulator")) {
        continue;
      }
      std::string query(json::string_or(json::find(entry, "query"), ""));
      seen.push_back(std::string(json::string_or(json::find(entry, "method"), "")) + " " + path +
                     (query.empty() ? "" : "?" + query));
    }
    return seen;
  }
  int count(const std::string& prefix) {
    int found = 0;
    for (const auto& request : requests()) {
      found += request.starts_with(prefix) ? 1 : 0;
    }
    return found;
  }
};

int changed(const states::RunReport& report) {
  int count = 0;
  for (const auto& result : report.results) {
    count += result.changed() ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE("begin_cycle lists the kinds the inventory records, and the cycle reads its objects from those answers") {
  InProcessApply kstate;
  // The first apply has no inventory yet: nothing to list ahead.
  auto first = kstate.begin();
  CHECK(first.read_ahead == nullptr);
  auto created = kstate.finish(first, true);
  REQUIRE(created.errors.empty());
  REQUIRE(created.results.size() == 12);

  kstate.emulator.reset_request_log();
  auto start = kstate.begin();
  REQUIRE(start.read_ahead != nullptr);
  kstate::run_sync(kstate.io, start.read_ahead->finished());
  // Before any manifest is loaded: the parent, then one LIST across namespaces per
  // kind recorded in several namespaces, selected by kstate's labels.
  auto before_load = kstate.requests();
  REQUIRE(before_load.size() == 3);
  CHECK(before_load[0] == "GET /api/v1/namespaces/kube-system/secrets/kstate");
  std::vector<std::string> lists(before_load.begin() + 1, before_load.end());
  std::sort(lists.begin(), lists.end());
  CHECK(lists[0].starts_with("GET /api/v1/configmaps?labelSelector="));
  CHECK(lists[1].starts_with("GET /api/v1/secrets?labelSelector="));
  CHECK(lists[0].find("part-of") != std::string::npos);

  auto again = kstate.finish(start, true);
  CHECK(again.errors.empty());
  CHECK(again.results.size() == 12);
  CHECK(changed(again) == 0);
  // Neither kind is listed again, nor read namespace by namespace; no write.
  CHECK(kstate.count("GET /api/v1/configmaps") == 1);
  CHECK(kstate.count("GET /api/v1/secrets") == 1);
  CHECK(kstate.count("GET /api/v1/namespaces/team-") == 0);
  CHECK(kstate.count("PATCH /api/v1/namespaces/team-") == 0);
  CHECK(kstate.count("POST ") == 0);
}

TEST_CASE("a LIST started ahead that the manifests no longer need changes nothing") {
  InProcessApply kstate;
  REQUIRE(kstate.apply(true).errors.empty());
  kstate.emulator.reset_request_log();
  // The Secrets are gone from the manifests (and kstate apply does not prune unless
  // asked): their LIST, started from the inventory, is answered and left unused.
  auto report = kstate.apply(false);
  CHECK(report.errors.empty());
  CHECK(report.results.size() == 9);
  CHECK(changed(report) == 0);
  CHECK(kstate.count("GET /api/v1/secrets") == 1);
  CHECK(kstate.count("GET /api/v1/configmaps") == 1);
  CHECK(kstate.count("DELETE ") == 0);
  for (const auto& ns : namespaces) {
    CHECK(kstate.emulator.request("GET", "/api/v1/namespaces/" + ns + "/secrets/token").status == 200);
  }
}

TEST_CASE("an object deleted since the inventory was written is recreated, although its kind was listed ahead") {
  InProcessApply kstate;
  REQUIRE(kstate.apply(true).errors.empty());
  REQUIRE(kstate.emulator.request("DELETE", "/api/v1/namespaces/team-b/configmaps/two").status == 200);
  kstate.emulator.reset_request_log();
  auto report = kstate.apply(true);
  CHECK(report.errors.empty());
  CHECK(changed(report) == 1);
  // The LIST ahead lacked it: only its namespace's ConfigMaps were read again.
  CHECK(kstate.count("GET /api/v1/configmaps") == 1);
  CHECK(kstate.count("GET /api/v1/namespaces/team-b/configmaps") == 1);
  CHECK(kstate.count("GET /api/v1/namespaces/team-a/configmaps") == 0);
  CHECK(kstate.emulator.request("GET", "/api/v1/namespaces/team-b/configmaps/two").status == 200);
}

}  // namespace read_ahead_test
