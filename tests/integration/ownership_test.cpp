// What "never delete what kstate does not provably own" (issue 35, docs/ownership.md)
// means for `kstate apply`, against kstate-emulator: a CRD or Namespace is pruned only
// when the server, as it is now, lists nothing kstate does not manage in it (kinds
// cached discovery does not know included; a 403 or a group answering 503 keeps it);
// a one-shot run records into, and prunes from, only a set it is told to use, and
// never one a daemon reconciles; a cluster-scoped object's stray namespace is dropped
// before IDs and duplicates are computed.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "core/json.hpp"
#include "states/inventory.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace ownership_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace fs = std::filesystem;

namespace {

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-ownership"};
  fs::path dir = work.path() / "manifests";

  // `kstate <command> <dir> <extra...>` with this cluster's kubeconfig and `cache`.
  ProcessResult run(const std::string& command, std::vector<std::string> extra = {}, const std::string& cache = "cache",
                    const fs::path* folder = nullptr) {
    std::vector<std::string> argv{KSTATE_BINARY, command, (folder != nullptr ? *folder : dir).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(),
                {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / cache).string()});
    if (command == "apply" || command == "test") {
      argv.insert(argv.end(), {"--state-output", "full"});  // (the comments say whom an object was adopted from)
    }
    auto result = kstate::testing::run_process(argv);
    UNSCOPED_INFO("kstate " << command << " exit " << result.exit_code << "\nstdout:\n"
                            << result.out << "\nstderr:\n"
                            << result.err);
    return result;
  }
  int status(const std::string& path) { return emulator.request("GET", path).status; }
  bool exists(const std::string& path) {
    auto reply = emulator.request("GET", path);
    if (reply.status != 200) {
      return false;
    }
    auto object = json::parse(reply.body);
    return object.ok() && json::find_path(*object, {"metadata", "deletionTimestamp"}) == nullptr;
  }
  void create(const std::string& collection, const std::string& body) {
    auto reply = emulator.request("POST", collection, body);
    INFO(reply.body);
    REQUIRE(reply.status == 201);
  }
  void write(const std::string& name, const std::string& text) { write_file(dir / name, text); }
  void erase(const std::string& name) { REQUIRE(fs::remove(dir / name)); }
  std::string label(const std::string& path, const std::string& key) {
    auto object = json::parse(emulator.request("GET", path).body);
    REQUIRE(object.ok());
    return std::string(json::string_or(json::find_path(*object, {"metadata", "labels", key}), ""));
  }
};

std::string config_map(const std::string& ns, const std::string& name) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {key: v}\n";
}

std::string crd_json(const std::string& plural, const std::string& group, const std::string& kind) {
  return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" + plural +
         "." + group + R"("},"spec":{"group":")" + group + R"(","scope":"Namespaced","names":{"plural":")" + plural +
         R"(","kind":")" + kind +
         R"("},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":)"
         R"({"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})";
}

const char* const widget_crd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
)";

const std::string set = "--applyset-name";

}  // namespace

TEST_CASE("a CRD or Namespace holding objects of kinds cached discovery does not know is not pruned") {
  Cluster cluster;
  // Discovery cached before any of this existed (another run's, within its 6 h TTL).
  REQUIRE(kstate::testing::run_process({KSTATE_BINARY, "discover", "--kubeconfig",
                                        cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                        (cluster.work.path() / "old-cache").string()})
              .exit_code == 0);
  cluster.write("00-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
  cluster.write("01-crd.yaml", widget_crd);
  cluster.write("10-app.yaml", config_map("team", "app"));
  cluster.write("30-keep.yaml", config_map("default", "keep"));
  REQUIRE(cluster.run("apply", {"--prune", set, "kstate"}).exit_code == 0);

  // A user's custom resource of kstate's CRD, and someone else's CRD (a kind kstate
  // never looked up) with an object in kstate's Namespace.
  cluster.create("/apis/example.com/v1/namespaces/default/widgets",
                 R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"users-data"}})");
  cluster.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                 crd_json("gadgets", "other.example.org", "Gadget"));
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       cluster.status("/apis/other.example.org/v1/gadgets") != 200 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  cluster.create("/apis/other.example.org/v1/namespaces/team/gadgets",
                 R"({"apiVersion":"other.example.org/v1","kind":"Gadget","metadata":{"name":"g1"}})");

  for (const char* file : {"00-namespace.yaml", "01-crd.yaml", "10-app.yaml"}) {
    cluster.erase(file);
  }
  // The prune run reads the old cache: it knows neither Widgets nor Gadgets.
  auto held = cluster.run("apply", {"--prune", set, "kstate"}, "old-cache");
  CHECK(held.exit_code == 0);
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/team/configmaps/app"));  // kstate's own member went
  CHECK(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  CHECK(cluster.exists("/apis/example.com/v1/namespaces/default/widgets/users-data"));
  CHECK(cluster.exists("/api/v1/namespaces/team"));
  CHECK(cluster.exists("/apis/other.example.org/v1/namespaces/team/gadgets/g1"));
  CHECK(held.out.find("CustomResourceDefinition/widgets.example.com not pruned: holds objects kstate does not manage "
                      "(Widget/default/users-data, which kstate does not manage)") != std::string::npos);
  CHECK(held.out.find("Namespace/team not pruned: holds objects kstate does not manage (Gadget/team/g1, which kstate "
                      "does not manage)") != std::string::npos);

  // Once their owners removed them, both go.
  REQUIRE(cluster.emulator.request("DELETE", "/apis/example.com/v1/namespaces/default/widgets/users-data").status ==
          200);
  REQUIRE(cluster.emulator.request("DELETE", "/apis/other.example.org/v1/namespaces/team/gadgets/g1").status == 200);
  CHECK(cluster.run("apply", {"--prune", set, "kstate"}, "old-cache").exit_code == 0);
  CHECK_FALSE(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/team"));
}

TEST_CASE("a Namespace or CRD whose contents cannot all be listed (403, a group answering 503) is kept, saying why") {
  Cluster cluster;
  cluster.write("00-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
  cluster.write("01-crd.yaml", widget_crd);
  cluster.write("30-keep.yaml", config_map("default", "keep"));
  REQUIRE(cluster.run("apply", {"--prune", set, "kstate"}).exit_code == 0);
  cluster.erase("00-namespace.yaml");
  cluster.erase("01-crd.yaml");

  SECTION("403 on one kind of the Namespace") {
    cluster.emulator.set_faults(
        R"({"failFraction":1,"failCode":403,"method":"GET","path":"/api/v1/namespaces/team/secrets"})");
    auto held = cluster.run("apply", {"--prune", set, "kstate"});
    cluster.emulator.clear_faults();
    CHECK(held.exit_code == 0);
    CHECK(cluster.exists("/api/v1/namespaces/team"));
    CHECK(held.out.find("Namespace/team not pruned: its contents could not all be listed (its secrets could not be "
                        "listed: ") != std::string::npos);
    CHECK_FALSE(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  }
  SECTION("503 from the group of a custom resource") {
    cluster.emulator.set_faults(
        R"({"failFraction":1,"failCode":503,"retryAfterSeconds":0,"method":"GET","pathPrefix":"/apis/example.com/"})");
    auto held = cluster.run("apply", {"--prune", set, "kstate"});
    cluster.emulator.clear_faults();
    CHECK(held.exit_code == 0);
    CHECK(cluster.exists("/api/v1/namespaces/team"));
    CHECK(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
    CHECK(held.out.find("Namespace/team not pruned: its contents could not all be listed (its widgets.example.com "
                        "could not be listed: ") != std::string::npos);
    CHECK(held.out.find("CustomResourceDefinition/widgets.example.com not pruned: its contents could not all be "
                        "listed (its widgets (example.com/v1) could not be listed: ") != std::string::npos);
  }
  // With the server answering again, both are pruned.
  CHECK(cluster.run("apply", {"--prune", set, "kstate"}).exit_code == 0);
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/team"));
  CHECK_FALSE(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
}

TEST_CASE("kstate apply records into, and prunes from, only a set it is told to use, never a daemon's") {
  Cluster cluster;
  const fs::path daemon_dir = cluster.work.path() / "daemon";
  const fs::path ksm = cluster.work.path() / "ksm";
  write_file(daemon_dir / "app.yaml", config_map("default", "daemon-app"));
  write_file(ksm / "ksm.yaml", config_map("default", "ksm-1") + "---\n" + config_map("default", "ksm-2"));

  // --prune names what may be pruned: without a set, a usage error and not one request.
  cluster.emulator.reset_request_log();
  auto refused = cluster.run("apply", {"--prune"}, "cache", &ksm);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err ==
        "kstate apply: --prune requires --applyset-name (the ApplySet whose recorded objects may be pruned; see "
        "docs/ownership.md)\n");
  CHECK(cluster.emulator.count_requests("", "/") == 0);
  CHECK(cluster.run("test", {"--prune"}, "cache", &ksm).exit_code == 2);

  // The set kube-system/kstate (as the daemon's), then a run without a set: its objects
  // carry no membership, no parent records them, and the set's prune never sees them.
  REQUIRE(cluster.run("apply", {"--prune", set, "kstate"}, "cache", &daemon_dir).exit_code == 0);
  const std::string parent = "/api/v1/namespaces/kube-system/secrets/kstate";
  const std::string parent_before = cluster.emulator.request("GET", parent).body;
  REQUIRE(cluster.run("apply", {}, "cache", &ksm).exit_code == 0);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/ksm-1"));
  CHECK(cluster.label("/api/v1/namespaces/default/configmaps/ksm-1", "applyset.kubernetes.io/part-of").empty());
  CHECK(cluster.label("/api/v1/namespaces/default/configmaps/ksm-1", "app.kubernetes.io/managed-by").empty());
  CHECK(cluster.emulator.request("GET", parent).body == parent_before);
  REQUIRE(cluster.run("apply", {"--prune", set, "kstate"}, "cache", &daemon_dir).exit_code == 0);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/ksm-1"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/ksm-2"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/daemon-app"));

  // A set a daemon reconciles (its parent names it) is refused: nothing written.
  REQUIRE(cluster.emulator
              .request("PATCH", parent,
                       R"({"metadata":{"annotations":{"kstate.io/writer":"daemon cp-1:/etc/kstate/manifests"}}})",
                       "application/merge-patch+json")
              .status == 200);
  cluster.emulator.reset_request_log();
  auto into_daemons = cluster.run("apply", {"--prune", set, "kstate"}, "cache", &ksm);
  CHECK(into_daemons.exit_code == 2);
  CHECK(into_daemons.out.find("ApplySet kube-system/kstate is reconciled by daemon cp-1:/etc/kstate/manifests, not by "
                              "this writer (apply ") != std::string::npos);
  CHECK(cluster.emulator.count_requests("PATCH", "/") == 0);
  CHECK(cluster.emulator.count_requests("POST", "/") == 0);
  CHECK(cluster.emulator.count_requests("DELETE", "/") == 0);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/daemon-app"));
}

TEST_CASE("a cluster-scoped object's stray namespace is dropped with a warning before IDs and duplicates") {
  Cluster cluster;
  const std::string role =
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n"
      "NAMESPACE"
      "rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n";
  const auto with_namespace = [&role](const std::string& line) {
    std::string text = role;
    text.replace(text.find("NAMESPACE"), 9, line);
    return text;
  };
  cluster.write("a.yaml", with_namespace("  namespace: team\n"));
  auto first = cluster.run("apply", {set, "kstate", "-o", "json"});
  CHECK(first.exit_code == 0);
  CHECK(first.err.find("a.yaml:1:1: ClusterRole/reader: ClusterRole is cluster-scoped: its metadata.namespace "
                       "\"team\" is ignored (as kubectl and the API server do); its state ID is ClusterRole/reader") !=
        std::string::npos);
  CHECK(first.out.find("\"id\": \"ClusterRole/reader\"") != std::string::npos);
  CHECK(cluster.exists("/apis/rbac.authorization.k8s.io/v1/clusterroles/reader"));
  auto again = cluster.run("apply", {set, "kstate"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("changed=0") != std::string::npos);

  // Declared again without the namespace: one object, so a duplicate (before, two
  // states applied in turn, the content flipping at every run).
  cluster.write("b.yaml", with_namespace(""));
  auto twice = cluster.run("apply", {set, "kstate"});
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find("b.yaml:1:1: ClusterRole/reader: duplicate state ID (first declared at ") != std::string::npos);
}

TEST_CASE("adoption is explicit: reported adopted; an object another tool manages is refused naming it, unless named") {
  Cluster cluster;
  const std::string configmaps = "/api/v1/namespaces/default/configmaps";
  const auto existing = [&](const std::string& name, const std::string& labels, const std::string& annotations) {
    cluster.create(configmaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                                   R"(","labels":{)" + labels + R"(},"annotations":{)" + annotations +
                                   R"(}},"data":{"key":"theirs"}})");
  };
  existing("plain", "", "");
  existing("helm", R"("app.kubernetes.io/managed-by":"Helm")",
           R"("meta.helm.sh/release-name":"web","meta.helm.sh/release-namespace":"team")");
  existing("flux", R"("kustomize.toolkit.fluxcd.io/name":"apps","kustomize.toolkit.fluxcd.io/namespace":"flux-system")",
           "");
  existing("argo", R"("argocd.argoproj.io/instance":"guestbook")", "");
  existing("other-set", R"("applyset.kubernetes.io/part-of":"applyset-other-v1")", "");
  for (const char* name : {"plain", "helm", "flux", "argo", "other-set"}) {
    cluster.write(std::string(name) + ".yaml", config_map("default", name));
  }
  const auto version = [&](const std::string& name) {
    auto object = json::parse(cluster.emulator.request("GET", configmaps + "/" + name).body);
    REQUIRE(object.ok());
    return std::string(json::string_or(json::find_path(*object, {"metadata", "resourceVersion"}), ""));
  };
  const std::string helm_version = version("helm");

  auto tested = cluster.run("test", {set, "kstate", "-o", "junit"});
  CHECK(tested.exit_code == 2);  // (the refused ones)
  CHECK(tested.out.find("<testcase classname=\"" + (cluster.dir / "plain.yaml").string() +
                        "\" name=\"ConfigMap/default/plain\"") != std::string::npos);
  CHECK(tested.out.find("<properties><property name=\"change\" value=\"adopted\"/></properties>") != std::string::npos);
  CHECK(tested.out.find("would be adopted") != std::string::npos);

  auto first = cluster.run("apply", {set, "kstate", "-o", "json"});
  CHECK(first.exit_code == 2);
  auto report = json::parse(first.out);
  REQUIRE(report.ok());
  std::map<std::string, std::pair<std::string, std::string>> by_name;  // name -> (change, comment)
  for (const auto& member : json::find(*report, "local")->GetObject()) {
    const json::Value& result = member.value;
    by_name[std::string(json::string_or(json::find(result, "name"), ""))] = {
        std::string(json::string_or(json::find(result, "change"), "")),
        std::string(json::string_or(json::find(result, "comment"), ""))};
  }
  CHECK(by_name["ConfigMap/default/plain"].first == "adopted");
  CHECK(by_name["ConfigMap/default/plain"].second == "adopted");
  CHECK_THAT(by_name["ConfigMap/default/helm"].second,
             Catch::StartsWith("ConfigMap/default/helm is managed by Helm release team/web (label "
                               "app.kubernetes.io/managed-by: Helm); kstate does not take it over"));
  CHECK_THAT(by_name["ConfigMap/default/helm"].second, Catch::Contains("kstate.io/adopt: \"true\""));
  CHECK_THAT(by_name["ConfigMap/default/flux"].second, Catch::Contains("Flux Kustomization flux-system/apps"));
  CHECK_THAT(by_name["ConfigMap/default/argo"].second, Catch::Contains("Argo CD application guestbook"));
  CHECK_THAT(by_name["ConfigMap/default/other-set"].second, Catch::Contains("another ApplySet, applyset-other-v1"));
  CHECK(version("helm") == helm_version);  // not one write
  CHECK(cluster.label(configmaps + "/plain", "app.kubernetes.io/managed-by") == "kstate");
  CHECK(cluster.label(configmaps + "/helm", "app.kubernetes.io/managed-by") == "Helm");

  // Named for adoption: by the manifest's annotation, and by --adopt-objects.
  cluster.write("helm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: helm\n  namespace: default\n"
                "  annotations: {kstate.io/adopt: \"true\"}\ndata: {key: v}\n");
  auto named = cluster.run("apply", {set, "kstate", "--adopt-objects",
                                     "ConfigMap/default/flux, ConfigMap/default/argo,ConfigMap/default/other-set"});
  CHECK(named.exit_code == 0);
  CHECK(named.out.find("adopted (from Helm release team/web (label app.kubernetes.io/managed-by: Helm), as its "
                       "manifest or adopt-objects says)") != std::string::npos);
  CHECK(cluster.label(configmaps + "/helm", "app.kubernetes.io/managed-by") == "kstate");
  CHECK_FALSE(cluster.label(configmaps + "/other-set", "applyset.kubernetes.io/part-of") == "applyset-other-v1");
  // Adopted objects are kstate's from then on: a manifest removed prunes its object.
  cluster.erase("plain.yaml");
  auto pruned = cluster.run("apply", {"--prune", set, "kstate", "-o", "junit"});
  CHECK(pruned.exit_code == 0);
  CHECK(cluster.status(configmaps + "/plain") == 404);
  CHECK(cluster.run("apply", {"--adopt-objects", "ConfigMap"}).exit_code == 2);
}

}  // namespace ownership_test
