// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// what kube-controller-manager writes to Deployments and Jobs (recordings 32, 33,
// 54, 72, 73): status and the revision annotation through the status subresource,
// a re-apply after that writing nothing, the Table kubectl asks for, and the
// objects DELETE answers while finalizers hold them.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_controllers_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

// The ReplicaSet's name in the Progressing message carries a hash of the pod template.
JsonComparison deployment_comparison(const std::string& conditions) {
  return JsonComparison::run_to_run().ignore_value(conditions + "/1/message");
}

}  // namespace

TEST_CASE(
    "conformance 32, 33, 54, 72, 73: Deployment and Job status by the controllers, Table, deletion with finalizers") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  REQUIRE(replayer.send(load_recording("14")).status == 201);
  REQUIRE(replayer.send(load_recording("31")).status == 201);

  auto controlled = replay_and_check(replayer, "32", deployment_comparison("/status/conditions"));
  CHECK_THAT(text_at((*json::find_path(controlled, {"status", "conditions"}))[1], {"message"}),
             Catch::Matches("ReplicaSet \"sized-[bcdfghjklmnpqrstvwxz2456789]+\" is progressing\\."));
  auto again = replay_and_check(replayer, "33", deployment_comparison("/status/conditions"));
  CHECK(text_at(again, {"metadata", "resourceVersion"}) == text_at(controlled, {"metadata", "resourceVersion"}));

  // Rows in name order; the Age cell and the web Deployment's controller message differ run to run.
  replay_and_check(replayer, "54",
                   JsonComparison::run_to_run()
                       .ignore_value("/rows/*/cells/4")
                       .ignore_subtree("/rows/*/object/metadata/managedFields"));

  replay_and_check(replayer, "72", deployment_comparison("/status/conditions"));

  REQUIRE(recorder_request(emulator, "PATCH",
                           "/apis/batch/v1/namespaces/rec-1/jobs/once?fieldManager=kstate&force=true", kRecordedJob,
                           "application/apply-patch+yaml")
              .status == 201);
  // The generated selector and labels carry the Job's uid.
  auto comparison = JsonComparison::run_to_run()
                        .ignore_value("/metadata/labels/batch.kubernetes.io~1controller-uid")
                        .ignore_value("/metadata/labels/controller-uid")
                        .ignore_value("/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid")
                        .ignore_value("/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid")
                        .ignore_value("/spec/template/metadata/labels/controller-uid")
                        .ignore_value("/status/startTime");
  auto job = replay_and_check(replayer, "73", comparison);
  CHECK(text_at(job, {"metadata", "uid"}) ==
        text_at(job, {"spec", "selector", "matchLabels", "batch.kubernetes.io/controller-uid"}));
  // The garbage collector orphans the Job's Pods (none here), then the Job goes.
  CHECK(eventually(
      [&] { return recorder_request(emulator, "GET", "/apis/batch/v1/namespaces/rec-1/jobs/once").status == 404; }));
}

}  // namespace conformance_controllers_test
