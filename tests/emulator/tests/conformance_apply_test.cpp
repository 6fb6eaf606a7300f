// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// server-side apply (recordings 20-35, 38, 39, 49, 50): create and no-op re-apply,
// dry run, unknown fields, conflicts between managers, fields a manager stops
// applying, quantities and Secret stringData normalised without a write, Service
// defaults, immutable fields, and the takeover of an object made by `kubectl apply`.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_apply_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

std::string managed_time(const json::Value& object, size_t entry) {
  const json::Value* list = json::find_path(object, {"metadata", "managedFields"});
  return list != nullptr && list->IsArray() && entry < list->Size()
             ? text_at((*list)[static_cast<rapidjson::SizeType>(entry)], {"time"})
             : std::string("<none>");
}

const char* kSecret = R"(apiVersion: v1
kind: Secret
metadata:
  name: creds
type: Opaque
stringData:
  username: admin
  password: example-not-secret
)";

}  // namespace

TEST_CASE(
    "conformance 20-30: apply creates, re-applies without a write, dry-runs, conflicts and removes omitted fields") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);

  auto created = replay_and_check(replayer, "20");
  replay_and_check(replayer, "21");
  auto unchanged = replay_and_check(replayer, "22");
  CHECK(text_at(unchanged, {"metadata", "resourceVersion"}) == text_at(created, {"metadata", "resourceVersion"}));
  CHECK(managed_time(unchanged, 0) == managed_time(created, 0));
  auto changed = replay_and_check(replayer, "23");
  CHECK(text_at(changed, {"metadata", "resourceVersion"}) != text_at(created, {"metadata", "resourceVersion"}));
  auto dry = replay_and_check(replayer, "24");
  CHECK(text_at(dry, {"metadata", "resourceVersion"}) == text_at(changed, {"metadata", "resourceVersion"}));
  auto stored = replay_and_check(replayer, "25");
  CHECK(text_at(stored, {"metadata", "resourceVersion"}) == text_at(changed, {"metadata", "resourceVersion"}));
  for (const char* number : {"26", "27", "28", "29", "30"}) {
    replay_and_check(replayer, number);
  }
}

TEST_CASE("conformance 31, 34, 35, 38, 39: normalised quantities and stringData, Service defaults, immutable fields") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);

  replay_and_check(replayer, "31");
  // The same non-canonical manifest again: the server compares after normalising, and
  // writes nothing (the Deployment controller's status write came in between).
  auto sized = reply_json(recorder_request(emulator, "GET", "/apis/apps/v1/namespaces/rec-1/deployments/sized"));
  auto again = replayer.send(load_recording("31"));
  CHECK(again.status == 200);
  CHECK(text_at(reply_json(again), {"metadata", "resourceVersion"}) == text_at(sized, {"metadata", "resourceVersion"}));

  // The allocated address differs from run to run; its shape does not.
  replay_and_check(replayer, "34",
                   JsonComparison::run_to_run().ignore_value("/spec/clusterIP").ignore_value("/spec/clusterIPs/0"));
  replay_and_check(replayer, "38");

  const std::string secret_path = "/api/v1/namespaces/rec-1/secrets/creds?fieldManager=kstate&force=true";
  auto secret = recorder_request(emulator, "PATCH", secret_path, kSecret, "application/apply-patch+yaml");
  REQUIRE(secret.status == 201);
  auto read = replay_and_check(replayer, "35");
  auto reapplied = recorder_request(emulator, "PATCH", secret_path, kSecret, "application/apply-patch+yaml");
  CHECK(reapplied.status == 200);
  CHECK(text_at(reply_json(reapplied), {"metadata", "resourceVersion"}) ==
        text_at(read, {"metadata", "resourceVersion"}));

  REQUIRE(recorder_request(emulator, "PATCH",
                           "/apis/batch/v1/namespaces/rec-1/jobs/once?fieldManager=kstate&force=true", kRecordedJob,
                           "application/apply-patch+yaml")
              .status == 201);
  // The message quotes Go's dump of the internal PodTemplateSpec (pointers, uids): only its end is compared.
  auto refused = replay_and_check(
      replayer, "39", JsonComparison::run_to_run().ignore_value("/message").ignore_value("/details/causes/0/message"));
  CHECK_THAT(text_at(refused, {"message"}),
             Catch::StartsWith("Job.batch \"once\" is invalid: spec.template: Invalid value: "));
  CHECK_THAT(text_at(refused, {"message"}), Catch::EndsWith(": field is immutable"));
}

TEST_CASE("conformance 49, 50: an object made by kubectl's client-side apply, then taken over by a forced apply") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  // What `kubectl apply -f` (v1.32, client-side) sends for a new object.
  const std::string last_applied =
      R"({\"apiVersion\":\"v1\",\"data\":{\"one\":\"1\",\"three\":\"3\",\"two\":\"2\"},\"kind\":\"ConfigMap\",)"
      R"(\"metadata\":{\"annotations\":{},\"name\":\"from-kubectl\",\"namespace\":\"rec-1\"}}\n)";
  auto created = emulator.request(
      "POST", "/api/v1/namespaces/rec-1/configmaps?fieldManager=kubectl-client-side-apply&fieldValidation=Strict",
      R"({"apiVersion":"v1","data":{"one":"1","three":"3","two":"2"},"kind":"ConfigMap","metadata":{"annotations":)"
      R"({"kubectl.kubernetes.io/last-applied-configuration":")" +
          last_applied + R"("},"name":"from-kubectl","namespace":"rec-1"}})",
      "application/json", std::nullopt, {{"User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/dispatcher"}});
  REQUIRE(created.status == 201);
  replay_and_check(replayer, "49");
  replay_and_check(replayer, "50");
}

}  // namespace conformance_apply_test
