// How `kstate apply` reads live objects kstate already owns: one LIST per kind across
// namespaces, selected by kstate's ownership labels, instead of one per namespace; and
// how it still finds objects that someone else deleted or stripped of those labels, or
// when listing across namespaces is not allowed.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace read_across_namespaces_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

const std::vector<std::string> namespaces = {"team-a", "team-b", "team-c"};

// Three namespaces, each with two ConfigMaps and a Secret.
void write_manifests(const std::filesystem::path& dir) {
  for (const auto& ns : namespaces) {
    write_file(dir / (ns + ".yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns +
                                         "\n---\n"
                                         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: " +
                                         ns +
                                         "\ndata:\n  color: blue\n---\n"
                                         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n  namespace: " +
                                         ns +
                                         "\ndata:\n  size: large\n---\n"
                                         "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: " +
                                         ns + "\nstringData:\n  token: not-a-real-token\n");
  }
}

struct Cluster {
  Cluster() = default;
  explicit Cluster(kstate::testing::EmulatorOptions options) : emulator(std::move(options)) {}
  Emulator emulator;
  TempDir work{"kstate-read"};

  ProcessResult apply() {
    std::vector<std::string> argv{KSTATE_BINARY,
                                  "apply",
                                  (work.path() / "manifests").string(),
                                  "--applyset-name",
                                  "kstate",
                                  "--kubeconfig",
                                  emulator.kubeconfig_path().string(),
                                  "--cache-dir",
                                  (work.path() / "cache").string(),
                                  "--state-output",
                                  "full"};  // each state's Comment is counted
    auto result = kstate::testing::run_process(argv);
    UNSCOPED_INFO("kstate apply exit " << result.exit_code << "\nstdout:\n"
                                       << result.out << "\nstderr:\n"
                                       << result.err);
    return result;
  }
  int writes() {
    return emulator.count_requests("POST", "/api") + emulator.count_requests("PATCH", "/api") +
           emulator.count_requests("PUT", "/api") + emulator.count_requests("DELETE", "/api");
  }
  // GETs of exactly this path (a LIST across namespaces has no namespace in it).
  std::vector<std::string> queries_of(const std::string& path) {
    auto log = json::parse(emulator.request_log());
    REQUIRE(log.ok());
    std::vector<std::string> queries;
    for (const auto& entry : (*log)["requests"].GetArray()) {
      if (json::string_or(json::find(entry, "method"), "") == "GET" &&
          json::string_or(json::find(entry, "path"), "") == path) {
        queries.emplace_back(json::string_or(json::find(entry, "query"), ""));
      }
    }
    return queries;
  }
  int lists_per_namespace(const std::string& plural) {
    int count = 0;
    for (const auto& ns : namespaces) {
      count += static_cast<int>(queries_of("/api/v1/namespaces/" + ns + "/" + plural).size());
    }
    return count;
  }
  std::string label(const std::string& path, const std::string& key) {
    auto reply = emulator.request("GET", path);
    REQUIRE(reply.status == 200);
    auto object = json::parse(reply.body);
    REQUIRE(object.ok());
    const json::Value* labels = json::find_path(*object, {"metadata", "labels"});
    const json::Value* value = labels == nullptr ? nullptr : json::find(*labels, key);
    return value != nullptr && value->IsString() ? value->GetString() : "";
  }
};

constexpr const char* part_of = "applyset.kubernetes.io/part-of";

int occurrences(const std::string& text, const std::string& what) {
  int count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("a re-apply reads each kind kstate owns once across namespaces, selected by its labels") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  // team-a exists already, with a ConfigMap someone else made.
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces",
                       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}})")
              .status == 201);
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces/team-a/configmaps",
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"},"data":{"color":"red"}})")
              .status == 201);

  // First apply: nothing is recorded yet, so the namespace that exists is read on its
  // own (objects that exist without kstate's labels must be seen); the two the read of
  // the declared Namespaces finds absent hold nothing, and are not read.
  auto first = cluster.apply();
  REQUIRE(first.exit_code == 0);
  CHECK(cluster.queries_of("/api/v1/configmaps").empty());
  CHECK(cluster.queries_of("/api/v1/namespaces/team-a/configmaps").size() == 1);
  CHECK(cluster.lists_per_namespace("configmaps") == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-a/secrets/token").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-b/secrets/token").empty());
  UNSCOPED_INFO(cluster.emulator.request_log());
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/secrets/token").empty());
  // The foreign ConfigMap was read: it is adopted, red to blue, not "created".
  CHECK(first.out.find("-  color: red") != std::string::npos);
  CHECK(occurrences(first.out, "Comment: adopted") == 2);  // team-a and its ConfigMap one
  CHECK(occurrences(first.out, "Comment: created") == 10);

  cluster.emulator.reset_request_log();
  REQUIRE(cluster.apply().exit_code == 0);
  CHECK(cluster.writes() == 0);
  const auto config_maps = cluster.queries_of("/api/v1/configmaps");
  REQUIRE(config_maps.size() == 1);
  CHECK(config_maps[0].find("labelSelector=") != std::string::npos);
  CHECK(config_maps[0].find("part-of") != std::string::npos);
  CHECK(cluster.queries_of("/api/v1/secrets").size() == 1);
  CHECK(cluster.lists_per_namespace("configmaps") == 0);
  CHECK(cluster.lists_per_namespace("secrets") == 0);
}

TEST_CASE("objects kstate owns that someone deleted or stripped of its labels are still found and put right") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  REQUIRE(cluster.apply().exit_code == 0);
  const std::string stripped = "/api/v1/namespaces/team-a/configmaps/one";
  REQUIRE_FALSE(cluster.label(stripped, part_of).empty());
  auto patched =
      cluster.emulator.request("PATCH", stripped, R"({"metadata":{"labels":null}})", "application/merge-patch+json");
  REQUIRE(patched.status == 200);
  REQUIRE(cluster.label(stripped, part_of).empty());
  REQUIRE(cluster.emulator.request("DELETE", "/api/v1/namespaces/team-b/configmaps/two").status == 200);

  cluster.emulator.reset_request_log();
  auto again = cluster.apply();
  CHECK(again.exit_code == 0);
  // The LIST across namespaces lacked them: their namespaces were read on their own,
  // so the stripped object was updated (not created twice) and the deleted one created.
  CHECK(cluster.queries_of("/api/v1/configmaps").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-a/configmaps").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-b/configmaps").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/configmaps").empty());
  CHECK(cluster.emulator.count_requests("POST", "/api/v1/namespaces/team-a/configmaps") == 0);
  CHECK_FALSE(cluster.label(stripped, part_of).empty());
  CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-b/configmaps/two").status == 200);
  CHECK(again.out.find("Failed: 0") != std::string::npos);
}

TEST_CASE("when listing across namespaces is refused, each namespace is read on its own") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  REQUIRE(cluster.apply().exit_code == 0);
  // As a user allowed to list ConfigMaps only namespace by namespace.
  cluster.emulator.set_faults(
      R"({"failFraction":1.0,"failCode":403,"method":"GET","pathPrefix":"/api/v1/configmaps"})");

  cluster.emulator.reset_request_log();
  auto again = cluster.apply();
  CHECK(again.exit_code == 0);
  CHECK(cluster.writes() == 0);
  CHECK(cluster.lists_per_namespace("configmaps") == 3);
  CHECK(cluster.lists_per_namespace("secrets") == 0);
}

TEST_CASE("a declared namespace whose existence cannot be read has its objects read as before") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  // As a user who may not get Namespace team-b: kstate cannot tell whether it exists.
  cluster.emulator.set_faults(
      R"({"failFraction":1.0,"failCode":403,"method":"GET","path":"/api/v1/namespaces/team-b"})");
  auto first = cluster.apply();
  CHECK(first.exit_code == 0);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-b").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-b/configmaps").size() == 1);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-b/secrets/token").size() == 1);
  // The two it could read as absent: nothing read in them.
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/configmaps").empty());
  UNSCOPED_INFO(cluster.emulator.request_log());
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/secrets/token").empty());
  CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-c/configmaps/two").status == 200);
}

TEST_CASE("with the LIST of Namespaces refused, whether a declared namespace exists is read by name") {
  // A namespace missing from the LIST of Namespaces is never taken as absent: a proxy in
  // front of the API server (capsule-proxy and the like) may refuse that LIST, as here,
  // or answer it with some of them only (which the emulator cannot do; the engine trusts
  // that LIST only for the namespaces it shows, and asks for the others by name).
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces",
                       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}})")
              .status == 201);
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces/team-a/configmaps",
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"},"data":{"color":"red"}})")
              .status == 201);
  cluster.emulator.set_faults(R"({"failFraction":1.0,"failCode":403,"method":"GET","path":"/api/v1/namespaces"})");
  auto first = cluster.apply();
  CHECK(first.exit_code == 0);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-a/configmaps").size() == 1);
  CHECK(first.out.find("-  color: red") != std::string::npos);
  CHECK(cluster.lists_per_namespace("configmaps") == 1);
}

// kube-controller-manager makes ServiceAccount `default` and ConfigMap `kube-root-ca.crt`
// in each new namespace, a moment after it is created; declaring `default` (e.g. to add
// imagePullSecrets) is common. The other objects of a namespace that did not exist are
// not read, but those two are, once kstate has created the namespace; and whichever of
// kstate and the controller makes it first, the outcome is a clean one.
const char* const team_d_namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-d\n";
std::string default_account(const std::string& annotations = "") {
  return std::string("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: team-d\n") +
         (annotations.empty() ? "" : "  annotations: {" + annotations + "}\n") +
         "imagePullSecrets:\n  - name: registry\n";
}
const char* const team_d_config_map =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-d\ndata:\n  color: blue\n";
const std::string default_account_path = "/api/v1/namespaces/team-d/serviceaccounts/default";

ProcessResult run_kstate(Cluster& cluster, const std::string& command, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{KSTATE_BINARY, command, (cluster.work.path() / "manifests").string(), "--applyset-name",
                                "kstate"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--kubeconfig", cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                           (cluster.work.path() / "cache").string(), "--state-output", "full"});
  auto result = kstate::testing::run_process(argv);
  UNSCOPED_INFO("kstate " << command << " exit " << result.exit_code << "\nstdout:\n"
                          << result.out << "\nstderr:\n"
                          << result.err);
  return result;
}

std::string uid_of(Cluster& cluster, const std::string& path) {
  auto reply = cluster.emulator.request("GET", path);
  REQUIRE(reply.status == 200);
  auto object = json::parse(reply.body);
  REQUIRE(object.ok());
  return std::string(json::string_or(json::find_path(*object, {"metadata", "uid"}), ""));
}

TEST_CASE("the `default` ServiceAccount declared in a new namespace, made by kube-controller-manager first") {
  Cluster cluster;  // the emulator's controllers make it as the namespace is created
  const auto dir = cluster.work.path() / "manifests";
  write_file(dir / "team-d.yaml",
             std::string(team_d_namespace) + "---\n" + default_account() + "---\n" + team_d_config_map);

  SECTION("taken over (adopt, the default): read once the namespace exists, adopted, not created") {
    auto first = cluster.apply();
    CHECK(first.exit_code == 0);
    CHECK(cluster.queries_of(default_account_path).size() == 1);
    CHECK(cluster.queries_of("/api/v1/namespaces/team-d/configmaps").empty());
    CHECK(cluster.queries_of("/api/v1/namespaces/team-d/configmaps/app").empty());
    CHECK(occurrences(first.out, "Comment: created") == 2);  // the Namespace and the ConfigMap
    CHECK(occurrences(first.out, "Comment: adopted") == 1);  // the ServiceAccount (the controller made it)
    CHECK(first.out.find("+  - name: registry") != std::string::npos);
    CHECK(cluster.label(default_account_path, part_of) != "");
  }
  SECTION("with --no-adopt: left to kube-controller-manager, the state says so, and prune never deletes it") {
    auto first = run_kstate(cluster, "apply", {"--no-adopt"});
    CHECK(first.exit_code != 0);
    CHECK(first.out.find("ServiceAccount/team-d/default already exists and is not managed by kstate") !=
          std::string::npos);
    CHECK(cluster.label(default_account_path, part_of) == "");
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-d/configmaps/app").status == 200);
    const std::string account_uid = uid_of(cluster, default_account_path);

    // Not even the entry recorded before the writes makes it kstate's.
    write_file(dir / "team-d.yaml", team_d_namespace);
    cluster.emulator.reset_request_log();
    auto pruned = run_kstate(cluster, "apply", {"--prune", "--no-adopt"});
    CHECK(pruned.exit_code == 0);
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-d/configmaps/app").status == 404);
    CHECK(cluster.emulator.count_requests("DELETE", default_account_path) == 0);
    CHECK(uid_of(cluster, default_account_path) == account_uid);
  }
}

TEST_CASE(
    "the `default` ServiceAccount declared in a new namespace, made by kube-controller-manager after kstate "
    "read it") {
  // As on a real cluster, where the controller takes 5-100 ms after the namespace: here
  // 2 s, so that kstate reads first however slow this machine is.
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--namespace-controllers-delay", "2"};
  Cluster cluster(options);
  const auto dir = cluster.work.path() / "manifests";

  SECTION("object_present: kstate makes it, and the controller then leaves it be") {
    write_file(dir / "team-d.yaml", std::string(team_d_namespace) + "---\n" + default_account());
    auto first = cluster.apply();
    CHECK(first.exit_code == 0);
    CHECK(occurrences(first.out, "Comment: created") == 2);
    const std::string uid = uid_of(cluster, default_account_path);
    // The controllers have run once the ConfigMap is there.
    const std::string bundle = "/api/v1/namespaces/team-d/configmaps/kube-root-ca.crt";
    for (int i = 0; i < 100 && cluster.emulator.request("GET", bundle).status != 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(cluster.emulator.request("GET", bundle).status == 200);
    CHECK(uid_of(cluster, default_account_path) == uid);
    CHECK(cluster.label(default_account_path, part_of) != "");
  }
  SECTION("create-only, the controller making it while kstate's create is on its way: kept as it is") {
    write_file(dir / "team-d.yaml",
               std::string(team_d_namespace) + "---\n" + default_account("kstate.io/strategy: create-only"));
    // kstate's create waits 3 s at the server, in which the controller makes it.
    cluster.emulator.set_faults(
        R"({"latencyMs":3000,"method":"POST","path":"/api/v1/namespaces/team-d/serviceaccounts"})");
    auto first = cluster.apply();
    CHECK(first.exit_code == 0);
    CHECK(cluster.emulator.count_requests("POST", "/api/v1/namespaces/team-d/serviceaccounts") == 1);
    CHECK(first.out.find("already exists (create-only: never updated)") != std::string::npos);
    CHECK(first.out.find("Failed: 0") != std::string::npos);
    CHECK(cluster.label(default_account_path, part_of) == "");
  }
  SECTION("object_updated, in three new namespaces: waits for the controller's objects, then updates them") {
    // (with several Namespaces declared, whether each exists comes from a LIST and GETs
    // that may run after kstate created it: the wait does not depend on that read)
    std::string manifests;
    for (const std::string ns : {"team-d", "team-e", "team-f"}) {
      manifests += "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns +
                   "\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: " + ns +
                   "\n  annotations: {kstate.io/state: updated}\nimagePullSecrets:\n  - name: registry\n---\n";
    }
    write_file(dir / "teams.yaml", manifests);
    auto first = cluster.apply();
    CHECK(first.exit_code == 0);
    CHECK(occurrences(first.out, "Comment: updated") == 3);
    for (const std::string ns : {"team-d", "team-e", "team-f"}) {
      auto account = cluster.emulator.request("GET", "/api/v1/namespaces/" + ns + "/serviceaccounts/default");
      REQUIRE(account.status == 200);
      CHECK(account.body.find("registry") != std::string::npos);
    }

    // And test mode, on a namespace that does not exist: a pending update, not a failure.
    write_file(dir / "teams.yaml", std::string("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-g\n") +
                                       "---\n" +
                                       "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n"
                                       "  namespace: team-g\n  annotations: {kstate.io/state: updated}\n"
                                       "imagePullSecrets:\n  - name: registry\n");
    auto tested = run_kstate(cluster, "test");
    CHECK(tested.exit_code == 1);  // changes pending
    CHECK(tested.out.find("would be updated once kube-controller-manager makes it in the new namespace") !=
          std::string::npos);
  }
}

TEST_CASE("a declared kube-root-ca.crt's data is put back by kube-controller-manager: the report says so") {
  Cluster cluster;
  const auto dir = cluster.work.path() / "manifests";
  write_file(dir / "bundle.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-root-ca.crt\n  namespace: default\n"
             "data:\n  ca.crt: mine\n");
  write_file(dir / "labels.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-root-ca.crt\n  namespace: kube-public\n"
             "  labels: {team: platform}\n");
  auto first = cluster.apply();
  CHECK(first.exit_code == 0);
  CHECK(first.out.find("Note: ConfigMap default/kube-root-ca.crt (") != std::string::npos);
  CHECK(first.out.find("bundle.yaml:1:1): kube-controller-manager's root-ca-cert-publisher puts its data back") !=
        std::string::npos);
  CHECK(first.out.find("Note: ConfigMap kube-public/kube-root-ca.crt") == std::string::npos);  // labels only
  auto tested = run_kstate(cluster, "test");
  CHECK(tested.out.find("Note: ConfigMap default/kube-root-ca.crt (") != std::string::npos);
}

TEST_CASE("a first apply asks for each new Namespace by name without waiting for the Namespaces' LIST") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  // The LIST of the declared Namespaces (their own pair's read) is held at the server.
  // Missing from it would not prove a Namespace absent anyway (a proxy may filter it),
  // so the GET of each new one, which decides whether its objects need reading, goes
  // out meanwhile: one round trip before the first write instead of two.
  cluster.emulator.set_faults(R"({"latencyMs":600000,"method":"GET","path":"/api/v1/namespaces"})");
  kstate::testing::BackgroundProcess run({KSTATE_BINARY, "apply", (cluster.work.path() / "manifests").string(),
                                          "--applyset-name", "kstate", "--kubeconfig",
                                          cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                          (cluster.work.path() / "cache").string()});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto asked_for_each = [&cluster] {
    for (const auto& ns : namespaces) {
      if (cluster.queries_of("/api/v1/namespaces/" + ns).empty()) {
        return false;
      }
    }
    return true;
  };
  while ((cluster.emulator.count_delayed("GET", "/api/v1/namespaces") == 0 || !asked_for_each()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(cluster.emulator.count_delayed("GET", "/api/v1/namespaces") == 1);
  for (const auto& ns : namespaces) {
    INFO(ns);
    CHECK(cluster.queries_of("/api/v1/namespaces/" + ns).size() == 1);
    CHECK(cluster.emulator.count_requests("PATCH", "/api/v1/namespaces/" + ns) == 0);
  }
  cluster.emulator.clear_faults();
  cluster.emulator.release_delayed();
  int exit_code = -1;
  const auto exit_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < exit_deadline) {
    if (!run.running()) {
      exit_code = run.stop(SIGTERM);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(exit_code == 0);
  for (const auto& ns : namespaces) {
    INFO(ns);
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/" + ns + "/secrets/token").status == 200);
  }
  CHECK(cluster.lists_per_namespace("configmaps") == 0);  // found absent: nothing in them to read

  // Recorded now: a re-apply finds them in the LIST and asks for none by name.
  cluster.emulator.reset_request_log();
  REQUIRE(cluster.apply().exit_code == 0);
  CHECK(cluster.queries_of("/api/v1/namespaces").size() == 1);
  for (const auto& ns : namespaces) {
    CHECK(cluster.queries_of("/api/v1/namespaces/" + ns).empty());
  }
}

TEST_CASE("a new Namespace is not created while kstate asks whether it exists") {
  Cluster cluster;
  write_manifests(cluster.work.path() / "manifests");
  // The GET that decides whether team-c's objects need reading is held at the server.
  // Creating team-c meanwhile would let that GET find this run's own Namespace, and its
  // (empty) pairs would be read for nothing.
  cluster.emulator.set_faults(R"({"latencyMs":600000,"method":"GET","path":"/api/v1/namespaces/team-c"})");
  kstate::testing::BackgroundProcess run({KSTATE_BINARY, "apply", (cluster.work.path() / "manifests").string(),
                                          "--applyset-name", "kstate", "--kubeconfig",
                                          cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                          (cluster.work.path() / "cache").string()});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (cluster.emulator.count_delayed("GET", "/api/v1/namespaces/team-c") == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(cluster.emulator.count_delayed("GET", "/api/v1/namespaces/team-c") == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(cluster.emulator.count_requests("PATCH", "/api/v1/namespaces/team-c") == 0);
  cluster.emulator.clear_faults();
  cluster.emulator.release_delayed();
  int exit_code = -1;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!run.running()) {
      exit_code = run.stop(SIGTERM);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(exit_code == 0);
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/configmaps").empty());
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/secrets/token").empty());
  CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-c/secrets/token").status == 200);
}

}  // namespace read_across_namespaces_test
