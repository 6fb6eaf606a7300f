// Salt state files in the MetalK8s style end to end (issue 39 item 4): `include:` by
// SLS name, `name:` as the manifest's path, require_in, onchanges and watch, run with
// `kstate apply|test` against kstate-emulator. What a user sees: the order and the
// objects in the cluster, a state not run when nothing it runs on changed, and a
// watching Deployment restarted (as `kubectl rollout restart` does) only when the
// state it watches changed something.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/kstate_cli.hpp"

namespace salt_requisites_test {

using kstate::testing::field;
using kstate::testing::KstateCluster;
using kstate::testing::state_block;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

const char* const kConfigPath = "/api/v1/namespaces/web/configmaps/web-config";
const char* const kDeploymentPath = "/apis/apps/v1/namespaces/web/deployments/web";
const char* const kRecordPath = "/api/v1/namespaces/web/configmaps/config-changed";
const char* const kRestartedAt = "kubectl.kubernetes.io/restartedAt";

std::string config_file(const std::string& level) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: web\ndata:\n  level: " + level +
         "\n";
}

// salt/web/init.sls includes its siblings; the manifests are files next to them.
std::string write_tree(KstateCluster& cluster) {
  const auto root = cluster.work.path() / "salt" / "web";
  write_file(root / "namespace.sls", R"(Create web namespace:
  metalk8s_kubernetes.object_present:
    - name: files/namespace.yaml
)");
  write_file(root / "config.sls", R"(include:
  - .namespace

Create web config:
  metalk8s_kubernetes.object_present:
    - name: files/config.yaml
    - require:
      - sls: web.namespace
)");
  write_file(root / "init.sls", R"(include:
  - .namespace
  - web.config

Create web deployment:
  metalk8s_kubernetes.object_present:
    - name: files/deployment.yaml
    - watch:
      - metalk8s_kubernetes: Create web config

Record config change:
  metalk8s_kubernetes.object_present:
    - manifest:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: config-changed, namespace: web}
        data: {by: salt-onchanges}
    - onchanges:
      - Create web config

Web quota first:
  metalk8s_kubernetes.object_present:
    - manifest:
        apiVersion: v1
        kind: ResourceQuota
        metadata: {name: web, namespace: web}
        spec: {hard: {pods: "10"}}
    - require_in:
      - Create web config
)");
  write_file(root / "files" / "namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n");
  write_file(root / "files" / "config.yaml", config_file("info"));
  write_file(root / "files" / "deployment.yaml", R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/pause:3.9
)");
  return (root / "init.sls").string();
}

// The position in the emulator's request log of the first write to a path starting
// with `prefix`; -1 when there is none.
int first_write(const KstateCluster& cluster, const std::string& prefix) {
  auto log = json::parse(cluster.emulator.request_log());
  REQUIRE(log.ok());
  const json::Value* requests = json::find(*log, "requests");
  REQUIRE(requests != nullptr);
  for (rapidjson::SizeType i = 0; i < requests->Size(); ++i) {
    const auto& entry = (*requests)[i];
    if (json::string_or(json::find(entry, "method"), "GET") != "GET" &&
        json::string_or(json::find(entry, "path"), "").starts_with(prefix)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string restarted_at(KstateCluster& cluster) {
  return field(cluster.get(kDeploymentPath), {"spec", "template", "metadata", "annotations", kRestartedAt});
}

}  // namespace

TEST_CASE("Salt: include, name:, require_in, onchanges and watch against the emulator", "[salt]") {
  KstateCluster cluster;
  const std::string init = write_tree(cluster);

  // First run: everything is created; a Deployment just created is not restarted.
  auto first = cluster.apply(init);
  REQUIRE(first.exit_code == 0);
  CHECK(field(cluster.get(kConfigPath), {"data", "level"}) == "info");
  CHECK_FALSE(cluster.get(kRecordPath).IsNull());  // its onchanges requisite was created
  CHECK_FALSE(cluster.get("/api/v1/namespaces/web/resourcequotas/web").IsNull());
  CHECK(restarted_at(cluster).empty());
  // require_in: the quota was written before the config it names.
  const int quota_written = first_write(cluster, "/api/v1/namespaces/web/resourcequotas");
  CHECK(quota_written >= 0);
  CHECK(quota_written < first_write(cluster, kConfigPath));

  // Nothing changed: the onchanges state does not run (its object, deleted by hand,
  // stays deleted), nothing is restarted, nothing is written.
  REQUIRE(cluster.emulator.request("DELETE", kRecordPath).status == 200);
  cluster.emulator.reset_request_log();
  auto unchanged = cluster.apply(init);
  CHECK(unchanged.exit_code == 0);
  CHECK(cluster.writes() == 0);
  CHECK(cluster.get(kRecordPath).IsNull());
  CHECK(state_block(unchanged.out, "ConfigMap/web/config-changed")
            .find("Comment: State was not run because none of the onchanges reqs changed") != std::string::npos);
  CHECK(restarted_at(cluster).empty());

  // The watched config changes: `kstate test` says the Deployment would be restarted
  // and writes nothing; `kstate apply` restarts it and runs the onchanges state.
  write_file(cluster.work.path() / "salt" / "web" / "files" / "config.yaml", config_file("debug"));
  cluster.emulator.reset_request_log();
  auto preview = cluster.test(init);
  CHECK(preview.exit_code == 1);
  CHECK(field(cluster.get(kConfigPath), {"data", "level"}) == "info");
  CHECK(state_block(preview.out, "Deployment/web/web").find("would be restarted (watch: Create web config)") !=
        std::string::npos);
  CHECK(restarted_at(cluster).empty());

  auto changed = cluster.apply(init);
  CHECK(changed.exit_code == 0);
  CHECK(field(cluster.get(kConfigPath), {"data", "level"}) == "debug");
  const std::string restarted = restarted_at(cluster);
  CHECK(restarted.size() == std::string("2026-11-27T12:00:00Z").size());
  CHECK(restarted.back() == 'Z');
  CHECK(state_block(changed.out, "Deployment/web/web").find("restarted (watch: Create web config changed)") !=
        std::string::npos);
  CHECK_FALSE(cluster.get(kRecordPath).IsNull());
  // The restart is kstate-rollout's field, not kstate's: the next apply keeps it.
  CHECK(json::dump(*json::find_path(cluster.get(kDeploymentPath), {"metadata", "managedFields"}))
            .find("\"manager\":\"kstate-rollout\"") != std::string::npos);
  cluster.emulator.reset_request_log();
  auto again = cluster.apply(init);
  CHECK(again.exit_code == 0);
  CHECK(cluster.writes() == 0);
  CHECK(restarted_at(cluster) == restarted);
}

TEST_CASE("Salt: a state that fails stops the states its require_in names, and only those", "[salt]") {
  KstateCluster cluster;
  const auto path = cluster.work.path() / "checks.sls";
  write_file(path, R"(Quota the server refuses:
  object_present:
    - manifest:
        apiVersion: v1
        kind: ResourceQuota
        metadata: {name: bad, namespace: default}
        spec: {hard: {pods: "ten"}}
    - require_in:
      - Guarded config
Guarded config:
  object_present:
    - manifest:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: guarded, namespace: default}
Free config:
  object_present:
    - manifest:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: free, namespace: default}
)");
  auto run = cluster.apply(path.string());
  CHECK(run.exit_code == 2);
  CHECK(state_block(run.out, "ConfigMap/default/guarded")
            .find("Comment: One or more requisite failed: Quota the server refuses") != std::string::npos);
  CHECK(cluster.get("/api/v1/namespaces/default/configmaps/guarded").IsNull());
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/free").IsNull());
}

}  // namespace salt_requisites_test
