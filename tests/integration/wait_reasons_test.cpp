// A wait that runs out says why (issue 34, item 6), as a user of `kstate apply` reads
// it: the result quotes what the object reports about itself, here as the emulator's
// controllers report it the way kube-controller-manager does: a Namespace held by a
// finalizer on its content names it in its status.conditions (recording 76), a
// Deployment whose pods never come names its Available and Progressing conditions
// (recording 32).
#include <catch2/catch.hpp>

#include "tests/support/kstate_cli.hpp"

namespace wait_reasons_test {

using kstate::testing::write_file;
using Cluster = kstate::testing::KstateCluster;

namespace {

// The comment of a state in the text report ("" when it is not there).
std::string comment_of(const std::string& report, const std::string& name) {
  const std::string block = kstate::testing::state_block(report, name);
  const std::size_t comment = block.find("Comment: ");
  if (comment == std::string::npos) {
    return {};
  }
  return block.substr(comment + 9, block.find("\n      Source: ", comment) - comment - 9);
}

}  // namespace

TEST_CASE("object_absent of a Namespace whose content a finalizer holds: the wait quotes the namespace's conditions") {
  Cluster cluster;
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace",
    "metadata":{"name":"held"}})")
              .status == 201);
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces/held/configmaps", R"({"apiVersion":"v1",
    "kind":"ConfigMap","metadata":{"name":"kept","finalizers":["kstate.test/hold"]},"data":{"a":"b"}})")
              .status == 201);
  const std::string dir = cluster.manifest_dir("remove");
  write_file(std::filesystem::path(dir) / "remove.yaml", R"(remove-held:
  object_absent:
    apiVersion: v1
    kind: Namespace
    name: held
    wait: {timeout: 3}
)");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  const std::string comment = comment_of(apply.out, "Namespace/held");
  CHECK(comment ==
        "timed out after 3 s waiting for Namespace/held to be deleted: terminating; conditions: "
        "NamespaceContentRemaining=True (SomeResourcesRemain: Some resources are remaining: configmaps. has 1 "
        "resource instances), NamespaceFinalizersRemaining=True (SomeFinalizersRemain: Some content in the "
        "namespace has finalizers remaining: kstate.test/hold in 1 resource instances); finalizers: kubernetes");
}

TEST_CASE("a readiness wait on a Deployment that never becomes available quotes its Available and Progressing") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("web");
  write_file(std::filesystem::path(dir) / "web.yaml", R"(web:
  object_present:
    wait: {timeout: 2}
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: default}
      spec:
        replicas: 1
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: web, image: nginx}]}
)");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  const std::string comment = comment_of(apply.out, "Deployment/default/web");
  // The emulator, as a cluster without nodes (recording 32), never makes the pods available.
  CHECK_THAT(comment, Catch::StartsWith("timed out after 2 s waiting for Deployment/default/web to be ready: Waiting "
                                        "for deployment \"web\" rollout to finish: 0 of 1 updated replicas are "
                                        "available...; conditions: Available=False (MinimumReplicasUnavailable: "
                                        "Deployment does not have minimum availability.), Progressing=True "
                                        "(ReplicaSetUpdated: ReplicaSet \"web-"));
  CHECK_THAT(comment, Catch::EndsWith("\" is progressing.)"));
}

}  // namespace wait_reasons_test
