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

json::Document check(const Replayer& replayer, const char* number,
                     const JsonComparison& comparison = JsonComparison::run_to_run()) {
  auto exchange = load_recording(number);
  auto reply = replayer.send(exchange);
  CHECK(mismatch_report(exchange, compare_reply(exchange, reply, comparison)) == "");
  return reply_json(reply);
}

std::string at(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

std::string managed_time(const json::Value& object, size_t entry) {
  const json::Value* list = json::find_path(object, {"metadata", "managedFields"});
  return list != nullptr && list->IsArray() && entry < list->Size()
             ? at((*list)[static_cast<rapidjson::SizeType>(entry)], {"time"})
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

const char* kJob = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.36
        command: [echo, hello]
)";

}  // namespace

TEST_CASE(
    "conformance 20-30: apply creates, re-applies without a write, dry-runs, conflicts and removes omitted fields") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);

  auto created = check(replayer, "20");
  check(replayer, "21");
  auto unchanged = check(replayer, "22");
  CHECK(at(unchanged, {"metadata", "resourceVersion"}) == at(created, {"metadata", "resourceVersion"}));
  CHECK(managed_time(unchanged, 0) == managed_time(created, 0));
  auto changed = check(replayer, "23");
  CHECK(at(changed, {"metadata", "resourceVersion"}) != at(created, {"metadata", "resourceVersion"}));
  auto dry = check(replayer, "24");
  CHECK(at(dry, {"metadata", "resourceVersion"}) == at(changed, {"metadata", "resourceVersion"}));
  auto stored = check(replayer, "25");
  CHECK(at(stored, {"metadata", "resourceVersion"}) == at(changed, {"metadata", "resourceVersion"}));
  for (const char* number : {"26", "27", "28", "29", "30"}) {
    check(replayer, number);
  }
}

TEST_CASE("conformance 31, 34, 35, 38, 39: normalised quantities and stringData, Service defaults, immutable fields") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);

  auto sized = check(replayer, "31");
  // The same non-canonical manifest again: the server compares after normalising.
  auto again = replayer.send(load_recording("31"));
  CHECK(again.status == 200);
  CHECK(at(reply_json(again), {"metadata", "resourceVersion"}) == at(sized, {"metadata", "resourceVersion"}));

  // The allocated address differs from run to run; its shape does not.
  check(replayer, "34",
        JsonComparison::run_to_run().ignore_value("/spec/clusterIP").ignore_value("/spec/clusterIPs/0"));
  check(replayer, "38");

  const std::string secret_path = "/api/v1/namespaces/rec-1/secrets/creds?fieldManager=kstate&force=true";
  auto secret = recorder_request(emulator, "PATCH", secret_path, kSecret, "application/apply-patch+yaml");
  REQUIRE(secret.status == 201);
  auto read = check(replayer, "35");
  auto reapplied = recorder_request(emulator, "PATCH", secret_path, kSecret, "application/apply-patch+yaml");
  CHECK(reapplied.status == 200);
  CHECK(at(reply_json(reapplied), {"metadata", "resourceVersion"}) == at(read, {"metadata", "resourceVersion"}));

  REQUIRE(recorder_request(emulator, "PATCH",
                           "/apis/batch/v1/namespaces/rec-1/jobs/once?fieldManager=kstate&force=true", kJob,
                           "application/apply-patch+yaml")
              .status == 201);
  // The message quotes Go's dump of the internal PodTemplateSpec (pointers, uids): only its end is compared.
  auto refused = check(replayer, "39",
                       JsonComparison::run_to_run().ignore_value("/message").ignore_value("/details/causes/0/message"));
  CHECK_THAT(at(refused, {"message"}),
             Catch::StartsWith("Job.batch \"once\" is invalid: spec.template: Invalid value: "));
  CHECK_THAT(at(refused, {"message"}), Catch::EndsWith(": field is immutable"));
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
  check(replayer, "49");
  check(replayer, "50");
}

}  // namespace conformance_apply_test
