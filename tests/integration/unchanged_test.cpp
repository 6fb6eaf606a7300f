// Nothing changed, nothing written: a re-apply, `kstate test` and the daemon's resync of
// a realistic corpus (tests/integration/data/unchanged/: quantities in every spelling,
// int-or-string ports, Services the server defaults, Secrets with stringData, generated
// manifests' leftovers; plus kube-state-metrics' real manifests) send no write at all,
// whichever read found the live objects (a GET, a LIST of one namespace, a LIST across
// namespaces), while "controllers" keep changing status and annotations. The writes are
// counted by the emulator, by verb.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <map>
#include <regex>

#include "core/json.hpp"
#include "tests/daemon/daemon_process.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/recordings.hpp"
#include "tests/support/temp_dir.hpp"

namespace unchanged_test {

namespace fs = std::filesystem;
namespace json = kstate::json;
using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using kstate::testing::daemon_process::Daemon;
using kstate::testing::daemon_process::eventually;
using namespace std::chrono_literals;

namespace {

const fs::path corpus = fs::path(KSTATE_SOURCE_DIR) / "tests/integration/data/unchanged";
const fs::path kube_state_metrics = fs::path(kstate::testing::shared_testdata()) / "real/kube-state-metrics-standard";

// The corpus and kube-state-metrics' objects (not its kustomization.yaml) in one folder.
void copy_corpus(const fs::path& into) {
  fs::create_directories(into / "kube-state-metrics");
  for (const auto& entry : fs::directory_iterator(corpus)) {
    fs::copy_file(entry.path(), into / entry.path().filename());
  }
  for (const auto& entry : fs::directory_iterator(kube_state_metrics)) {
    if (entry.path().filename() != "kustomization.yaml") {
      fs::copy_file(entry.path(), into / "kube-state-metrics" / entry.path().filename());
    }
  }
  for (const auto& entry : fs::recursive_directory_iterator(into)) {
    fs::permissions(entry.path(), fs::perms(entry.is_directory() ? 0755 : 0644));
  }
}

// Requests of the emulator's log by method, e.g. {"GET": 12, "PATCH": 1}.
std::map<std::string, int> requests_by_method(const Emulator& emulator) {
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  std::map<std::string, int> counts;
  for (const auto& request : json::find(*log, "requests")->GetArray()) {
    counts[std::string(json::string_or(json::find(request, "method"), "?"))]++;
  }
  return counts;
}

// Every request that is not a read, as "METHOD path" lines (for the failure message).
std::string writes_of(const Emulator& emulator) {
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  std::string writes;
  for (const auto& request : json::find(*log, "requests")->GetArray()) {
    std::string method(json::string_or(json::find(request, "method"), "?"));
    if (method != "GET") {
      writes += method + " " + std::string(json::string_or(json::find(request, "path"), "")) + "\n";
    }
  }
  return writes;
}

int write_count(const Emulator& emulator) {
  int writes = 0;
  for (const auto& [method, count] : requests_by_method(emulator)) {
    writes += method == "GET" ? 0 : count;
  }
  return writes;
}

ProcessResult kstate(const Emulator& emulator, const TempDir& work, std::vector<std::string> args) {
  std::vector<std::string> argv{KSTATE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  if (args.front() == "apply" || args.front() == "test") {
    argv.insert(argv.end(), {"--applyset-name", "kstate"});  // (a one-shot run records into a named set only)
  }
  argv.insert(argv.end(),
              {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / "cache").string()});
  auto result = kstate::testing::run_process(argv);
  UNSCOPED_INFO("kstate " << args.front() << " exit " << result.exit_code << "\nstdout:\n"
                          << result.out << "\nstderr:\n"
                          << result.err);
  return result;
}

// What kube-controller-manager and other controllers do to the objects between runs:
// status, an annotation of their own, a label nobody declared.
void act_as_controllers(Emulator& emulator) {
  for (const std::string ns : {"unchanged-a", "unchanged-b", "unchanged-c"}) {
    const std::string deployment = "/apis/apps/v1/namespaces/" + ns + "/deployments/sized";
    auto annotated = emulator.request("PATCH", deployment,
                                      R"({"metadata":{"annotations":{"deployment.kubernetes.io/revision":"1"}}})",
                                      "application/merge-patch+json");
    REQUIRE(annotated.status == 200);
    auto status = emulator.request("PATCH", deployment + "/status",
                                   R"({"status":{"observedGeneration":1,"replicas":1,"unavailableReplicas":1}})",
                                   "application/merge-patch+json");
    REQUIRE(status.status == 200);
  }
  auto labelled = emulator.request("PATCH", "/api/v1/namespaces/unchanged-a/secrets/credentials",
                                   R"({"metadata":{"labels":{"rotated-by":"vault"}}})", "application/merge-patch+json");
  REQUIRE(labelled.status == 200);
}

// Quantities as kube-apiserver stores them (recordings 31-33): cpu 0.5 -> "500m",
// 1024Mi -> "1Gi", "1000m" -> "1", 0.5Gi -> "512Mi". Written here as the server would
// have stored them, whether or not the emulator canonicalises them itself.
void store_quantities_as_the_server_does(Emulator& emulator) {
  for (const std::string ns : {"unchanged-a", "unchanged-b", "unchanged-c"}) {
    const std::string deployments = "/apis/apps/v1/namespaces/" + ns + "/deployments/";
    auto sized = emulator.request("PATCH", deployments + "sized",
                                  R"({"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{)"
                                  R"("requests":{"cpu":"500m","memory":"1Gi"},"limits":{"cpu":"1"}}}]}}}})",
                                  "application/strategic-merge-patch+json");
    REQUIRE(sized.status == 200);
    auto generated = emulator.request("PATCH", deployments + "generated",
                                      R"({"spec":{"template":{"spec":{"volumes":[{"name":"scratch",)"
                                      R"("emptyDir":{"sizeLimit":"512Mi"}}]}}}})",
                                      "application/strategic-merge-patch+json");
    REQUIRE(generated.status == 200);
  }
}

bool has_metric(Daemon& daemon, const std::string& line) {
  return daemon.metrics().find(line) != std::string::npos;
}

}  // namespace

TEST_CASE("a re-apply and test mode of an unchanged corpus send no write, whatever read the objects") {
  Emulator emulator;
  TempDir work{"kstate-unchanged"};
  const fs::path manifests = work.path() / "manifests";
  copy_corpus(manifests);

  auto first = kstate(emulator, work, {"apply", manifests.string()});
  REQUIRE(first.exit_code == 0);
  store_quantities_as_the_server_does(emulator);
  act_as_controllers(emulator);

  // The second apply reads each kind through the inventory (LISTs across namespaces for
  // the kinds in several, a LIST or a GET for the others); the third the same way.
  for (int run = 2; run <= 3; ++run) {
    INFO("apply number " << run);
    emulator.reset_request_log();
    auto again = kstate(emulator, work, {"apply", manifests.string()});
    CHECK(again.exit_code == 0);
    CHECK(again.out.find("(changed=0,") != std::string::npos);
    INFO("writes:\n" << writes_of(emulator));
    CHECK(write_count(emulator) == 0);
    CHECK(requests_by_method(emulator)["GET"] > 0);
  }

  emulator.reset_request_log();
  auto test = kstate(emulator, work, {"test", manifests.string()});
  CHECK(test.exit_code == 0);
  CHECK(test.out.find("Pending: 0") != std::string::npos);
  CHECK(test.out.find("--- live/") == std::string::npos);
  CHECK(write_count(emulator) == 0);  // not even a dry run

  // One object changed out of band: test mode shows exactly that one.
  auto edited = emulator.request("PATCH", "/apis/apps/v1/namespaces/unchanged-b/deployments/sized",
                                 R"({"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{)"
                                 R"("requests":{"cpu":"250m"}}}]}}}})",
                                 "application/strategic-merge-patch+json");
  REQUIRE(edited.status == 200);
  auto drifted = kstate(emulator, work, {"test", manifests.string()});
  CHECK(drifted.exit_code == 1);
  CHECK(drifted.out.find("Pending: 1") != std::string::npos);
  CHECK(drifted.out.find("--- live/apps.v1.Deployment.unchanged-b.sized") != std::string::npos);
  CHECK(drifted.out.find("-              cpu: 250m") != std::string::npos);
  CHECK(drifted.out.find("+              cpu: ") != std::string::npos);  // 500m from kube-apiserver
  // Only that one: one diff in the whole report.
  const auto first_diff = drifted.out.find("--- live/");
  CHECK(drifted.out.find("--- live/", first_diff + 1) == std::string::npos);

  // apply puts it back with one write, then nothing again.
  emulator.reset_request_log();
  auto fixed = kstate(emulator, work, {"apply", manifests.string()});
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.out.find("(changed=1,") != std::string::npos);
  CHECK(requests_by_method(emulator)["PATCH"] == 1);
  CHECK(write_count(emulator) == 1);
  emulator.reset_request_log();
  CHECK(kstate(emulator, work, {"apply", manifests.string()}).exit_code == 0);
  CHECK(write_count(emulator) == 0);
}

TEST_CASE("the daemon's resync of an unchanged corpus sends no write and reports every state unchanged") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  copy_corpus(daemon.manifests);
  daemon.start();
  auto ready = daemon.wait_notification(" states: ", 60s);  // the first reconcile's STATUS, after READY=1
  REQUIRE(ready);
  INFO(*ready);
  REQUIRE(ready->find(" 0 failed") != std::string::npos);
  store_quantities_as_the_server_does(emulator);
  act_as_controllers(emulator);
  // Resyncs after the controllers' changes, each alone in the log.
  REQUIRE(eventually([&] { return has_metric(daemon, "kstate_reconciles_total{kind=\"full\",result=\"success\"} 2"); },
                     20s));
  for (int resync = 3; resync <= 4; ++resync) {
    emulator.reset_request_log();
    const std::string done = "kstate_reconciles_total{kind=\"full\",result=\"success\"} " + std::to_string(resync);
    REQUIRE(eventually([&] { return has_metric(daemon, done); }, 20s));
    INFO("resync " << resync << ", writes:\n" << writes_of(emulator));
    CHECK(write_count(emulator) == 0);
  }
  // Neither a summary with updates ("3 updated") nor an object's line ("updated Kind/...").
  const std::string log = daemon.log_text();
  CHECK_FALSE(std::regex_search(log, std::regex("[1-9][0-9]* updated|updated [A-Za-z]+/")));
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

}  // namespace unchanged_test
