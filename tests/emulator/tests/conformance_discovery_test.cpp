// Conformance with the recorded kube-apiserver 1.32 (tests/emulator/recordings/):
// version and discovery (recordings 01-09, 63): legacy and aggregated documents,
// the aggregated one's Content-Type, ETag, Cache-Control and Vary, 304 for a
// matching If-None-Match, a legacy resource list, an unknown group's text/plain
// 404, and the OpenAPI v3 index. The recorded cluster had other tenants (the
// example.com group) and serves autoscaling/v1, which the emulator does not
// (tests/emulator/README.md): those entries are taken out of the expected answers.
#include <catch2/catch.hpp>
#include <regex>

#include "tests/emulator/tests/recordings.hpp"

namespace conformance_discovery_test {

using namespace kstate;
using namespace kstate::emulator::test;
using kstate::testing::Emulator;

namespace {

bool other_tenant(const json::Value& item) {
  auto name =
      json::string_or(json::find(item, "name"), json::string_or(json::find_path(item, {"metadata", "name"}), ""));
  return name == "example.com";
}

bool autoscaling_v1(const json::Value& version) {
  auto name = json::string_or(json::find(version, "version"), "");
  return name == "v1";
}

// Removes autoscaling's v1 from a group list (legacy "groups", aggregated "items").
void without_autoscaling_v1(json::Value& document, const char* list, const char* name_path) {
  json::Value* groups = json::find(document, list);
  REQUIRE(groups != nullptr);
  for (auto& group : groups->GetArray()) {
    auto name = std::string_view(name_path) == "name"
                    ? json::string_or(json::find(group, "name"), "")
                    : json::string_or(json::find_path(group, {"metadata", "name"}), "");
    if (name == "autoscaling") {
      CHECK(erase_items(group, "/versions", autoscaling_v1) == 1);
    }
  }
}

}  // namespace

TEST_CASE("conformance 01-09: version, legacy and aggregated discovery, 304, unknown groups, the OpenAPI index") {
  Emulator emulator(conformance_emulator());
  Replayer replayer(emulator);

  auto version = load_recording("01");
  check_reply(version, replayer.send(version),
              JsonComparison::run_to_run()  // build information of the recorded binary
                  .ignore_value("/gitVersion")
                  .ignore_value("/gitCommit")
                  .ignore_value("/buildDate")
                  .ignore_value("/goVersion"));
  CHECK(json::string_or(json::find(reply_json(replayer.send(version)), "gitVersion"), "") == "v1.32.0");

  auto api = load_recording("02");
  check_reply(api, replayer.send(api),
              JsonComparison::run_to_run().ignore_value("/serverAddressByClientCIDRs/0/serverAddress"));
  auto addresses = reply_json(replayer.send(api));
  const json::Value* listed = json::find(addresses, "serverAddressByClientCIDRs");
  REQUIRE(listed != nullptr);
  REQUIRE(listed->Size() == 1);
  CHECK(json::string_or(json::find((*listed)[0], "serverAddress"), "") ==
        emulator.url().substr(std::string("https://").size()));

  auto groups = load_recording("03");
  CHECK(erase_items(groups.response_body, "/groups", other_tenant) == 1);
  without_autoscaling_v1(groups.response_body, "groups", "name");
  check_reply(groups, replayer.send(groups));

  auto aggregated = load_recording("04");
  CHECK(erase_items(aggregated.response_body, "/items", other_tenant) == 1);
  without_autoscaling_v1(aggregated.response_body, "items", "metadata");
  auto aggregated_reply = replayer.send(aggregated);
  check_reply(aggregated, aggregated_reply);
  CHECK(std::regex_match(aggregated_reply.headers["etag"], std::regex("\"[0-9A-F]{128}\"")));

  // The same document again with its ETag: 304, no body.
  auto unchanged = load_recording("05");
  check_reply(unchanged,
              replayer.send(unchanged, {std::nullopt, {{"If-None-Match", aggregated_reply.headers["etag"]}}, {}}));

  auto core = load_recording("06");
  auto core_reply = replayer.send(core);
  check_reply(core, core_reply);
  CHECK(core_reply.headers["etag"] != aggregated_reply.headers["etag"]);

  for (const char* number : {"07", "08"}) {
    auto exchange = load_recording(number);
    check_reply(exchange, replayer.send(exchange));
  }

  // The OpenAPI index: every path the emulator serves, with a content hash (the
  // recording keeps the first 20 of 46; .well-known/openid-configuration is not served).
  auto index = load_recording("09");
  auto index_reply = replayer.send(index);
  check_reply(index, index_reply, JsonComparison().ignore_subtree("/paths"));
  auto paths = reply_json(index_reply);
  for (const auto& member : json::find(index.response_body, "paths")->GetObject()) {
    std::string path = member.name.GetString();
    if (path.starts_with(".well-known") || path == "apis/autoscaling/v1") {
      continue;
    }
    INFO(path);
    const json::Value* entry = json::find(*json::find(paths, "paths"), path);
    REQUIRE(entry != nullptr);
    CHECK(std::regex_match(std::string(json::string_or(json::find(*entry, "serverRelativeURL"), "")),
                           std::regex("/openapi/v3/" + path + "\\?hash=[0-9A-F]{128}")));
  }
}

}  // namespace conformance_discovery_test
