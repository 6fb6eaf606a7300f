// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// creating, reading and listing objects (recordings 10-19). Each exchange is
// replayed after the setup its recording implies and compared as a client sees it.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_objects_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

TEST_CASE("conformance 10-19: create, conflict, not found, server defaults, dry run, lists") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  for (const char* number : {"10", "11", "12", "13", "14", "15"}) {
    replay_and_check(replayer, number);
  }
  CHECK(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/dry-only").status == 404);
  // The lists' second ConfigMap, created between the recorded exchanges.
  REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces/rec-1/configmaps",
                           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-extra","labels":{)"
                           R"("app.kubernetes.io/managed-by":"kstate","kstate.test/run":"rec-1","tier":"db"}},)"
                           R"("data":{"debug":"false"}})")
              .status == 201);
  // kube-controller-manager's kube-root-ca.crt holds the cluster's own CA.
  replay_and_check(replayer, "16", JsonComparison::run_to_run().ignore_value("/items/2/data/ca.crt"));
  for (const char* number : {"17", "18", "19"}) {
    replay_and_check(replayer, number);
  }
}

}  // namespace conformance_objects_test
