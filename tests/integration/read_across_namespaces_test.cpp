// How `kstate apply` reads live objects kstate already owns: one LIST per kind across
// namespaces, selected by kstate's ownership labels, instead of one per namespace; and
// how it still finds objects that someone else deleted or stripped of those labels, or
// when listing across namespaces is not allowed.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

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
  Emulator emulator;
  TempDir work{"kstate-read"};

  ProcessResult apply() {
    std::vector<std::string> argv{KSTATE_BINARY,
                                  "apply",
                                  (work.path() / "manifests").string(),
                                  "--kubeconfig",
                                  emulator.kubeconfig_path().string(),
                                  "--cache-dir",
                                  (work.path() / "cache").string()};
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
  CHECK(cluster.queries_of("/api/v1/namespaces/team-c/secrets/token").empty());
  // The foreign ConfigMap was read: it is updated from red to blue, not "created".
  CHECK(first.out.find("-  color: red") != std::string::npos);
  CHECK(occurrences(first.out, "Comment: updated") == 2);  // team-a and its ConfigMap one
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

TEST_CASE("the `default` ServiceAccount declared in a new namespace is read once the namespace exists") {
  // kube-controller-manager creates ServiceAccount `default` (and ConfigMap
  // `kube-root-ca.crt`) in each new namespace, a moment after it is created: declaring
  // `default` to add imagePullSecrets is common. The other objects of a namespace that did
  // not exist are not read, but that one is, once kstate has created the namespace.
  Cluster cluster;
  const auto dir = cluster.work.path() / "manifests";
  write_file(dir / "team-d.yaml",
             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-d\n---\n"
             "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: team-d\n"
             "imagePullSecrets:\n  - name: registry\n---\n"
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-d\ndata:\n  color: blue\n");

  SECTION("taken over (adopt, the default): updated, not created") {
    auto first = cluster.apply();
    CHECK(first.exit_code == 0);
    CHECK(cluster.queries_of("/api/v1/namespaces/team-d/serviceaccounts/default").size() == 1);
    CHECK(cluster.queries_of("/api/v1/namespaces/team-d/configmaps").empty());
    CHECK(cluster.queries_of("/api/v1/namespaces/team-d/configmaps/app").empty());
    CHECK(occurrences(first.out, "Comment: created") == 2);  // the Namespace and the ConfigMap
    CHECK(occurrences(first.out, "Comment: updated") == 1);  // the ServiceAccount
    CHECK(first.out.find("+  - name: registry") != std::string::npos);
    CHECK(cluster.label("/api/v1/namespaces/team-d/serviceaccounts/default", part_of) != "");
  }
  SECTION("with --no-adopt: left to kube-controller-manager, and the state says so") {
    auto first = kstate::testing::run_process({KSTATE_BINARY, "apply", dir.string(), "--no-adopt", "--kubeconfig",
                                               cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                               (cluster.work.path() / "cache").string()});
    INFO(first.out << first.err);
    CHECK(first.exit_code != 0);
    CHECK(first.out.find("ServiceAccount/team-d/default already exists and is not managed by kstate") !=
          std::string::npos);
    CHECK(cluster.label("/api/v1/namespaces/team-d/serviceaccounts/default", part_of) == "");
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-d/configmaps/app").status == 200);

    // Never kstate's, so never pruned: not even the entry recorded before the writes.
    write_file(dir / "team-d.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-d\n");
    auto pruned = kstate::testing::run_process({KSTATE_BINARY, "apply", dir.string(), "--prune", "--no-adopt",
                                                "--kubeconfig", cluster.emulator.kubeconfig_path().string(),
                                                "--cache-dir", (cluster.work.path() / "cache").string()});
    INFO(pruned.out << pruned.err);
    CHECK(pruned.exit_code == 0);
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-d/configmaps/app").status == 404);
    CHECK(cluster.emulator.request("GET", "/api/v1/namespaces/team-d/serviceaccounts/default").status == 200);
  }
}
