// Variables end to end (issue 39 item 3): `kstate apply|test --vars-from FILE --var
// NAME=VALUE` against kstate-emulator. What a user sees: the substituted objects in the
// cluster and in `kstate test`'s diff, Secret values from variables masked, and an
// undefined variable failing its state alone (file:line, state ID, variable) with no
// prune in that run.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/kstate_cli.hpp"

namespace variables_test {

using kstate::testing::field;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

// The emulator and kstate runs (kstate_cli.hpp), with files written in its work folder.
struct Cluster : kstate::testing::KstateCluster {
  std::string path(const std::string& name) const { return (work.path() / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    write_file(work.path() / name, text);
    return path(name);
  }
};

const char* const kNodeManifests = R"(apiVersion: v1
kind: Namespace
metadata:
  name: ${NAMESPACE:=node-agents}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: agent
  namespace: node-agents
data:
  apiServer: https://${API_SERVER}:6443
  clusterDomain: ${CLUSTER_DOMAIN:=cluster.local}
  run.sh: |
    echo "$${HOME} on ${NODE_NAME}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent
  namespace: node-agents
spec:
  replicas: ${REPLICAS}
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
        - name: agent
          image: ${REGISTRY:=registry.k8s.io}/pause:3.9
---
apiVersion: v1
kind: Secret
metadata:
  name: agent-token
  namespace: node-agents
stringData:
  token: ${AGENT_TOKEN}
)";

}  // namespace

TEST_CASE("kstate apply|test --vars-from/--var: substituted objects in the cluster and in the diff, Secrets masked",
          "[variables]") {
  Cluster cluster;
  const std::string manifests = cluster.write("manifests/node.yaml", kNodeManifests);
  const std::string node_vars = cluster.write("node-1.yaml", R"(API_SERVER: 10.0.0.1
NODE_NAME: node-1
REPLICAS: 2
AGENT_TOKEN: sekret-from-vars-file
)");
  const std::string site_vars = cluster.write("site.yaml", "API_SERVER: 10.0.0.9\nREGISTRY: mirror.local\n");
  // --var wins over the files, and a later file over an earlier one.
  auto applied = cluster.kstate(
      {"apply", manifests, "--vars-from", site_vars, "--vars-from", node_vars, "--var", "REPLICAS=3", "-o", "json"});
  REQUIRE(applied.exit_code == 0);
  json::Document config_map = cluster.get("/api/v1/namespaces/node-agents/configmaps/agent");
  CHECK(field(config_map, {"data", "apiServer"}) == "https://10.0.0.1:6443");
  CHECK(field(config_map, {"data", "clusterDomain"}) == "cluster.local");
  CHECK(field(config_map, {"data", "run.sh"}) == "echo \"${HOME} on node-1\"\n");
  json::Document deployment = cluster.get("/apis/apps/v1/namespaces/node-agents/deployments/agent");
  CHECK(field(deployment, {"spec", "replicas"}) == "3");  // a number: `replicas: ${REPLICAS}` is typed
  CHECK(field(deployment, {"spec", "template", "spec", "containers"}).find("mirror.local/pause:3.9") !=
        std::string::npos);
  CHECK(applied.out.find("sekret-from-vars-file") == std::string::npos);
  CHECK(applied.err.find("sekret-from-vars-file") == std::string::npos);

  // Same values: nothing to do. New values: `kstate test` shows the substituted object.
  auto same =
      cluster.kstate({"test", manifests, "--vars-from", site_vars, "--vars-from", node_vars, "--var", "REPLICAS=3"});
  CHECK(same.exit_code == 0);
  auto changed = cluster.kstate({"test", manifests, "--vars-from", site_vars, "--vars-from", node_vars, "--var",
                                 "REPLICAS=5", "--var", "NODE_NAME=node-2", "--var", "AGENT_TOKEN=rotated-token"});
  CHECK(changed.exit_code == 1);
  CHECK(changed.out.find("-  replicas: 3\n") != std::string::npos);
  CHECK(changed.out.find("+  replicas: 5\n") != std::string::npos);
  CHECK(changed.out.find("on node-2") != std::string::npos);
  // The Secret changed, and its diff says so without showing either value.
  CHECK(changed.out.find("-  token: \"*** (before)\"\n") != std::string::npos);
  CHECK(changed.out.find("+  token: \"*** (after)\"\n") != std::string::npos);
  CHECK(changed.out.find("rotated-token") == std::string::npos);
  CHECK(changed.out.find("sekret-from-vars-file") == std::string::npos);
}

TEST_CASE("An undefined variable fails its state alone, naming file:line and the variable; no prune in that run",
          "[variables]") {
  Cluster cluster;
  cluster.write("manifests/a-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n");
  cluster.write("manifests/b-old.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: team\ndata:\n  a: \"1\"\n");
  REQUIRE(cluster.kstate({"apply", cluster.path("manifests"), "--prune"}).exit_code == 0);
  REQUIRE_FALSE(cluster.get("/api/v1/namespaces/team/configmaps/old").IsNull());

  // old.yaml is removed (its object would be pruned) and a new file has a typo.
  std::filesystem::remove(cluster.path("manifests/b-old.yaml"));
  const std::string broken = cluster.write("manifests/c-new.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: fine
  namespace: team
data:
  domain: ${DOMAIN}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
  namespace: team
data:
  domain: ${DOMIAN}
)");
  auto run = cluster.kstate({"apply", cluster.path("manifests"), "--prune", "--var", "DOMAIN=example.org"});
  CHECK(run.exit_code == 2);
  CHECK(run.out.find(broken + ":15:11: ConfigMap/team/broken: undefined variable DOMIAN in ${DOMIAN}: set it (vars, "
                              "vars-from, --var, --vars-from) or give a default, ${DOMIAN:=value}") !=
        std::string::npos);
  CHECK(field(cluster.get("/api/v1/namespaces/team/configmaps/fine"), {"data", "domain"}) == "example.org");
  CHECK(cluster.get("/api/v1/namespaces/team/configmaps/broken").IsNull());
  CHECK_FALSE(cluster.get("/api/v1/namespaces/team/configmaps/old").IsNull());  // not pruned
}

TEST_CASE("A --vars-from file that cannot be read stops the run before any request", "[variables]") {
  Cluster cluster;
  const std::string manifests =
      cluster.write("m.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS:=vars-ns}\n");
  const std::string bad = cluster.write("bad.yaml", "GOOD: x\nnot a name: y\n");
  cluster.emulator.reset_request_log();
  auto run = cluster.kstate({"apply", manifests, "--vars-from", bad});
  CHECK(run.exit_code == 2);
  CHECK(run.err == "kstate apply: --vars-from: " + bad +
                       ":2:1: \"not a name\" is not a variable name (letters, digits and _, not starting with a "
                       "digit)\n");
  CHECK(cluster.emulator.count_requests("GET", "/") == 0);
  CHECK(cluster.get("/api/v1/namespaces/vars-ns").IsNull());
  // The default applies when nothing defines NS.
  CHECK(cluster.kstate({"apply", manifests}).exit_code == 0);
  CHECK_FALSE(cluster.get("/api/v1/namespaces/vars-ns").IsNull());
}

}  // namespace variables_test
