// Drift corrected through watches (issue 41), end to end: a `kstate daemon` on the
// emulator with a resync of an hour, so that only the watches can correct anything
// within the test. An edit and a delete made through the API are undone within
// seconds; a controller writing status and another manager writing a field kstate does
// not own trigger nothing; a writer that keeps undoing kstate's field is backed off
// from, counted under its name and logged once, pointing at kstate.io/ignore-fields;
// without permission to watch, the daemon says so and the resync corrects drift.
#include <catch2/catch.hpp>
#include <csignal>
#include <thread>

#include "tests/daemon/daemon_process.hpp"

namespace drift_e2e_test {

using namespace kstate;
using namespace kstate::testing;
using namespace kstate::testing::daemon_process;
using namespace std::chrono_literals;

namespace {

// The value of a series of /metrics (0 when absent), e.g. `kstate_drift_corrections_total{reason="deleted"}`.
double metric(const std::string& metrics, const std::string& series) {
  std::istringstream lines(metrics);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return 0;
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

const std::string config_maps = "/api/v1/namespaces/default/configmaps/";

HttpReply patch_color(Emulator& emulator, const std::string& name, const std::string& color,
                      const std::string& manager = "kubectl-edit") {
  return emulator.request("PATCH", config_maps + name + "?fieldManager=" + manager,
                          R"({"data":{"color":")" + color + R"("}})", "application/merge-patch+json");
}

// Waits until the daemon's watches run (the kinds are watched after the first cycle).
bool watching(Daemon& daemon, double kinds = 1) {
  return eventually([&] { return metric(daemon.metrics(), R"(kstate_drift_watches{state="watching"})") >= kinds; });
}

}  // namespace

TEST_CASE("an object edited or deleted through the API is back within seconds, with no resync") {
  Emulator emulator;
  Daemon daemon(emulator, "1h");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(daemon.color("app") == "blue");
  REQUIRE(watching(daemon));

  REQUIRE(patch_color(emulator, "app", "red").status == 200);
  const auto edited = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 5s));
  CHECK(std::chrono::steady_clock::now() - edited < 3s);
  CHECK(eventually(
      [&] { return metric(daemon.metrics(), R"(kstate_drift_corrections_total{reason="fields_taken"})") == 1; }));

  REQUIRE(emulator.request("DELETE", config_maps + "app").status == 200);
  const auto deleted = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 5s));
  CHECK(std::chrono::steady_clock::now() - deleted < 3s);
  CHECK(
      eventually([&] { return metric(daemon.metrics(), R"(kstate_drift_corrections_total{reason="deleted"})") == 1; }));

  // kstate's own corrections are not drift: nothing more is corrected afterwards.
  std::this_thread::sleep_for(1500ms);
  const std::string after = daemon.metrics();
  CHECK(metric(after, R"(kstate_drift_corrections_total{reason="fields_taken"})") == 1);
  CHECK(metric(after, R"(kstate_drift_corrections_total{reason="deleted"})") == 1);
  CHECK(daemon.log_text().find("drift: ConfigMap/default/app was deleted: running its state") != std::string::npos);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("a controller writing status and another manager writing a field kstate does not own trigger nothing") {
  Emulator emulator;
  Daemon daemon(emulator, "1h");
  write_file(daemon.manifests / "web.yaml",
             "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n"
             "  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
             "      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n");
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(watching(daemon));
  const std::string deployment = "/apis/apps/v1/namespaces/default/deployments/web";
  // The emulator's deployment controller writes status (and the revision annotation on
  // the object itself: a field kstate does not own), as kube-controller-manager does.
  CHECK(eventually([&] {
    auto reply = emulator.request("GET", deployment);
    auto object = json::parse(reply.body);
    return object.ok() && json::find_path(*object, {"status", "observedGeneration"}) != nullptr;
  }));
  REQUIRE(emulator
              .request("PATCH", deployment + "?fieldManager=team-tool",
                       R"({"metadata":{"annotations":{"team.example.com/owner":"blue-team"}}})",
                       "application/merge-patch+json")
              .status == 200);
  std::this_thread::sleep_for(1500ms);
  std::string metrics = daemon.metrics();
  for (const char* reason : {"fields_taken", "deleted", "labels_removed", "replaced"}) {
    INFO(reason);
    CHECK(metric(metrics, std::string("kstate_drift_corrections_total{reason=\"") + reason + "\"}") == 0);
  }
  // The watch was live all along: a change to a field kstate applies is corrected.
  REQUIRE(emulator
              .request("PATCH", deployment + "?fieldManager=kubectl-scale", R"({"spec":{"replicas":5}})",
                       "application/merge-patch+json")
              .status == 200);
  CHECK(eventually([&] {
    auto object = json::parse(emulator.request("GET", deployment).body);
    const json::Value* replicas = object.ok() ? json::find_path(*object, {"spec", "replicas"}) : nullptr;
    return replicas != nullptr && replicas->IsInt() && replicas->GetInt() == 2;
  }));
  metrics = daemon.metrics();
  CHECK(metric(metrics, R"(kstate_drift_corrections_total{reason="fields_taken"})") == 1);
  // The other manager's annotation stays: kstate wrote only its own fields.
  CHECK(emulator.request("GET", deployment).body.find("blue-team") != std::string::npos);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("a writer that keeps undoing kstate's field is backed off from, named in a metric and logged once") {
  Emulator emulator;
  Daemon daemon(emulator, "1h");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(watching(daemon));

  // The fighter sets red five times a second for 5 s.
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 5s) {
    patch_color(emulator, "app", "red", "fighter");
    std::this_thread::sleep_for(200ms);
  }
  const std::string metrics = daemon.metrics();
  const double corrections = metric(metrics, R"(kstate_drift_corrections_total{reason="fields_taken"})");
  const double fights = metric(metrics, R"(kstate_drift_fights_total{manager="fighter"})");
  // Without back-off kstate would have corrected ~25 times; with 1 s, 2 s, 4 s waits: 3 or 4.
  CHECK(corrections >= 2);
  CHECK(corrections <= 5);
  CHECK(fights >= 2);
  const std::string log = daemon.log_text();
  CHECK(occurrences(log, "kstate.io/ignore-fields") == 1);
  CHECK(log.find("changed again by fighter") != std::string::npos);
  // Once the fighter stops, kstate's next correction holds.
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 10s));
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("without permission to watch, the daemon says so and corrects drift at the resync") {
  Emulator emulator;
  const std::string token = "drift-no-watch-token-0123456789";
  REQUIRE(emulator
              .request("POST", "/emulator/tokens",
                       R"({"token":")" + token + R"(","user":"drift-writer","access":"no-watch"})")
              .status == 200);
  Daemon daemon(emulator, "2s", "retry-interval: 1s\n");
  std::string kubeconfig = read_file(emulator.kubeconfig_path());
  for (auto at = kubeconfig.find(emulator.admin_token()); at != std::string::npos;
       at = kubeconfig.find(emulator.admin_token(), at + token.size())) {
    kubeconfig.replace(at, emulator.admin_token().size(), token);
  }
  const fs::path own_kubeconfig = daemon.work.path() / "kubeconfig";
  write_file(own_kubeconfig, kubeconfig);
  fs::permissions(own_kubeconfig, fs::perms::owner_read | fs::perms::owner_write);
  std::string config = read_file(daemon.config_path);
  config.replace(config.find(emulator.kubeconfig_path().string()), emulator.kubeconfig_path().string().size(),
                 own_kubeconfig.string());
  write_file(daemon.config_path, config);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(daemon.color("app") == "blue");
  CHECK(eventually([&] { return daemon.log_text().find("no permission to watch configmaps") != std::string::npos; }));
  INFO("daemon log:\n" << daemon.log_text());
  CHECK(eventually([&] { return metric(daemon.metrics(), R"(kstate_drift_watches{state="forbidden"})") == 1; }));
  CHECK(daemon.log_text().find("corrected by the periodic resync only") != std::string::npos);

  REQUIRE(patch_color(emulator, "app", "red").status == 200);
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 8s));
  // Said once, although every resync tries the watch again.
  std::this_thread::sleep_for(2500ms);
  CHECK(occurrences(daemon.log_text(), "no permission to watch configmaps") == 1);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

}  // namespace drift_e2e_test
