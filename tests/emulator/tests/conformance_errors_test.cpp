// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// the error answers a client must understand (recordings 36, 37, 40-48, 51-53):
// 422 Invalid with causes, 409 Conflict on a stale resourceVersion, 404 about a
// missing namespace, 401/403 for identities, 405, 415, 400 for a bad selector,
// and Lease MicroTimes (exactly 6 fractional digits).
#include <catch2/catch.hpp>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_errors_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

// The recorded PUT body with this run's uid and the given resourceVersion.
std::string put_body(const RecordedExchange& exchange, const json::Value& live, const std::string& version) {
  auto body = json::parse(exchange.request_body);
  REQUIRE(body);
  auto& allocator = body->GetAllocator();
  json::Value& metadata = *json::find(*body, "metadata");
  json::set_string(metadata, "uid", json::string_or(json::find_path(live, {"metadata", "uid"}), ""), allocator);
  json::set_string(metadata, "resourceVersion", version, allocator);
  return json::dump(*body);
}

std::string version_of(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "resourceVersion"}), ""));
}

}  // namespace

TEST_CASE(
    "conformance 36, 37, 40, 41, 43-48: invalid objects, stale writes, missing namespaces, identities, bad requests") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  REQUIRE(replayer.send(load_recording("11")).status == 201);
  replay_and_check(replayer, "36");
  replay_and_check(replayer, "37");

  // A first PUT of what a GET returned succeeds; the same PUT again is stale.
  auto read = reply_json(recorder_request(emulator, "GET", "/api/v1/namespaces/rec-1/configmaps/app-config"));
  auto stale = load_recording("40");
  const std::string first_version = version_of(read);
  auto first = recorder_request(emulator, "PUT", "/api/v1/namespaces/rec-1/configmaps/app-config",
                                put_body(stale, read, first_version));
  REQUIRE(first.status == 200);
  CHECK(version_of(reply_json(first)) != first_version);
  replay_and_check(replayer, stale, JsonComparison::run_to_run(),
                   {std::nullopt, {}, put_body(stale, read, first_version)});
  // Without a resourceVersion a PUT is unconditional.
  auto unconditional =
      recorder_request(emulator, "PUT", "/api/v1/namespaces/rec-1/configmaps/app-config", put_body(stale, read, ""));
  CHECK(unconditional.status == 200);

  replay_and_check(replayer, "41");
  for (const char* number : {"43", "44", "45", "46", "47", "48"}) {
    replay_and_check(replayer, number);
  }
}

TEST_CASE("conformance 51-53: Lease MicroTimes, and a stale takeover is 409") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  auto lease = replay_and_check(replayer, "51");
  replay_and_check(replayer, "52");
  // Without fraction digits a MicroTime is refused too.
  auto no_fraction =
      recorder_request(emulator, "POST", "/apis/coordination.k8s.io/v1/namespaces/rec-1/leases",
                       R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"seconds"},)"
                       R"("spec":{"holderIdentity":"a","acquireTime":"2026-01-01T00:00:00Z"}})");
  CHECK(no_fraction.status == 400);
  CHECK(json::string_or(json::find(reply_json(no_fraction), "message"), "") ==
        "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"2026-01-01T00:00:00Z\" as "
        "\"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\"");

  // The holder renews first, so the other candidate's resourceVersion is stale.
  auto takeover = load_recording("53");
  const std::string created_version = version_of(lease);
  auto renewed = recorder_request(emulator, "PUT", "/apis/coordination.k8s.io/v1/namespaces/rec-1/leases/kstate-leader",
                                  put_body(takeover, lease, created_version));
  REQUIRE(renewed.status == 200);
  replay_and_check(replayer, takeover, JsonComparison::run_to_run(),
                   {std::nullopt, {}, put_body(takeover, lease, created_version)});
}

}  // namespace conformance_errors_test
