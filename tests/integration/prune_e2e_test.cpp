// Ownership and prune end to end (issue #7), running the real `kstate apply` against
// kstate-emulator: Namespaces and CRDs that still hold objects kstate does not manage
// are never pruned (and the report says what holds them), adoption of existing
// objects only when allowed, objects never declared are never touched, and kubectl's
// ApplySet selector sees exactly the objects kstate manages.
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/encoding.hpp"
#include "core/json.hpp"
#include "states/inventory.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace prune_e2e_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace fs = std::filesystem;

namespace {

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-prune-e2e"};
  fs::path dir = work.path() / "manifests";

  ProcessResult apply(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(),
                {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / "cache").string()});
    auto result = kstate::testing::run_process(argv);
    UNSCOPED_INFO("kstate apply exit " << result.exit_code << "\nstdout:\n"
                                       << result.out << "\nstderr:\n"
                                       << result.err);
    return result;
  }
  json::Document get(const std::string& path) {
    auto reply = emulator.request("GET", path);
    if (reply.status == 404) {
      return json::Document();
    }
    REQUIRE(reply.status == 200);
    auto doc = json::parse(reply.body);
    REQUIRE(doc.ok());
    return std::move(doc).value();
  }
  bool exists(const std::string& path) {
    json::Document object = get(path);
    // A Namespace being terminated is on its way out: it counts as deleted.
    return object.IsObject() && json::find_path(object, {"metadata", "deletionTimestamp"}) == nullptr;
  }
  void create(const std::string& collection, const std::string& body) {
    auto reply = emulator.request("POST", collection, body);
    INFO(reply.body);
    REQUIRE(reply.status == 201);
  }
  void remove(const std::string& path) { REQUIRE(emulator.request("DELETE", path).status == 200); }
  void write(const std::string& name, const std::string& text) { write_file(dir / name, text); }
  void erase(const std::string& name) { REQUIRE(fs::remove(dir / name)); }
  // The inventory kstate recorded in the ApplySet parent, as "Kind/ns/name" lines.
  std::set<std::string> inventory() {
    auto parent = get("/api/v1/namespaces/kube-system/secrets/kstate");
    REQUIRE(parent.IsObject());
    kstate::states::LoadedInventory loaded = kstate::states::load_inventory(&parent);
    REQUIRE(loaded.status == kstate::states::InventoryStatus::ok);
    std::set<std::string> keys;
    for (const auto& entry : loaded.inventory.entries) {
      keys.insert(entry.kind + "/" + entry.ns + "/" + entry.name);
    }
    return keys;
  }
  std::string applyset_id() {
    auto parent = get("/api/v1/namespaces/kube-system/secrets/kstate");
    return std::string(
        json::string_or(json::find_path(parent, {"metadata", "labels", "applyset.kubernetes.io/id"}), ""));
  }
};

std::string config_map(const std::string& ns, const std::string& name, const std::string& value = "v") {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {key: \"" +
         value + "\"}\n";
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
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
)";

std::string string_field(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

}  // namespace

TEST_CASE("prune keeps a Namespace or CRD holding objects kstate does not manage, says why, and prunes it once empty") {
  Cluster cluster;
  cluster.write("00-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n");
  cluster.write("01-crd.yaml", widget_crd);
  cluster.write("10-app.yaml", config_map("team", "app"));
  cluster.write("20-widget.yaml",
                "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: team}\nspec: {size: 1}\n");
  cluster.write("30-keep.yaml", config_map("default", "keep"));
  REQUIRE(cluster.apply({"--prune"}).exit_code == 0);

  // Objects kstate never applied: a ConfigMap and a Widget of someone else's, and the
  // `default` ServiceAccount and `kube-root-ca.crt` ConfigMap that kube-controller-manager
  // puts in every namespace (which must not keep an otherwise empty namespace alive).
  cluster.create("/api/v1/namespaces/team/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign"},"data":{"x":"y"}})");
  cluster.create("/apis/example.com/v1/namespaces/default/widgets",
                 R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"foreign-widget"}})");
  REQUIRE(cluster.exists("/api/v1/namespaces/team/serviceaccounts/default"));
  REQUIRE(cluster.exists("/api/v1/namespaces/team/configmaps/kube-root-ca.crt"));

  for (const char* file : {"00-namespace.yaml", "01-crd.yaml", "10-app.yaml", "20-widget.yaml"}) {
    cluster.erase(file);
  }
  auto held = cluster.apply({"--prune"});
  CHECK(held.exit_code == 0);
  // The managed members went; the containers stayed, and the report names what holds them.
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/team/configmaps/app"));
  CHECK_FALSE(cluster.exists("/apis/example.com/v1/namespaces/team/widgets/w1"));
  CHECK(cluster.exists("/api/v1/namespaces/team"));
  CHECK(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  CHECK(cluster.exists("/api/v1/namespaces/team/configmaps/foreign"));
  CHECK(cluster.exists("/apis/example.com/v1/namespaces/default/widgets/foreign-widget"));
  CHECK(held.out.find("Namespace/team not pruned") != std::string::npos);
  CHECK(held.out.find("ConfigMap/team/foreign, which kstate does not manage") != std::string::npos);
  CHECK(held.out.find("CustomResourceDefinition/widgets.example.com not pruned") != std::string::npos);
  CHECK(held.out.find("Widget/default/foreign-widget, which kstate does not manage") != std::string::npos);
  // Kept containers stay in the inventory, so a later cycle can still prune them.
  CHECK(cluster.inventory().count("Namespace//team") == 1);

  // Once their owners removed them, the containers are pruned too.
  cluster.remove("/api/v1/namespaces/team/configmaps/foreign");
  cluster.remove("/apis/example.com/v1/namespaces/default/widgets/foreign-widget");
  auto pruned = cluster.apply({"--prune"});
  CHECK(pruned.exit_code == 0);
  CHECK(pruned.out.find("Namespace/team pruned (") != std::string::npos);
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/team"));
  CHECK_FALSE(cluster.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/keep"));
  CHECK(cluster.inventory() == std::set<std::string>{"ConfigMap/default/keep"});
}

TEST_CASE(
    "adoption: an existing unlabelled object is left alone with --no-adopt, taken over by default, then prunable") {
  Cluster cluster;
  cluster.create("/api/v1/namespaces/default/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing"},"data":{"key":"theirs"}})");
  // Never declared by any manifest: kstate must never send it a single request.
  cluster.create("/api/v1/namespaces/default/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bystander"},"data":{"key":"b"}})");
  cluster.write("existing.yaml", config_map("default", "existing", "ours"));
  cluster.write("other.yaml", config_map("default", "other"));
  cluster.emulator.reset_request_log();
  const std::string existing = "/api/v1/namespaces/default/configmaps/existing";
  const std::string version_before = string_field(cluster.get(existing), {"metadata", "resourceVersion"});

  auto refused = cluster.apply({"--no-adopt", "--prune"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.find("ConfigMap/default/existing already exists and is not managed by kstate") !=
        std::string::npos);
  CHECK(refused.out.find("--adopt") != std::string::npos);
  CHECK(refused.out.find("adopt: true") != std::string::npos);
  auto untouched = cluster.get(existing);
  CHECK(string_field(untouched, {"metadata", "resourceVersion"}) == version_before);
  CHECK(string_field(untouched, {"data", "key"}) == "theirs");
  CHECK(json::find_path(untouched, {"metadata", "labels"}) == nullptr);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/other"));  // other states still ran
  CHECK(cluster.inventory().count("ConfigMap/default/existing") == 0);

  auto adopted = cluster.apply({"--prune"});
  CHECK(adopted.exit_code == 0);
  auto taken = cluster.get(existing);
  CHECK(string_field(taken, {"data", "key"}) == "ours");
  CHECK(string_field(taken, {"metadata", "labels", "app.kubernetes.io/managed-by"}) == "kstate");
  CHECK(string_field(taken, {"metadata", "labels", "applyset.kubernetes.io/part-of"}) == cluster.applyset_id());
  CHECK(cluster.inventory().count("ConfigMap/default/existing") == 1);

  cluster.erase("existing.yaml");
  auto pruned = cluster.apply({"--prune"});
  CHECK(pruned.exit_code == 0);
  CHECK_FALSE(cluster.exists(existing));
  // Not one request of kstate's named the never-declared object (read before this
  // test's own GET of it below).
  auto log = json::parse(cluster.emulator.request_log());
  REQUIRE(log.ok());
  int bystander_requests = 0;
  for (const auto& request : json::find(*log, "requests")->GetArray()) {
    if (std::string(json::string_or(json::find(request, "path"), "")).ends_with("/configmaps/bystander")) {
      ++bystander_requests;
      UNSCOPED_INFO(json::dump(request));  // which request, if this ever fails
    }
  }
  CHECK(bystander_requests == 0);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/bystander"));
}

TEST_CASE("kubectl's ApplySet selector lists exactly the objects kstate manages, and kubectl recognises the parent") {
  if (!kstate::testing::program_available("kubectl")) {
    WARN("kubectl not installed: skipped");
    return;
  }
  Cluster cluster;
  cluster.write("00-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n");
  cluster.write("10-config.yaml", config_map("apps", "a") + "---\n" + config_map("default", "b"));
  cluster.write("20-web.yaml", R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kstate-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
)");
  REQUIRE(cluster.apply().exit_code == 0);
  // Someone else's object in a managed namespace, of a managed kind: not listed.
  cluster.create("/api/v1/namespaces/apps/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign"}})");

  const std::set<std::string> managed{"Namespace//apps",     "ConfigMap/apps/a", "ConfigMap/default/b",
                                      "Deployment/apps/web", "Service/apps/web", "ClusterRole//kstate-reader"};
  CHECK(cluster.inventory() == managed);

  // What `kubectl apply --prune --applyset` would list: the kinds of the parent's
  // contains-group-kinds annotation, in every namespace, by the part-of label.
  auto parent = cluster.get("/api/v1/namespaces/kube-system/secrets/kstate");
  std::string kinds = string_field(parent, {"metadata", "annotations", "applyset.kubernetes.io/contains-group-kinds"});
  CHECK(kinds == "ClusterRole.rbac.authorization.k8s.io,ConfigMap,Deployment.apps,Namespace,Service");
  std::string resources;
  for (char c : kinds) {
    resources += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  const std::string kubeconfig = cluster.emulator.kubeconfig_path().string();
  auto listed = kstate::testing::run_process(
      {"kubectl", "--kubeconfig", kubeconfig, "get", resources, "-A", "-l",
       "applyset.kubernetes.io/part-of=" + cluster.applyset_id(), "-o",
       R"(jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end})"});
  INFO(listed.err);
  REQUIRE(listed.exit_code == 0);
  std::set<std::string> seen;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      seen.insert(line);
    }
  }
  CHECK(seen == managed);

  // kubectl's own ApplySet code reads the parent: the ID label matches what kubectl
  // computes and the annotations parse, so it stops only at the tooling check (the
  // set belongs to kstate), instead of treating it as a foreign or broken parent.
  kstate::testing::RunOptions applyset_enabled;
  applyset_enabled.env["KUBECTL_APPLYSET"] = "true";
  const fs::path probe = cluster.work.path() / "probe.yaml";
  write_file(probe, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\n");
  auto kubectl_apply =
      kstate::testing::run_process({"kubectl", "--kubeconfig", kubeconfig, "apply", "-n", "kube-system", "--prune",
                                    "--applyset=kstate", "--dry-run=server", "-f", probe.string()},
                                   applyset_enabled);
  INFO(kubectl_apply.out << kubectl_apply.err);
  CHECK(kubectl_apply.exit_code != 0);
  CHECK(kubectl_apply.err.find("is managed by tooling \"kstate\" instead of \"kubectl\"") != std::string::npos);
  CHECK(kubectl_apply.err.find("incorrect value for label") == std::string::npos);
}

TEST_CASE("objects created by a kstate apply killed before it recorded them are still pruned later") {
  Cluster cluster;
  std::string objects;
  for (int i = 0; i < 200; ++i) {  // 4 s at 20 ms each: the kill comes long before the end
    objects += (i == 0 ? "" : "---\n") + config_map("default", "batch-" + std::to_string(i));
  }
  cluster.write("batch.yaml", objects);
  // generateName objects too (their names are only known once created); this file
  // sorts first, so they are all created before the kill.
  std::string generated;
  for (int i = 0; i < 20; ++i) {
    generated += "generated-" + std::to_string(i) +
                 ":\n  object_present:\n    manifest:\n      apiVersion: v1\n      kind: ConfigMap\n"
                 "      metadata: {generateName: gen-, namespace: default}\n";
  }
  cluster.write("a-generated.yaml", generated);
  // Slow requests, one at a time: the run is killed after some objects exist, before
  // the inventory is written at its end.
  cluster.emulator.set_faults(R"({"latencyMs":20})");
  cluster.emulator.reset_request_log();
  kstate::testing::BackgroundProcess run({KSTATE_BINARY, "apply", cluster.dir.string(), "--prune", "--applyset-name",
                                          "kstate", "--concurrency", "1", "--kubeconfig",
                                          cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                          (cluster.work.path() / "cache").string()});
  int created = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       created < 10 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    created = cluster.emulator.count_requests("PATCH", "/api/v1/namespaces/default/configmaps/batch-");
  }
  REQUIRE(created >= 10);
  // The next ConfigMap PATCH is held at the server, and the run is killed while it
  // waits: like a real API server, the emulator still serves it after its client has
  // gone, here only once the test releases it, after the next run looked for it.
  const std::string batch_path = "/api/v1/namespaces/default/configmaps/batch-";
  constexpr int held_ms = 600'000;
  cluster.emulator.set_faults(R"({"latencyMs":)" + std::to_string(held_ms) + R"(,"method":"PATCH","pathPrefix":")" +
                              batch_path + R"("})");
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       cluster.emulator.count_delayed("PATCH", batch_path, held_ms) == 0 &&
       std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  run.kill();
  REQUIRE(cluster.emulator.count_delayed("PATCH", batch_path, held_ms) == 1);
  cluster.emulator.clear_faults();
  auto listed = [&] {
    auto items =
        cluster.get("/api/v1/namespaces/default/configmaps?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkstate");
    std::pair<int, int> count;  // named, generated
    for (const auto& item : json::find(items, "items")->GetArray()) {
      count.first += string_field(item, {"metadata", "name"}).starts_with("batch-") ? 1 : 0;
      count.second += string_field(item, {"metadata", "name"}).starts_with("gen-") ? 1 : 0;
    }
    return count;
  };
  const auto [orphans, generated_orphans] = listed();
  REQUIRE(orphans >= 10);
  REQUIRE(orphans < 200);  // the run really died half-way
  REQUIRE(generated_orphans == 20);
  // Not recorded with a UID yet: only as pending.
  CHECK(cluster.inventory().empty());

  cluster.erase("batch.yaml");
  cluster.erase("a-generated.yaml");
  cluster.write("other.yaml", config_map("default", "other"));
  auto pruned = cluster.apply({"--prune"});
  INFO("prune run exit " << pruned.exit_code << "\nstdout:\n" << pruned.out << "\nstderr:\n" << pruned.err);
  CHECK(pruned.exit_code == 0);
  const auto [named_left, generated_left] = listed();
  CHECK(named_left == 0);
  CHECK(generated_left == 0);
  CHECK(cluster.inventory() == std::set<std::string>{"ConfigMap/default/other"});

  // The held PATCH of the killed run completes only now, after that run looked: its
  // object exists with kstate's labels, recorded nowhere but as a pending entry.
  REQUIRE(cluster.emulator.count_delayed("PATCH", batch_path, held_ms) == 1);
  const int served = cluster.emulator.count_requests("PATCH", batch_path);
  cluster.emulator.release_delayed();
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       cluster.emulator.count_requests("PATCH", batch_path) == served && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(listed() == std::make_pair(1, 0));
  auto late = cluster.apply({"--prune"});
  INFO("run after the late object exit " << late.exit_code << "\nstdout:\n" << late.out << "\nstderr:\n" << late.err);
  CHECK(late.exit_code == 0);
  CHECK(listed() == std::make_pair(0, 0));
  CHECK(cluster.inventory() == std::set<std::string>{"ConfigMap/default/other"});
}

TEST_CASE("kstate apply --applyset-name keeps separate sets: one folder's prune never deletes another's objects") {
  Cluster cluster;
  const fs::path team_a = cluster.work.path() / "team-a";
  const fs::path team_b = cluster.work.path() / "team-b";
  write_file(team_a / "app.yaml", config_map("default", "a-app"));
  write_file(team_b / "app.yaml", config_map("default", "b-app"));
  auto apply = [&cluster](const fs::path& dir, std::vector<std::string> extra) {
    std::vector<std::string> argv{KSTATE_BINARY, "apply", dir.string(), "--prune"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--kubeconfig", cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                             (cluster.work.path() / "cache").string()});
    auto result = kstate::testing::run_process(argv);
    UNSCOPED_INFO("kstate apply " << dir.string() << " exit " << result.exit_code << "\nstdout:\n"
                                  << result.out << "\nstderr:\n"
                                  << result.err);
    return result;
  };
  REQUIRE(apply(team_a, {"--applyset-name", "team-a"}).exit_code == 0);
  REQUIRE(apply(team_b, {"--applyset-name", "team-b", "--applyset-namespace", "default"}).exit_code == 0);
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/a-app"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/b-app"));
  // Each set has its own parent, and its objects say which one they belong to.
  auto parent_a = cluster.get("/api/v1/namespaces/kube-system/secrets/team-a");
  auto parent_b = cluster.get("/api/v1/namespaces/default/secrets/team-b");
  REQUIRE(parent_a.IsObject());
  REQUIRE(parent_b.IsObject());
  CHECK(cluster.get("/api/v1/namespaces/kube-system/secrets/kstate").IsNull());
  const std::string id_a = string_field(parent_a, {"metadata", "labels", "applyset.kubernetes.io/id"});
  const std::string id_b = string_field(parent_b, {"metadata", "labels", "applyset.kubernetes.io/id"});
  CHECK(id_a != id_b);
  CHECK(string_field(cluster.get("/api/v1/namespaces/default/configmaps/a-app"),
                     {"metadata", "labels", "applyset.kubernetes.io/part-of"}) == id_a);
  CHECK(string_field(cluster.get("/api/v1/namespaces/default/configmaps/b-app"),
                     {"metadata", "labels", "applyset.kubernetes.io/part-of"}) == id_b);

  // Team B's folder no longer has its ConfigMap: B's prune deletes it, and only it.
  write_file(team_b / "app.yaml", config_map("default", "b-other"));
  REQUIRE(apply(team_b, {"--applyset-name", "team-b", "--applyset-namespace", "default"}).exit_code == 0);
  CHECK_FALSE(cluster.exists("/api/v1/namespaces/default/configmaps/b-app"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/b-other"));
  CHECK(cluster.exists("/api/v1/namespaces/default/configmaps/a-app"));
  // The test mode of A, with its set named, sees nothing to do.
  auto test = kstate::testing::run_process({KSTATE_BINARY, "test", team_a.string(), "--prune", "--applyset-name",
                                            "team-a", "--kubeconfig", cluster.emulator.kubeconfig_path().string(),
                                            "--cache-dir", (cluster.work.path() / "cache").string()});
  CHECK(test.exit_code == 0);

  // A name the API server would refuse is a usage error: one line, nothing sent.
  cluster.emulator.reset_request_log();
  auto bad = apply(team_a, {"--applyset-name", "Team_A"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--applyset-name") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  CHECK(cluster.emulator.count_requests("GET", "/") == 0);
}

}  // namespace prune_e2e_test
