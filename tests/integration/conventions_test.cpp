// Other tools' conventions end to end (issue 39 item 1): manifests carrying the marks
// of the kube-addon-manager, Flux, Helm and Argo CD, applied and pruned by `kstate
// apply --prune` against kstate-emulator. What a user sees: an EnsureExists addon
// edited by a person is not put back, an object Flux must not reconcile is not
// created, and objects Helm or Argo CD keep are never pruned.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/kstate_cli.hpp"

namespace conventions_test {

using kstate::testing::field;
using kstate::testing::KstateCluster;
using kstate::testing::state_block;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

const char* const kStorageClass = "/apis/storage.k8s.io/v1/storageclasses/standard";

std::string config_map(const std::string& name, const std::string& metadata_extra) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\n" + metadata_extra +
         "data:\n  a: \"1\"\n";
}

}  // namespace

TEST_CASE("Conventions: addon-manager modes, Flux reconcile, Helm keep and Argo CD Prune=false", "[conventions]") {
  KstateCluster cluster;
  const auto dir = cluster.work.path() / "m";
  write_file(dir / "storageclass.yaml", R"(apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  labels:
    addonmanager.kubernetes.io/mode: EnsureExists
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
)");
  write_file(dir / "ignored.yaml",
             config_map("flux-ignored", "  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n"));
  write_file(dir / "helm-kept.yaml", config_map("helm-kept", "  annotations:\n    helm.sh/resource-policy: keep\n"));
  write_file(dir / "argo-kept.yaml",
             config_map("argo-kept", "  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\n"));
  write_file(dir / "plain.yaml", config_map("plain", ""));

  auto first = cluster.apply(dir.string(), {"--prune"});
  REQUIRE(first.exit_code == 0);
  CHECK(field(cluster.get(kStorageClass), {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
        "true");
  CHECK(cluster.get("/api/v1/namespaces/default/configmaps/flux-ignored").IsNull());
  CHECK(state_block(first.out, "ConfigMap/default/flux-ignored")
            .find("left alone (kustomize.toolkit.fluxcd.io/reconcile: disabled)") != std::string::npos);

  // A person makes another class the default: the EnsureExists addon is not put back.
  auto edited = cluster.emulator.request(
      "PATCH", kStorageClass, R"({"metadata":{"annotations":{"storageclass.kubernetes.io/is-default-class":"false"}}})",
      "application/merge-patch+json");
  REQUIRE(edited.status == 200);
  cluster.emulator.reset_request_log();
  auto resync = cluster.apply(dir.string(), {"--prune"});
  CHECK(resync.exit_code == 0);
  CHECK(cluster.emulator.count_requests("PATCH", kStorageClass) == 0);
  CHECK(field(cluster.get(kStorageClass), {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
        "false");

  // The manifests of the kept objects and of the plain one go: only the plain one is pruned.
  for (const char* file : {"helm-kept.yaml", "argo-kept.yaml", "plain.yaml", "storageclass.yaml"}) {
    std::filesystem::remove(dir / file);
  }
  auto pruned = cluster.apply(dir.string(), {"--prune"});
  CHECK(pruned.exit_code == 0);
  CHECK(cluster.get("/api/v1/namespaces/default/configmaps/plain").IsNull());
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/helm-kept").IsNull());
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/argo-kept").IsNull());
  CHECK_FALSE(cluster.get(kStorageClass).IsNull());  // EnsureExists: never pruned
}

}  // namespace conventions_test
