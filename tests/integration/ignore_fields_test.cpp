// Fields left to other writers end to end (issue 39 item 2): a Deployment whose
// manifest names /spec/replicas in kstate.io/ignore-fields, scaled by an HPA-like
// writer. What a user sees: the manifest's replicas when kstate creates it, then the
// other writer's value kept, no write at resync, no difference in `kstate test`, and
// the field kept when kstate writes the object for another change.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/kstate_cli.hpp"

namespace ignore_fields_test {

using kstate::testing::field;
using kstate::testing::KstateCluster;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

const char* const kDeployment = "/apis/apps/v1/namespaces/default/deployments/web";

std::string deployment(const std::string& tier) {
  return R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {tier: )" +
         tier + R"(}
  annotations:
    kstate.io/ignore-fields: /spec/replicas
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/pause:3.9
)";
}

}  // namespace

TEST_CASE("ignore-fields: an HPA-like writer's spec.replicas is kept, with no write at resync", "[ignore-fields]") {
  KstateCluster cluster;
  const auto file = cluster.work.path() / "m" / "web.yaml";
  write_file(file, deployment("front"));
  REQUIRE(cluster.apply(file.string()).exit_code == 0);
  CHECK(field(cluster.get(kDeployment), {"spec", "replicas"}) == "2");  // set when created

  // The autoscaler scales it.
  auto scaled = cluster.emulator.request("PATCH", std::string(kDeployment) + "?fieldManager=horizontal-pod-autoscaler",
                                         R"({"spec":{"replicas":5}})", "application/merge-patch+json");
  REQUIRE(scaled.status == 200);

  cluster.emulator.reset_request_log();
  auto resync = cluster.apply(file.string());
  CHECK(resync.exit_code == 0);
  CHECK(cluster.writes() == 0);
  CHECK(field(cluster.get(kDeployment), {"spec", "replicas"}) == "5");
  auto preview = cluster.test(file.string());
  CHECK(preview.exit_code == 0);  // nothing to show
  CHECK(preview.out.find("replicas") == std::string::npos);

  // Another change is written, and replicas stays the autoscaler's.
  write_file(file, deployment("back"));
  auto changed = cluster.apply(file.string());
  CHECK(changed.exit_code == 0);
  json::Document live = cluster.get(kDeployment);
  CHECK(field(live, {"metadata", "labels", "tier"}) == "back");
  CHECK(field(live, {"spec", "replicas"}) == "5");
  CHECK(changed.out.find("replicas") == std::string::npos);  // not in the diff
  // kstate's apply gave its ownership of the field up: only the autoscaler owns it.
  std::string kstate_fields;
  for (const auto& entry : json::find_path(live, {"metadata", "managedFields"})->GetArray()) {
    if (field(entry, {"manager"}) == "kstate" && field(entry, {"operation"}) == "Apply") {
      kstate_fields = field(entry, {"fieldsV1"});
    }
  }
  CHECK(kstate_fields.find("f:tier") != std::string::npos);
  CHECK(kstate_fields.find("f:replicas") == std::string::npos);
}

}  // namespace ignore_fields_test
