// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// namespace termination (recordings 42, 76-78): DELETE answers Terminating, writes
// into the namespace are 403 NamespaceTerminating, the namespace controller comes
// after its delay, reports in status.conditions what keeps the namespace, and
// removes it once its content is gone.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_namespace_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

TEST_CASE("conformance 42, 76: a namespace held by a finalizer inside it refuses new content and says why") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces",
                           R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"rec-1-held",)"
                           R"("labels":{"kstate.test/recorder":"true"}}})")
              .status == 201);
  const std::string held = "/api/v1/namespaces/rec-1-held/configmaps/hold";
  REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces/rec-1-held/configmaps",
                           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hold",)"
                           R"("finalizers":["kstate.test/hold"]}})")
              .status == 201);
  REQUIRE(recorder_request(emulator, "DELETE", "/api/v1/namespaces/rec-1-held").status == 200);
  replay_and_check(replayer, "42");
  // A second DELETE of a terminating namespace is refused.
  CHECK(recorder_request(emulator, "DELETE", "/api/v1/namespaces/rec-1-held").status == 409);

  REQUIRE(eventually([&] {
    auto object = reply_json(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1-held"));
    return json::find_path(object, {"status", "conditions"}) != nullptr;
  }));
  replay_and_check(replayer, "76");

  // Once the finalizer is gone, the namespace goes at the controller's next look.
  REQUIRE(
      recorder_request(emulator, "PATCH", held, R"({"metadata":{"finalizers":null}})", "application/merge-patch+json")
          .status == 200);
  CHECK(eventually([&] { return recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1-held").status == 404; }));
}

TEST_CASE("conformance 77, 78: DELETE answers Terminating, the namespace stays until the controller's pass") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  REQUIRE(recorder_request(emulator, "POST", "/api/v1/namespaces/rec-1/configmaps",
                           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"}})")
              .status == 201);
  const auto deleted_at = std::chrono::steady_clock::now();
  replay_and_check(replayer, "77");
  // Before the controller's first pass (--namespace-deletion-delay): Terminating, no conditions.
  replay_and_check(replayer, "78");
  CHECK(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/app-config").status == 200);
  REQUIRE(eventually([&] { return recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1").status == 404; }));
  CHECK(std::chrono::steady_clock::now() - deleted_at >= std::chrono::milliseconds(600));
  CHECK(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/app-config").status == 404);
}

}  // namespace conformance_namespace_test
