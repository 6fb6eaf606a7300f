// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// deletion (recordings 70-75): a Success Status or the object depending on the kind
// and on finalizers, dry runs answered like real deletes, the Job's orphan default
// with its Warning, and deletecollection answering with what it deleted.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_delete_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

std::string config_map(const std::string& name, const std::string& labels) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","labels":)" + labels + "}}";
}

}  // namespace

TEST_CASE(
    "conformance 70, 71, 74, 75: DELETE answers a Success Status, dry runs alike, deletecollection the deleted list") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  REQUIRE(replayer.send(load_recording("11")).status == 201);
  REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces/rec-1/configmaps",
                           config_map("app-extra", R"({"tier":"db"})"))
              .status == 201);
  replay_and_check(replayer, "70");
  CHECK(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/app-extra").status == 404);
  replay_and_check(replayer, "71");
  CHECK(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/app-config").status == 200);
  replay_and_check(replayer, "74");
  for (const char* name : {"batch-0", "batch-1", "batch-2"}) {
    REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces/rec-1/configmaps",
                             config_map(name, R"({"group":"batch"})"))
                .status == 201);
  }
  replay_and_check(replayer, "75");
  auto left =
      reply_json(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps?labelSelector=group%3Dbatch"));
  CHECK(json::find(left, "items")->Empty());
}

}  // namespace conformance_delete_test
