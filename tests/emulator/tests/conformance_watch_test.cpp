// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// watches (recordings 55-58): a chunked stream of {type, object} lines ending at
// timeoutSeconds without a closing event, bookmarks only near the end of a longer
// watch, a too-old resourceVersion as an ERROR event carrying a 410 Status (HTTP
// 200), and sendInitialEvents ending its ADDED burst with an annotated bookmark.
#include <catch2/catch.hpp>
#include <future>
#include <regex>
#include <thread>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_watch_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

std::string version_of(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "resourceVersion"}), ""));
}

// The recorded path with another resourceVersion or timeoutSeconds.
std::string with_parameter(std::string path, const std::string& name, const std::string& value) {
  return std::regex_replace(path, std::regex(name + "=[0-9]+"), name + "=" + value);
}

// Each event as "TYPE Kind/name".
std::vector<std::string> outline(const json::Value& events) {
  std::vector<std::string> lines;
  for (const auto& event : events.GetArray()) {
    lines.push_back(std::string(json::string_or(json::find(event, "type"), "")) + " " +
                    std::string(json::string_or(json::find_path(event, {"object", "kind"}), "")) + "/" +
                    std::string(json::string_or(json::find_path(event, {"object", "metadata", "name"}), "")));
  }
  return lines;
}

const char* kConfigMaps = "/api/v1/namespaces/rec-1/configmaps";

}  // namespace

TEST_CASE("conformance 55, 57: a watch from a list's resourceVersion, and one from a revision too old") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  auto list = reply_json(recorder_request(emulator, "GET", kConfigMaps));
  // Another connection creates, patches and deletes a ConfigMap.
  REQUIRE(
      recorder_request(emulator, "POST", kConfigMaps,
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"watched"},"data":{"step":"1"}})")
          .status == 201);
  REQUIRE(recorder_request(emulator, "PATCH", std::string(kConfigMaps) + "/watched", R"({"data":{"step":"2"}})",
                           "application/merge-patch+json")
              .status == 200);
  REQUIRE(recorder_request(emulator, "DELETE", std::string(kConfigMaps) + "/watched").status == 200);
  auto changes = load_recording("55");
  const auto started = std::chrono::steady_clock::now();
  auto reply =
      replayer.send(changes, {with_parameter(changes.path, "resourceVersion", version_of(list)), {}, std::nullopt});
  check_reply(changes, reply);
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(1900));  // ends at timeoutSeconds

  emulator.compact();
  auto too_old = load_recording("57");
  auto expired = replayer.send(too_old);
  check_reply(too_old, expired, JsonComparison::run_to_run().ignore_value("/0/object/message"));
  CHECK(
      std::regex_match(std::string(json::string_or(json::find_path(reply_json(expired)[0], {"object", "message"}), "")),
                       std::regex("too old resource version: 1 \\([0-9]+\\)")));
}

TEST_CASE("conformance 56: a bookmark about 2 s before timeoutSeconds, when other kinds moved the revision on") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  auto list = reply_json(recorder_request(emulator, "GET", kConfigMaps));
  auto bookmark = load_recording("56");
  // timeoutSeconds 3 instead of 8: the bookmark is due after 1 s instead of 6 s.
  std::string path =
      with_parameter(with_parameter(bookmark.path, "resourceVersion", version_of(list)), "timeoutSeconds", "3");
  auto watching = std::async(std::launch::async, [&] { return replayer.send(bookmark, {path, {}, std::nullopt}); });
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(recorder_request(emulator, "POST", "/apis/coordination.k8s.io/v1/namespaces/rec-1/leases",
                             R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l)" +
                                 std::to_string(i) + R"("},"spec":{"holderIdentity":"x"}})")
                .status == 201);
  }
  check_reply(bookmark, watching.get());
}

TEST_CASE("conformance 58: sendInitialEvents lists the current objects, then a bookmark marks their end") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);
  REQUIRE(replayer.send(load_recording("10")).status == 201);
  for (const char* name : {"app-config", "app-extra", "applied", "applied-json", "from-kubectl", "typo-warn"}) {
    REQUIRE(
        recorder_request(emulator, "POST", kConfigMaps,
                         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + std::string(name) + R"("}})")
            .status == 201);
  }
  auto initial = load_recording("58");
  auto reply = replayer.send(initial);
  // The same objects by name (their content was the recording's earlier exchanges'), in the same order.
  check_reply(initial, reply, JsonComparison::run_to_run().ignore_subtree("/*/object"));
  auto events = reply_json(reply);
  CHECK(outline(events) == outline(initial.response_body));
  REQUIRE(events.Size() == initial.response_body.Size());
  CHECK(describe(JsonComparison::run_to_run().compare(initial.response_body[initial.response_body.Size() - 1],
                                                      events[events.Size() - 1])) == "");
}

}  // namespace conformance_watch_test
