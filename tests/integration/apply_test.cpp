// End-to-end runs of `kstate apply` and `kstate test` against kstate-emulator:
// what users see (reports, exit codes, objects in the cluster, requests sent).
#include <catch2/catch.hpp>
#include <csignal>
#include <regex>
#include <thread>
#include <tuple>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/kstate_cli.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace apply_test {

using kstate::testing::Emulator;
using kstate::testing::field;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using Cluster = kstate::testing::KstateCluster;
namespace json = kstate::json;

namespace {

const char* const demo_namespace = R"(apiVersion: v1
kind: Namespace
metadata:
  name: demo
)";

const char* const demo_objects = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
data:
  mode: "fast"
  replicas: "2"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
          ports:
            - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 80
)";

void write_demo(const std::string& dir) {
  write_file(std::filesystem::path(dir) / "00-namespace.yaml", demo_namespace);
  write_file(std::filesystem::path(dir) / "10-app.yaml", demo_objects);
}

// CRD widgets.example.com serving v1 only; then the same with v2 added as the storage
// version, v1 kept served or not.
std::string widget_crd_v1() {
  return R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";
}
std::string widget_crd_adding_v2(bool v1_served) {
  std::string crd = widget_crd_v1();
  crd.replace(crd.find("storage: true"), 13, "storage: false");
  if (!v1_served) {
    crd.replace(crd.find("served: true"), 12, "served: false");
  }
  return crd + R"(    - name: v2
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";
}

}  // namespace

TEST_CASE("apply creates a directory's objects, and a second apply changes and writes nothing") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);

  auto first = cluster.apply(dir);
  CHECK(first.exit_code == 0);
  CHECK(first.out.find("Succeeded: 4 (changed=4, unchanged=0)") != std::string::npos);
  auto deployment = cluster.get("/apis/apps/v1/namespaces/demo/deployments/web");
  REQUIRE(deployment.IsObject());
  CHECK(field(deployment, {"metadata", "labels", "app.kubernetes.io/managed-by"}) == "kstate");
  CHECK_FALSE(field(deployment, {"metadata", "labels", "applyset.kubernetes.io/part-of"}).empty());
  CHECK(field(cluster.get("/api/v1/namespaces/demo/configmaps/settings"), {"data", "mode"}) == "fast");

  cluster.emulator.reset_request_log();
  auto second = cluster.apply(dir);
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("Succeeded: 4 (changed=0, unchanged=4)") != std::string::npos);
  CHECK(cluster.writes() == 0);

  auto test = cluster.test(dir);
  CHECK(test.exit_code == 0);
  CHECK(test.out.find("Pending: 0") != std::string::npos);
}

TEST_CASE("apply -v debug says where a run's time went (what bench/RESULTS.md reads); the default level does not") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);

  auto first = cluster.apply(dir, {"-v", "debug"});
  CHECK(first.exit_code == 0);
  // In the order a run goes through them, with what each step handled.
  const std::vector<std::string> steps = {
      "timing: API server reached, kinds discovered, ApplySet parent read at ",
      "timing: 4 states loaded from 2 files at ",
      "timing: 4 pending inventory entries prepared in ",
      ", states planned in ",
      ", the entries recorded before any write ",
      "timing: 4 states run in ",
      "timing: states run and inventory recorded at ",
      "timing: report written at ",
  };
  std::size_t at = 0;
  for (const auto& step : steps) {
    INFO(step);
    const auto found = first.err.find(step, at);
    CHECK(found != std::string::npos);
    at = found == std::string::npos ? at : found;
  }

  // Nothing new to record: no inventory line, the rest as before.
  auto again = cluster.apply(dir, {"-v", "debug"});
  CHECK(again.err.find("timing: 4 states run in ") != std::string::npos);
  CHECK(again.err.find("pending inventory entries") == std::string::npos);
  auto quiet = cluster.apply(dir);
  CHECK(quiet.err.find("timing:") == std::string::npos);
}

TEST_CASE("test mode shows the diff of pending changes and changes nothing in the cluster") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  REQUIRE(cluster.apply(dir).exit_code == 0);
  std::string before_cm =
      field(cluster.get("/api/v1/namespaces/demo/configmaps/settings"), {"metadata", "resourceVersion"});

  std::string changed = std::regex_replace(std::string(demo_objects), std::regex("mode: \"fast\""), "mode: \"safe\"");
  write_file(std::filesystem::path(dir) / "10-app.yaml", changed);
  write_file(std::filesystem::path(dir) / "20-new.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: demo}\ndata: {a: b}\n");

  cluster.emulator.reset_request_log();
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("-  mode: fast") != std::string::npos);
  CHECK(test.out.find("+  mode: safe") != std::string::npos);
  CHECK(test.out.find("--- live/v1.ConfigMap.demo.settings") != std::string::npos);
  CHECK(test.out.find("Result: None") != std::string::npos);
  CHECK(test.out.find("would be created") != std::string::npos);
  CHECK(test.out.find("Pending: 2") != std::string::npos);
  // Nothing moved: same resourceVersion, no new object, and every write was a dry run.
  CHECK(field(cluster.get("/api/v1/namespaces/demo/configmaps/settings"), {"metadata", "resourceVersion"}) ==
        before_cm);
  CHECK(cluster.get("/api/v1/namespaces/demo/configmaps/extra").IsNull());
  auto log = json::parse(cluster.emulator.request_log());
  REQUIRE(log.ok());
  int writes = 0;
  for (const auto& entry : json::find(*log, "requests")->GetArray()) {
    std::string method = field(entry, {"method"});
    if (method != "GET") {
      ++writes;
      CHECK(field(entry, {"query"}).find("dryRun=All") != std::string::npos);
    }
  }
  CHECK(writes == 2);
}

TEST_CASE("test mode of a new namespace reports its objects as would-be-created without failing") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("server validation skipped because namespace demo does not exist yet") != std::string::npos);
  CHECK(test.out.find("Failed: 0") != std::string::npos);
  CHECK(test.out.find("Pending: 4") != std::string::npos);
  CHECK(cluster.get("/api/v1/namespaces/demo").IsNull());
}

TEST_CASE("object_updated: fails when absent, already good when equal, patches when different") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  std::string states = cluster.manifest_dir("updated");
  write_file(std::filesystem::path(states) / "scale.yaml", R"(scale-web:
  object_updated:
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: demo}
      spec: {replicas: 3}
)");
  SECTION("absent") {
    auto test = cluster.test(states);
    CHECK(test.exit_code == 2);
    CHECK(test.out.find("Deployment/demo/web does not exist") != std::string::npos);
    auto apply = cluster.apply(states);
    CHECK(apply.exit_code == 2);
    CHECK(apply.out.find("Result: False") != std::string::npos);
  }
  SECTION("different, then equal") {
    REQUIRE(cluster.apply(dir).exit_code == 0);
    auto test = cluster.test(states);
    CHECK(test.exit_code == 1);
    CHECK(test.out.find("+  replicas: 3") != std::string::npos);
    CHECK(field(cluster.get("/apis/apps/v1/namespaces/demo/deployments/web"), {"spec", "replicas"}) == "1");
    auto apply = cluster.apply(states);
    CHECK(apply.exit_code == 0);
    CHECK(apply.out.find("Succeeded: 1 (changed=1, unchanged=0)") != std::string::npos);
    CHECK(field(cluster.get("/apis/apps/v1/namespaces/demo/deployments/web"), {"spec", "replicas"}) == "3");
    auto again = cluster.apply(states);
    CHECK(again.out.find("already good") != std::string::npos);
    CHECK(again.out.find("Succeeded: 1 (changed=0, unchanged=1)") != std::string::npos);
  }
}

TEST_CASE("object_absent: already absent, would delete in test mode, deletes and waits") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  std::string states = cluster.manifest_dir("absent");
  write_file(std::filesystem::path(states) / "remove.yaml", R"(old-settings:
  object_absent:
    apiVersion: v1
    kind: ConfigMap
    name: settings
    namespace: demo
    wait: {attempts: 10, sleep: 0.1}
)");
  auto absent = cluster.apply(states);
  CHECK(absent.exit_code == 0);
  CHECK(absent.out.find("already absent") != std::string::npos);
  REQUIRE(cluster.apply(dir).exit_code == 0);
  auto test = cluster.test(states);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("would be deleted") != std::string::npos);
  CHECK_FALSE(cluster.get("/api/v1/namespaces/demo/configmaps/settings").IsNull());
  auto apply = cluster.apply(states);
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.find("deleted") != std::string::npos);
  CHECK(cluster.get("/api/v1/namespaces/demo/configmaps/settings").IsNull());
}

TEST_CASE("strategies: replace keeps the allocated clusterIP, create-only never updates") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  REQUIRE(cluster.apply(dir).exit_code == 0);
  std::string cluster_ip = field(cluster.get("/api/v1/namespaces/demo/services/web"), {"spec", "clusterIP"});
  REQUIRE_FALSE(cluster_ip.empty());

  std::string states = cluster.manifest_dir("strategies");
  write_file(std::filesystem::path(states) / "svc.yaml", R"(web-service:
  object_present:
    strategy: replace
    manifest:
      apiVersion: v1
      kind: Service
      metadata: {name: web, namespace: demo, labels: {tier: front}}
      spec:
        selector: {app: web}
        ports: [{port: 8080, targetPort: 80}]
settings-once:
  object_present:
    strategy: create-only
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: settings, namespace: demo}
      data: {mode: "changed"}
)");
  SECTION("a 409 from a competing writer is retried") {
    cluster.emulator.set_faults(R"({"failNext": 1, "failCode": 409, "method": "PUT"})");
  }
  auto apply = cluster.apply(states);
  CHECK(apply.exit_code == 0);
  auto service = cluster.get("/api/v1/namespaces/demo/services/web");
  CHECK(field(service, {"spec", "clusterIP"}) == cluster_ip);
  CHECK(field(service, {"metadata", "labels", "tier"}) == "front");
  CHECK(field(cluster.get("/api/v1/namespaces/demo/configmaps/settings"), {"data", "mode"}) == "fast");
  CHECK(apply.out.find("already exists (create-only") != std::string::npos);
}

TEST_CASE("an immutable field change fails naming the field, and recreate deletes and re-creates") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  REQUIRE(cluster.apply(dir).exit_code == 0);
  std::string uid = field(cluster.get("/apis/apps/v1/namespaces/demo/deployments/web"), {"metadata", "uid"});
  std::string changed = std::regex_replace(std::string(demo_objects), std::regex("matchLabels: \\{app: web\\}"),
                                           "matchLabels: {app: web, track: stable}");
  changed = std::regex_replace(changed, std::regex("labels: \\{app: web\\}\\n    spec:"),
                               "labels: {app: web, track: stable}\n    spec:");
  write_file(std::filesystem::path(dir) / "10-app.yaml", changed);
  auto refused = cluster.apply(dir);
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.find("spec.selector") != std::string::npos);
  CHECK(refused.out.find("recreate: true") != std::string::npos);

  std::string annotated = std::regex_replace(changed, std::regex("  name: web\\n  namespace: demo\\n  labels"),
                                             "  name: web\n  namespace: demo\n  annotations: {kstate.io/recreate: "
                                             "\"true\"}\n  labels");
  write_file(std::filesystem::path(dir) / "10-app.yaml", annotated);
  auto recreated = cluster.apply(dir);
  CHECK(recreated.exit_code == 0);
  CHECK(recreated.out.find("re-created") != std::string::npos);
  auto deployment = cluster.get("/apis/apps/v1/namespaces/demo/deployments/web");
  CHECK(field(deployment, {"metadata", "uid"}) != uid);
  CHECK(field(deployment, {"spec", "selector", "matchLabels", "track"}) == "stable");
}

TEST_CASE("a re-created object is recorded with its new UID, so prune can still remove it later") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("demo");
  write_demo(dir);
  REQUIRE(cluster.apply(dir, {"--prune"}).exit_code == 0);
  std::string changed = std::regex_replace(std::string(demo_objects), std::regex("matchLabels: \\{app: web\\}"),
                                           "matchLabels: {app: web, track: stable}");
  changed = std::regex_replace(changed, std::regex("labels: \\{app: web\\}\\n    spec:"),
                               "labels: {app: web, track: stable}\n    spec:");
  changed =
      std::regex_replace(changed, std::regex("  name: web\\n  namespace: demo\\n  labels"),
                         "  name: web\n  namespace: demo\n  annotations: {kstate.io/recreate: \"true\"}\n  labels");
  write_file(std::filesystem::path(dir) / "10-app.yaml", changed);
  auto recreated = cluster.apply(dir, {"--prune"});
  CHECK(recreated.exit_code == 0);
  CHECK(recreated.out.find("re-created") != std::string::npos);
  // The Deployment's manifest goes away: it is kstate's (same UID as recorded), so prune removes it.
  write_file(std::filesystem::path(dir) / "10-app.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: demo}\ndata: {mode: fast, "
             "replicas: \"2\"}\n");
  auto pruned = cluster.apply(dir, {"--prune"});
  CHECK(pruned.exit_code == 0);
  CHECK(pruned.out.find("prune:Deployment.apps/demo/web") != std::string::npos);
  CHECK(cluster.get("/apis/apps/v1/namespaces/demo/deployments/web").IsNull());
}

TEST_CASE("generateName objects are created once, never duplicated by later runs") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("gen");
  write_file(std::filesystem::path(dir) / "job.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  generateName: report-
  namespace: default
data: {kind: report}
)");
  REQUIRE(cluster.apply(dir).exit_code == 0);
  auto second = cluster.apply(dir);
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("changed=0") != std::string::npos);
  auto list = cluster.get("/api/v1/namespaces/default/configmaps");
  int generated = 0;
  for (const auto& item : json::find(list, "items")->GetArray()) {
    generated += field(item, {"metadata", "name"}).rfind("report-", 0) == 0 ? 1 : 0;
  }
  CHECK(generated == 1);
}

TEST_CASE("Secret values never appear in any output format, and json/junit reports parse") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("secret");
  auto secret = [](const std::string& value) {
    // data holds valid base64 of "CANARY1111"/"CANARY2222"; stringData the same text.
    return "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: default}\n"
           "stringData: {password: " +
           value + "}\ndata: {token: \"" + value + "==\"}\n";
  };
  std::string live = "Q0FOQVJZMTExMQ";
  std::string next = "Q0FOQVJZMjIyMg";
  write_file(std::filesystem::path(dir) / "secret.yaml", secret(live));
  REQUIRE(cluster.apply(dir).exit_code == 0);
  for (const char* format : {"text", "json", "junit"}) {
    write_file(std::filesystem::path(dir) / "secret.yaml", secret(next));
    auto test = cluster.test(dir, {"-o", format, "-v", "trace"});
    auto apply = cluster.apply(dir, {"-o", format, "-v", "trace"});
    std::swap(live, next);
    INFO("format " << format);
    CHECK(test.exit_code == 1);
    CHECK(apply.exit_code == 0);
    for (const auto* run : {&test, &apply}) {
      for (const char* canary : {"Q0FOQVJZMTExMQ", "Q0FOQVJZMjIyMg", "CANARY"}) {
        CHECK(run->out.find(canary) == std::string::npos);
        CHECK(run->err.find(canary) == std::string::npos);
      }
      if (std::string(format) == "json") {
        CHECK(json::parse(run->out).ok());
      }
      if (std::string(format) == "junit" && kstate::testing::program_available("python3")) {
        kstate::testing::RunOptions with_input;
        with_input.stdin_data = run->out;
        auto parsed = kstate::testing::run_process(
            {"python3", "-c", "import sys,xml.etree.ElementTree as E; E.fromstring(sys.stdin.read())"}, with_input);
        CHECK(parsed.exit_code == 0);
      }
    }
    if (std::string(format) == "text") {
      CHECK(test.out.find("*** (after)") != std::string::npos);
    }
  }
}

TEST_CASE("real manifests: kube-state-metrics applies, and its kustomization.yaml is named as not an object") {
  Cluster cluster;
  std::string dir = std::string(KSTATE_SHARED_TESTDATA) + "/real/kube-state-metrics-standard";
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);  // one file failed to load
  CHECK(apply.out.find("kustomization.yaml") != std::string::npos);
  // The file that is not an object fails the run: counted, as the exit code says.
  CHECK(apply.out.find("Failed: 1 (0 states, 1 error outside states)") != std::string::npos);
  CHECK_FALSE(cluster.get("/apis/apps/v1/namespaces/kube-system/deployments/kube-state-metrics").IsNull());
  CHECK_FALSE(cluster.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/kube-state-metrics").IsNull());
  auto again = cluster.apply(dir);
  CHECK(again.out.find("changed=0") != std::string::npos);
}

TEST_CASE("usage and connection errors exit 2 with one clear line") {
  Cluster cluster;
  auto no_path = kstate::testing::run_process({KSTATE_BINARY, "apply"});
  CHECK(no_path.exit_code == 2);
  CHECK(no_path.err.find("no manifest file or directory given") != std::string::npos);
  auto bad_kubeconfig = kstate::testing::run_process(
      {KSTATE_BINARY, "apply", cluster.work.path().string(), "--kubeconfig", "/nonexistent/kubeconfig"});
  CHECK(bad_kubeconfig.exit_code == 2);
  CHECK(bad_kubeconfig.err.find("/nonexistent/kubeconfig") != std::string::npos);
}

TEST_CASE("apply --prune deletes only inventoried objects whose manifests are gone, and never in a failed cycle") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("prune");
  auto config_map = [](const std::string& name) {
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\ndata: {a: b}\n";
  };
  write_file(std::filesystem::path(dir) / "keep.yaml", config_map("keep"));
  write_file(std::filesystem::path(dir) / "drop.yaml", config_map("drop"));
  REQUIRE(cluster.apply(dir, {"--prune"}).exit_code == 0);
  // The inventory lives in the ApplySet parent Secret; kubectl's selector finds the members.
  auto parent = cluster.get("/api/v1/namespaces/kube-system/secrets/kstate");
  REQUIRE(parent.IsObject());
  std::string id = field(parent, {"metadata", "labels", "applyset.kubernetes.io/id"});
  CHECK(id.rfind("applyset-", 0) == 0);
  CHECK(field(parent, {"metadata", "annotations", "applyset.kubernetes.io/contains-group-kinds"}) == "ConfigMap");
  // An object that carries our labels but that kstate never applied is not ours to delete.
  std::string foreign = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign","namespace":"default",
    "labels":{"app.kubernetes.io/managed-by":"kstate","applyset.kubernetes.io/part-of":")" +
                        id + R"("}},"data":{"x":"y"}})";
  REQUIRE(cluster.emulator.request("POST", "/api/v1/namespaces/default/configmaps", foreign).status == 201);

  std::filesystem::remove(std::filesystem::path(dir) / "drop.yaml");
  SECTION("a file that fails to load holds prune back") {
    write_file(std::filesystem::path(dir) / "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n");
    auto held = cluster.apply(dir, {"--prune"});
    CHECK(held.exit_code == 2);
    CHECK(held.out.find("prune held back") != std::string::npos);
    CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/drop").IsNull());
  }
  SECTION("test mode lists the prune, then apply deletes exactly that object") {
    auto test = cluster.test(dir, {"--prune"});
    CHECK(test.exit_code == 1);
    CHECK(test.out.find("would be pruned") != std::string::npos);
    CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/drop").IsNull());
    auto pruned = cluster.apply(dir, {"--prune"});
    CHECK(pruned.exit_code == 0);
    CHECK(pruned.out.find("prune:ConfigMap/default/drop") != std::string::npos);
    CHECK(cluster.get("/api/v1/namespaces/default/configmaps/drop").IsNull());
    CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/keep").IsNull());
    CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/foreign").IsNull());
    // Without --prune, `kstate apply` never deletes.
    std::filesystem::remove(std::filesystem::path(dir) / "keep.yaml");
    write_file(std::filesystem::path(dir) / "other.yaml", config_map("other"));
    CHECK(cluster.apply(dir).exit_code == 0);
    CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/keep").IsNull());
  }
}

TEST_CASE("the examples folder: test mode on an empty cluster has only pending changes, then apply converges") {
  Cluster cluster;
  std::string dir = std::string(KSTATE_SOURCE_DIR) + "/examples";
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("Failed: 0") != std::string::npos);
  CHECK(test.out.find("would be updated once this run creates it") != std::string::npos);
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(field(cluster.get("/apis/apps/v1/namespaces/kstate-demo/deployments/web"), {"spec", "replicas"}) == "2");
  cluster.emulator.reset_request_log();
  auto again = cluster.apply(dir);
  CHECK(again.out.find("changed=0") != std::string::npos);
  CHECK(cluster.writes() == 0);  // the Secret's stringData no longer looks changed
  CHECK(cluster.test(dir).exit_code == 0);
}

TEST_CASE("test mode validates custom resources locally against a CRD that only this run creates") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("crd");
  write_file(std::filesystem::path(dir) / "00-crd.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1}
                color: {type: string, enum: [red, blue]}
)");
  write_file(std::filesystem::path(dir) / "10-widgets.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: good, namespace: default}
spec: {size: 2, color: red}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: bad, namespace: default}
spec:
  size: "two"
  colour: red
)");
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 2);
  CHECK(test.out.find("would be created; validated locally against the schema of CustomResourceDefinition "
                      "widgets.example.com (server validation skipped because it does not exist yet)") !=
        std::string::npos);
  // The bad one names its state, its file:line and each problem in the server's words.
  std::size_t bad = test.out.find("Name: Widget/default/bad");
  REQUIRE(bad != std::string::npos);
  std::string block = test.out.substr(test.out.rfind("----------", bad), 1200);
  CHECK(block.find("Result: False") != std::string::npos);
  CHECK(block.find("10-widgets.yaml:6") != std::string::npos);
  CHECK(block.find("invalid against the schema of CustomResourceDefinition widgets.example.com") != std::string::npos);
  CHECK(block.find(R"(spec.size: Invalid value: "string": spec.size in body must be of type integer: "string")") !=
        std::string::npos);
  CHECK(block.find(R"(unknown field "spec.colour")") != std::string::npos);
  CHECK(test.out.find("Failed: 1") != std::string::npos);
  CHECK(cluster.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").IsNull());

  // The server agrees once the CRD exists: the good Widget is created, the bad refused.
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/good").IsNull());
  CHECK(cluster.get("/apis/example.com/v1/namespaces/default/widgets/bad").IsNull());
}

TEST_CASE("test mode of a CRD update that adds a version checks that version's custom resources locally") {
  Cluster cluster;
  std::string dir = cluster.manifest_dir("crd-upgrade");
  const std::string v1 = R"(
    - name: v1
      served: true
      storage: STORAGE
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
)";
  const std::string head = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:)";
  auto with_storage = [](std::string text, const std::string& storage) {
    text.replace(text.find("STORAGE"), 7, storage);
    return text;
  };
  write_file(std::filesystem::path(dir) / "00-crd.yaml", head + with_storage(v1, "true"));
  write_file(std::filesystem::path(dir) / "10-old.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: old, namespace: default}
spec: {size: 1}
)");
  REQUIRE(cluster.apply(dir).exit_code == 0);

  // The CRD now adds v2 (with a required field), and Widgets of v2 are declared with it.
  write_file(std::filesystem::path(dir) / "00-crd.yaml", head + with_storage(v1, "false") + R"(
    - name: v2
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [shape]
              properties:
                size: {type: integer}
                shape: {type: string, enum: [round, square]}
)");
  write_file(std::filesystem::path(dir) / "20-new.yaml", R"(apiVersion: example.com/v2
kind: Widget
metadata: {name: round, namespace: default}
spec: {size: 2, shape: round}
---
apiVersion: example.com/v2
kind: Widget
metadata: {name: shapeless, namespace: default}
spec: {size: 3}
)");
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 2);  // the shapeless one
  // Not "the server does not offer kind": v2 is only served once the update is applied.
  CHECK(test.out.find("does not offer kind") == std::string::npos);
  std::size_t round = test.out.find("Name: Widget/default/round");
  REQUIRE(round != std::string::npos);
  std::string round_block = test.out.substr(test.out.rfind("----------", round), 1600);
  CHECK(round_block.find("Result: None") != std::string::npos);
  CHECK(round_block.find("validated locally against the schema of version v2 of CustomResourceDefinition "
                         "widgets.example.com") != std::string::npos);
  CHECK(round_block.find("shape: round") != std::string::npos);
  std::size_t shapeless = test.out.find("Name: Widget/default/shapeless");
  REQUIRE(shapeless != std::string::npos);
  std::string shapeless_block = test.out.substr(test.out.rfind("----------", shapeless), 900);
  CHECK(shapeless_block.find("Result: False") != std::string::npos);
  CHECK(shapeless_block.find("20-new.yaml:6") != std::string::npos);
  CHECK(shapeless_block.find("spec.shape: Required value") != std::string::npos);
  // Test mode changed nothing: the CRD still serves v1 only.
  auto crd = cluster.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
  REQUIRE(crd.IsObject());
  CHECK(json::find_path(crd, {"spec", "versions"})->Size() == 1);

  // Without the shapeless one, the test passes with changes pending, and apply agrees.
  write_file(std::filesystem::path(dir) / "20-new.yaml", R"(apiVersion: example.com/v2
kind: Widget
metadata: {name: round, namespace: default}
spec: {size: 2, shape: round}
)");
  CHECK(cluster.test(dir).exit_code == 1);
  CHECK(cluster.apply(dir).exit_code == 0);
  CHECK_FALSE(cluster.get("/apis/example.com/v2/namespaces/default/widgets/round").IsNull());
}

TEST_CASE("object_absent of a custom resource named in a version this run's CRD update adds") {
  // The objects exist (served in v1); their states name them in v2, which this run's
  // update of the CRD adds. Test mode must not call them "already absent": an object is
  // one object, whichever version reads it, and the apply deletes them.
  Cluster cluster;
  std::string dir = cluster.manifest_dir("crd-upgrade-absent");
  const std::string crd_v1 = widget_crd_v1();
  write_file(std::filesystem::path(dir) / "00-crd.yaml", crd_v1);
  // Widgets kstate keeps in two namespaces: their pairs are read with one LIST selected
  // by kstate's labels, which cannot show a Widget kstate did not make.
  write_file(std::filesystem::path(dir) / "10-keep.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: keep, namespace: default}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: keep, namespace: kube-public}
)");
  write_file(std::filesystem::path(dir) / "15-old.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: old, namespace: default}
spec: {size: 1}
)");
  REQUIRE(cluster.apply(dir).exit_code == 0);
  REQUIRE(cluster.emulator
              .request("POST", "/apis/example.com/v1/namespaces/default/widgets",
                       R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"foreign"}})")
              .status == 201);

  const std::string crd_v2 = widget_crd_adding_v2(true);
  write_file(std::filesystem::path(dir) / "00-crd.yaml", crd_v2);
  std::filesystem::remove(std::filesystem::path(dir) / "15-old.yaml");
  std::string removals;
  for (const auto& [id, version, name] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"remove-old", "v2", "old"},
                                                                      {"remove-foreign", "v2", "foreign"},
                                                                      {"remove-never-made", "v2", "never-made"},
                                                                      {"remove-unserved-version", "v3", "typo"}}) {
    removals += id + ":\n  object_absent:\n    apiVersion: example.com/" + version +
                "\n    kind: Widget\n    name: " + name + "\n    namespace: default\n";
  }
  write_file(std::filesystem::path(dir) / "20-remove.yaml", removals);
  auto block_of = [](const std::string& out, const std::string& id) {
    std::size_t at = out.find("ID: " + id + "\n");
    REQUIRE(at != std::string::npos);
    return out.substr(at, out.find("----------", at) - at);
  };
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);  // changes pending
  for (const std::string id : {"remove-old", "remove-foreign"}) {
    INFO(id);
    std::string block = block_of(test.out, id);
    CHECK(block.find("Result: None") != std::string::npos);
    CHECK(block.find("would be deleted (read through version v1: version v2 is only served once this run updates "
                     "CustomResourceDefinition widgets.example.com)") != std::string::npos);
  }
  CHECK(block_of(test.out, "remove-never-made").find("already absent") != std::string::npos);
  // v3 is served neither now nor after the update: the apply finds no such kind either.
  CHECK(block_of(test.out, "remove-unserved-version").find("already absent (the server has no kind") !=
        std::string::npos);
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/foreign").IsNull());

  // The apply agrees: the CRD gains v2 and both Widgets are deleted; the kept ones stay.
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(block_of(apply.out, "remove-unserved-version").find("already absent (the server has no kind") !=
        std::string::npos);
  CHECK(cluster.get("/apis/example.com/v2/namespaces/default/widgets/old").IsNull());
  CHECK(cluster.get("/apis/example.com/v2/namespaces/default/widgets/foreign").IsNull());
  CHECK_FALSE(cluster.get("/apis/example.com/v2/namespaces/default/widgets/keep").IsNull());
}

TEST_CASE("apply: object_absent of a custom resource in a version the CRD update adds, before discovery lists it") {
  // kube-apiserver lists the versions a CRD update adds in discovery a moment later
  // (its discovery controller catches up from an informer); the emulator here takes 60 s,
  // longer than the run, however slow the machine.
  // Until then the objects named in the new version must still be deleted, through the
  // version that serves them, not reported "already absent".
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--crd-update-delay", "60"};
  Cluster cluster(options);
  std::string dir = cluster.manifest_dir("crd-upgrade-absent-real");
  const std::string crd_v1 = widget_crd_v1();
  write_file(std::filesystem::path(dir) / "00-crd.yaml", crd_v1);
  write_file(std::filesystem::path(dir) / "15-old.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: old, namespace: default}
spec: {size: 1}
)");
  REQUIRE(cluster.apply(dir).exit_code == 0);
  REQUIRE(cluster.emulator
              .request("POST", "/apis/example.com/v1/namespaces/default/widgets",
                       R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"foreign"}})")
              .status == 201);

  const std::string crd_v2 = widget_crd_adding_v2(true);
  write_file(std::filesystem::path(dir) / "00-crd.yaml", crd_v2);
  std::filesystem::remove(std::filesystem::path(dir) / "15-old.yaml");
  std::string removals;
  for (const auto& [id, name] : std::vector<std::pair<std::string, std::string>>{
           {"remove-old", "old"}, {"remove-foreign", "foreign"}, {"remove-never-made", "never-made"}}) {
    removals += id + ":\n  object_absent:\n    apiVersion: example.com/v2\n    kind: Widget\n    name: " + name +
                "\n    namespace: default\n";
  }
  write_file(std::filesystem::path(dir) / "20-remove.yaml", removals);
  auto block_of = [](const std::string& out, const std::string& id) {
    std::size_t at = out.find("ID: " + id + "\n");
    REQUIRE(at != std::string::npos);
    return out.substr(at, out.find("----------", at) - at);
  };

  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  for (const std::string id : {"remove-old", "remove-foreign"}) {
    INFO(id);
    std::string block = block_of(apply.out, id);
    CHECK(block.find("Result: True") != std::string::npos);
    CHECK(block.find("(through version v1: version v2, which CustomResourceDefinition "
                     "widgets.example.com serves, is not in discovery yet)") != std::string::npos);
  }
  CHECK(block_of(apply.out, "remove-never-made").find("already absent") != std::string::npos);
  // Discovery still lists v1 only: the objects are read through it.
  CHECK(cluster.emulator.request("GET", "/apis/example.com/v2").status == 404);
  CHECK(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());
  CHECK(cluster.get("/apis/example.com/v1/namespaces/default/widgets/foreign").IsNull());
}

TEST_CASE("apply: object_absent in a version the CRD update adds, the update no longer serving the others") {
  // The usual migration: v1 stops being served as v2 comes in. Until discovery lists v2
  // no version the update serves can read the object: the state fails (the next run
  // deletes it), it never says "already absent", and nothing is deleted meanwhile.
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--crd-update-delay", "60"};
  Cluster cluster(options);
  std::string dir = cluster.manifest_dir("crd-migration-absent");
  write_file(std::filesystem::path(dir) / "00-crd.yaml", widget_crd_v1());
  write_file(std::filesystem::path(dir) / "15-old.yaml",
             "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: old, namespace: default}\n");
  REQUIRE(cluster.apply(dir).exit_code == 0);

  write_file(std::filesystem::path(dir) / "00-crd.yaml", widget_crd_adding_v2(false));
  std::filesystem::remove(std::filesystem::path(dir) / "15-old.yaml");
  write_file(std::filesystem::path(dir) / "20-remove.yaml",
             "remove-old:\n  object_absent:\n    apiVersion: example.com/v2\n    kind: Widget\n    name: old\n"
             "    namespace: default\n");
  auto apply = cluster.apply(dir, {"--prune"});
  CHECK(apply.exit_code == 2);
  std::size_t at = apply.out.find("ID: remove-old\n");
  REQUIRE(at != std::string::npos);
  std::string block = apply.out.substr(at, apply.out.find("----------", at) - at);
  CHECK(block.find("Result: False") != std::string::npos);
  CHECK(block.find("version v2 of kind Widget.example.com is not in the API server's discovery yet") !=
        std::string::npos);
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());

  // Run again at once (the CRD is now "already good"), discovery still behind: the same.
  auto again = cluster.apply(dir, {"--prune"});
  CHECK(again.exit_code == 2);
  CHECK(again.out.find("already absent") == std::string::npos);
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());
}

TEST_CASE("apply: object_absent in a version an earlier run's CRD update added, before discovery lists it") {
  // The CRD was updated by an earlier run (or a daemon cycle of its own file, or
  // someone else); this run only removes a Widget named in the new version. The
  // CustomResourceDefinition itself says the version is served: the object is deleted
  // through v1, not reported "already absent".
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--crd-update-delay", "60"};
  Cluster cluster(options);
  std::string crds = cluster.manifest_dir("crds");
  std::string widgets = cluster.manifest_dir("widgets");
  write_file(std::filesystem::path(crds) / "crd.yaml", widget_crd_v1());
  write_file(std::filesystem::path(widgets) / "old.yaml",
             "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: old, namespace: default}\n");
  REQUIRE(cluster.apply(crds).exit_code == 0);
  REQUIRE(cluster.apply(widgets).exit_code == 0);
  write_file(std::filesystem::path(crds) / "crd.yaml", widget_crd_adding_v2(true));
  REQUIRE(cluster.apply(crds).exit_code == 0);

  std::filesystem::remove(std::filesystem::path(widgets) / "old.yaml");
  write_file(std::filesystem::path(widgets) / "remove.yaml",
             "remove-old:\n  object_absent:\n    apiVersion: example.com/v2\n    kind: Widget\n    name: old\n"
             "    namespace: default\n"
             "remove-gadget:\n  object_absent:\n    apiVersion: example.com/v1\n    kind: Gadget\n    name: g\n"
             "    namespace: default\n");
  // Test mode says the same, and deletes nothing.
  auto test = cluster.test(widgets);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("would be deleted (through version v1: version v2, which CustomResourceDefinition "
                      "widgets.example.com serves, is not in discovery yet)") != std::string::npos);
  CHECK_FALSE(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());
  cluster.emulator.reset_request_log();
  auto apply = cluster.apply(widgets);
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.find("(through version v1: version v2, which CustomResourceDefinition widgets.example.com "
                       "serves, is not in discovery yet)") != std::string::npos);
  CHECK(cluster.get("/apis/example.com/v1/namespaces/default/widgets/old").IsNull());
  // A kind discovery does not list at all is absent, as before, with no look-up; one
  // LIST of CRDs served the whole run.
  CHECK(apply.out.find("already absent (the server has no kind Gadget.example.com)") != std::string::npos);
  CHECK(cluster.emulator.count_requests("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions") == 1);

  // A version of a listed kind no CRD serves (a typo: v3). For a user who may not list
  // CRDs discovery alone decides, as before the look-up; a server error on that LIST
  // fails the state (nothing is concluded from it).
  write_file(std::filesystem::path(widgets) / "remove.yaml",
             "remove-typo:\n  object_absent:\n    apiVersion: example.com/v3\n    kind: Widget\n    name: old\n"
             "    namespace: default\n");
  auto typo = cluster.apply(widgets);
  CHECK(typo.exit_code == 0);
  CHECK(typo.out.find("already absent (the server has no kind Widget.example.com)") != std::string::npos);
  cluster.emulator.set_faults(R"({"failFraction":1.0,"failCode":403,"method":"GET",)"
                              R"("path":"/apis/apiextensions.k8s.io/v1/customresourcedefinitions"})");
  auto forbidden = cluster.apply(widgets);
  CHECK(forbidden.exit_code == 0);
  CHECK(forbidden.out.find("already absent (the server has no kind Widget.example.com)") != std::string::npos);
  cluster.emulator.set_faults(R"({"failFraction":1.0,"failCode":500,"method":"GET",)"
                              R"("path":"/apis/apiextensions.k8s.io/v1/customresourcedefinitions"})");
  auto failing = cluster.apply(widgets);
  CHECK(failing.exit_code == 2);
  CHECK(failing.out.find("cannot tell whether kind Widget.example.com exists") != std::string::npos);
}

TEST_CASE("apply: object_absent of a kind whose CRD is not established yet is already absent") {
  kstate::testing::EmulatorOptions options;
  options.crd_establish_delay_seconds = 60;
  Cluster cluster(options);
  REQUIRE(cluster.emulator
              .request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
                           "metadata":{"name":"gadgets.example.com"},
                           "spec":{"group":"example.com","scope":"Namespaced",
                             "names":{"kind":"Gadget","plural":"gadgets","singular":"gadget","listKind":"GadgetList"},
                             "versions":[{"name":"v1","served":true,"storage":true,
                               "schema":{"openAPIV3Schema":{"type":"object"}}}]}})")
              .status == 201);
  std::string dir = cluster.manifest_dir("gadgets");
  write_file(std::filesystem::path(dir) / "remove.yaml",
             "remove-gadget:\n  object_absent:\n    apiVersion: example.com/v1\n    kind: Gadget\n    name: g\n"
             "    namespace: default\n");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.find("already absent (the server has no kind Gadget.example.com)") != std::string::npos);
}

TEST_CASE("a kind whose LIST is slow holds back only its own states: the others are written meanwhile") {
  Cluster cluster;
  std::string objects;
  for (int i = 0; i < 3; ++i) {
    objects += "---\napiVersion: v1\nkind: Secret\nmetadata: {name: slow-" + std::to_string(i) +
               ", namespace: default}\nstringData: {k: v}\n";
    objects += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: quick-" + std::to_string(i) +
               ", namespace: default}\ndata: {k: v}\n";
  }
  auto dir = cluster.work.path() / "manifests";
  write_file(dir / "objects.yaml", objects);
  // Every read of Secrets in `default` (the engine's one LIST of that pair) takes 3 s.
  cluster.emulator.set_faults(R"({"latencyMs":3000,"method":"GET","pathPrefix":"/api/v1/namespaces/default/secrets"})");
  kstate::testing::BackgroundProcess run({KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate",
                                          "--kubeconfig", cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                          (cluster.work.path() / "cache").string()});
  auto started = std::chrono::steady_clock::now();
  bool quick_written_while_running = false;
  while (std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2500)) {
    if (!cluster.get("/api/v1/namespaces/default/configmaps/quick-2").IsNull()) {
      quick_written_while_running = run.running();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int exit_code = -1;
  for (auto deadline = started + std::chrono::seconds(30); std::chrono::steady_clock::now() < deadline;) {
    if (!run.running()) {
      exit_code = run.stop(SIGTERM);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The ConfigMaps did not wait for the Secrets' LIST (before, every pair was read
  // before the first write, so one slow kind delayed them all).
  CHECK(quick_written_while_running);
  CHECK(exit_code == 0);
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/secrets/slow-2").IsNull());
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::seconds(3));
}

TEST_CASE("live objects are read while the pending inventory entries are written, and nothing is written before") {
  Cluster cluster;
  std::string objects;
  for (int i = 0; i < 4; ++i) {
    objects += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-" + std::to_string(i) +
               ", namespace: default}\ndata: {k: v}\n";
  }
  auto dir = cluster.work.path() / "manifests";
  write_file(dir / "objects.yaml", objects);
  // The ApplySet parent's PATCH (the pending entries, before anything is created) is
  // held at the server until released.
  cluster.emulator.set_faults(
      R"({"latencyMs":600000,"method":"PATCH","pathPrefix":"/api/v1/namespaces/kube-system/secrets/kstate"})");
  kstate::testing::BackgroundProcess run({KSTATE_BINARY, "apply", dir.string(), "--applyset-name", "kstate",
                                          "--kubeconfig", cluster.emulator.kubeconfig_path().string(), "--cache-dir",
                                          (cluster.work.path() / "cache").string()});
  const std::string parent = "/api/v1/namespaces/kube-system/secrets/kstate";
  const std::string config_maps = "/api/v1/namespaces/default/configmaps";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (cluster.emulator.count_delayed("PATCH", parent) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(cluster.emulator.count_delayed("PATCH", parent) == 1);
  // While the record is held: the ConfigMaps' LIST went out, no ConfigMap was written.
  while (cluster.emulator.count_requests("GET", config_maps) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(cluster.emulator.count_requests("GET", config_maps) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cluster.emulator.count_requests("PATCH", config_maps) == 0);
  CHECK(cluster.get(config_maps + "/cm-0").IsNull());
  cluster.emulator.clear_faults();
  cluster.emulator.release_delayed();
  int exit_code = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!run.running()) {
      exit_code = run.stop(SIGTERM);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(exit_code == 0);
  CHECK(cluster.emulator.count_requests("PATCH", config_maps) == 4);
  CHECK_FALSE(cluster.get(config_maps + "/cm-3").IsNull());
}

TEST_CASE("apply: a custom resource in a version the CRD update adds waits for discovery to list it") {
  // kube-apiserver serves and lists the versions a CRD update adds a moment later; the
  // emulator here takes 1 s. The Widget in v2 waits for it (reading discovery again)
  // instead of failing with "no kind", and is created in the same run.
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--crd-update-delay", "1"};
  Cluster cluster(options);
  std::string dir = cluster.manifest_dir("crd-upgrade-present-real");
  write_file(std::filesystem::path(dir) / "00-crd.yaml", widget_crd_v1());
  REQUIRE(cluster.apply(dir).exit_code == 0);

  write_file(std::filesystem::path(dir) / "00-crd.yaml", widget_crd_adding_v2(true));
  write_file(std::filesystem::path(dir) / "10-widget.yaml", R"(apiVersion: example.com/v2
kind: Widget
metadata: {name: round, namespace: default}
spec: {size: 2}
)");
  cluster.emulator.reset_request_log();
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.find("Name: Widget/default/round") != std::string::npos);
  CHECK(apply.out.find("Failed: 0") != std::string::npos);
  CHECK_FALSE(cluster.get("/apis/example.com/v2/namespaces/default/widgets/round").IsNull());
  // Discovery (the aggregated document, GET /apis) was read again while it waited: once
  // per pause (50 ms doubling), the run's own reads included.
  auto log = json::parse(cluster.emulator.request_log());
  REQUIRE(log.ok());
  int discovery_reads = 0;
  for (const auto& entry : (*log)["requests"].GetArray()) {
    discovery_reads += json::string_or(json::find(entry, "method"), "") == std::string_view("GET") &&
                       json::string_or(json::find(entry, "path"), "") == std::string_view("/apis");
  }
  UNSCOPED_INFO("GET /apis: " << discovery_reads);
  CHECK(discovery_reads >= 3);
  CHECK(discovery_reads <= 14);
}

}  // namespace apply_test
