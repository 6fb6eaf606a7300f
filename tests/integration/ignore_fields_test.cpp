// Fields left to other writers end to end (issue 39 item 2): a Deployment whose
// manifest names /spec/replicas in kstate.io/ignore-fields, scaled by an HPA-like
// writer. What a user sees: the manifest's replicas when kstate creates it, then the
// other writer's value kept, no write at resync, no difference in `kstate test`, and
// the field kept when kstate writes the object for another change; and the same for a
// field under a list item, a webhook's caBundle that cert-manager's cainjector injects.
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

const char* const kWebhook = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/policy";

// Two webhooks, each with a placeholder caBundle the cainjector replaces.
std::string webhook_configuration(const std::string& tier) {
  std::string hook = R"(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: policy
  labels: {tier: )" + tier +
                     R"(}
  annotations:
    cert-manager.io/inject-ca-from: default/policy-tls
    kstate.io/ignore-fields: /webhooks/0/clientConfig/caBundle,/webhooks/1/clientConfig/caBundle
webhooks:
)";
  for (const char* name : {"pods.policy.example.com", "services.policy.example.com"}) {
    hook += std::string("  - name: ") + name + R"(
    clientConfig:
      service: {name: policy, namespace: default, path: /validate}
      caBundle: Cg==
    rules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
    sideEffects: None
    admissionReviewVersions: [v1]
)";
  }
  return hook;
}

// The fieldsV1 of `manager`'s entry with `operation`, as JSON; "" when it has none.
std::string managed_fields_of(const json::Value& object, const std::string& manager, const std::string& operation) {
  for (const auto& entry : json::find_path(object, {"metadata", "managedFields"})->GetArray()) {
    if (field(entry, {"manager"}) == manager && field(entry, {"operation"}) == operation) {
      return field(entry, {"fieldsV1"});
    }
  }
  return "";
}

std::string ca_bundle(const json::Value& object, rapidjson::SizeType webhook) {
  const json::Value* webhooks = json::find(object, "webhooks");
  REQUIRE((webhooks != nullptr && webhooks->IsArray() && webhooks->Size() > webhook));
  return field((*webhooks)[webhook], {"clientConfig", "caBundle"});
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

TEST_CASE("ignore-fields: a webhook caBundle injected by another manager becomes its field alone, no write at resync",
          "[ignore-fields]") {
  KstateCluster cluster;
  const auto file = cluster.work.path() / "m" / "policy.yaml";
  write_file(file, webhook_configuration("front"));
  REQUIRE(cluster.apply(file.string()).exit_code == 0);
  CHECK(ca_bundle(cluster.get(kWebhook), 0) == "Cg==");  // set when created

  // cert-manager's cainjector injects the CA into both webhooks.
  auto injected =
      cluster.emulator.request("PATCH", std::string(kWebhook) + "?fieldManager=cert-manager-cainjector",
                               R"([{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"QUFBQQ=="},)"
                               R"({"op":"replace","path":"/webhooks/1/clientConfig/caBundle","value":"QkJCQg=="}])",
                               "application/json-patch+json");
  REQUIRE(injected.status == 200);

  cluster.emulator.reset_request_log();
  CHECK(cluster.apply(file.string()).exit_code == 0);
  CHECK(cluster.writes() == 0);  // nothing else changed: the injected CA is not put back

  // Another change is written: the caBundles stay the cainjector's, and kstate's apply
  // no longer lists them, so only the cainjector owns them.
  write_file(file, webhook_configuration("back"));
  auto changed = cluster.apply(file.string());
  CHECK(changed.exit_code == 0);
  CHECK(changed.out.find("caBundle") == std::string::npos);  // not in the diff
  json::Document live = cluster.get(kWebhook);
  CHECK(field(live, {"metadata", "labels", "tier"}) == "back");
  CHECK(ca_bundle(live, 0) == "QUFBQQ==");
  CHECK(ca_bundle(live, 1) == "QkJCQg==");
  const std::string kstate_fields = managed_fields_of(live, "kstate", "Apply");
  CHECK(kstate_fields.find("f:tier") != std::string::npos);
  CHECK(kstate_fields.find(R"(k:{\"name\":\"pods.policy.example.com\"})") != std::string::npos);
  CHECK(kstate_fields.find("f:service") != std::string::npos);  // the rest of each webhook stays kstate's
  CHECK(kstate_fields.find("f:caBundle") == std::string::npos);
  const std::string injector_fields = managed_fields_of(live, "cert-manager-cainjector", "Update");
  CHECK(injector_fields ==
        R"({"f:webhooks":{"k:{\"name\":\"pods.policy.example.com\"}":{"f:clientConfig":{"f:caBundle":{}}},)"
        R"("k:{\"name\":\"services.policy.example.com\"}":{"f:clientConfig":{"f:caBundle":{}}}}})");

  // A resync with nothing else changed writes nothing.
  cluster.emulator.reset_request_log();
  CHECK(cluster.apply(file.string()).exit_code == 0);
  CHECK(cluster.writes() == 0);
  CHECK(ca_bundle(cluster.get(kWebhook), 0) == "QUFBQQ==");
}

}  // namespace ignore_fields_test
