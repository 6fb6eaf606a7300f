// Watch event selection (the streaming itself is in http_server.cpp and covered
// by the kubectl/HTTPS tests): events after a resourceVersion, initial ADDED
// events, selectors (an object that stops or starts matching), bookmarks, metadata-only
// watches and lists, and 410 Expired once history is compacted.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace watch_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string config_map(const std::string& name, const std::string& app) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","labels":{"app":")" + app +
         R"("}}})";
}

std::vector<std::string> types_of(const std::vector<std::string>& lines) {
  std::vector<std::string> types;
  for (const auto& line : lines) {
    types.push_back(str(*json::parse(line), {"type"}));
  }
  return types;
}

}  // namespace

TEST_CASE(
    "watch from a resourceVersion streams ADDED, MODIFIED and DELETED after it, filtered by namespace and labels") {
  Harness h;
  h.post(kConfigMaps, config_map("before", "web"));
  auto start = h.get(kConfigMaps + "?watch=true&resourceVersion=" + std::to_string(h.api.store().current_version()) +
                     "&labelSelector=app=web");
  REQUIRE(start.status == 200);
  REQUIRE(start.watch.has_value());
  CHECK(start.verb == "watch");
  h.post(kConfigMaps, config_map("a", "web"));
  h.post(kConfigMaps, config_map("other", "db"));
  h.call("PATCH", kConfigMaps + "/a", R"({"data":{"x":"1"}})", "application/merge-patch+json");
  h.del(kConfigMaps + "/a");
  h.post("/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n2"}})");
  auto events = h.api.watch_events(*start.watch, start.watch->start_after);
  REQUIRE(events.has_value());
  CHECK(types_of(events->lines) == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
  CHECK(events->last == h.api.store().current_version());
  auto deleted = json::parse(events->lines[2]);
  CHECK(str(*deleted, {"object", "metadata", "name"}) == "a");
}

TEST_CASE("watch without resourceVersion starts with ADDED events for existing objects") {
  Harness h;
  h.post(kConfigMaps, config_map("a", "web"));
  h.post(kConfigMaps, config_map("b", "web"));
  auto start = h.get(kConfigMaps + "?watch=1");
  REQUIRE(start.watch);
  CHECK(start.watch->initial_listing);
  CHECK(types_of(h.api.initial_watch_events(*start.watch)) == std::vector<std::string>{"ADDED", "ADDED"});
  auto bookmark = json::parse(h.api.bookmark_line(*start.watch, 7, true));
  CHECK(str(*bookmark, {"type"}) == "BOOKMARK");
  CHECK(str(*bookmark, {"object", "metadata", "resourceVersion"}) == "7");
  CHECK(str(*bookmark, {"object", "metadata", "annotations", "k8s.io/initial-events-end"}) == "true");
}

TEST_CASE("a watch from a compacted resourceVersion gets a 410 Expired ERROR event") {
  Harness h;
  h.post(kConfigMaps, config_map("a", "web"));
  auto old_version = h.api.store().current_version() - 1;
  h.api.store().compact();
  auto start = h.get(kConfigMaps + "?watch=true&resourceVersion=" + std::to_string(old_version));
  REQUIRE(start.watch);
  CHECK_FALSE(h.api.watch_events(*start.watch, old_version).has_value());
  auto error = json::parse(h.api.expired_line(old_version));
  CHECK(str(*error, {"type"}) == "ERROR");
  CHECK(json::find_path(*error, {"object", "code"})->GetInt() == 410);
  CHECK(str(*error, {"object", "reason"}) == "Expired");
  CHECK(h.get(kConfigMaps + "?watch=true&resourceVersion=abc").status == 400);
}

TEST_CASE("the watch history is compacted every interval to the revision of the previous one, as kube-apiserver does") {
  Harness h;  // the default interval: kube-apiserver's --etcd-compaction-interval of 5 minutes
  auto watchable_from = [&h](std::uint64_t version) {
    auto start = h.get(kConfigMaps + "?watch=true&resourceVersion=" + std::to_string(version));
    REQUIRE(start.watch);
    return h.api.watch_events(*start.watch, version).has_value();
  };
  h.api.tick();  // the compactor starts: it remembers the current revision
  const std::uint64_t started_at = h.api.store().current_version();
  h.post(kConfigMaps, config_map("first", "web"));
  const std::uint64_t first_at = h.api.store().current_version();

  h.clock->advance(std::chrono::minutes(4));
  h.api.tick();
  CHECK(watchable_from(started_at - 1));  // not yet: less than an interval went by

  h.clock->advance(std::chrono::minutes(1));
  h.api.tick();  // compacts to the revision of the start, keeps the write made since
  CHECK_FALSE(watchable_from(started_at - 1));
  REQUIRE(watchable_from(started_at));
  auto start = h.get(kConfigMaps + "?watch=true&resourceVersion=" + std::to_string(started_at));
  CHECK(h.api.watch_events(*start.watch, started_at)->lines.size() == 1);

  h.post(kConfigMaps, config_map("second", "web"));
  h.clock->advance(std::chrono::minutes(5));
  h.api.tick();  // compacts to the revision of the previous compaction: "first" is history now
  CHECK_FALSE(watchable_from(started_at));
  CHECK(watchable_from(first_at));
  CHECK(h.api.store().history_size() == 1);  // only "second"

  // Without writes the history empties, and a long-running emulator stops growing.
  h.clock->advance(std::chrono::minutes(5));
  h.api.tick();
  h.clock->advance(std::chrono::minutes(5));
  h.api.tick();
  CHECK(h.api.store().history_size() == 0);
  CHECK(watchable_from(h.api.store().current_version()));
}

TEST_CASE("a compaction interval of 0 keeps the history up to its size limit") {
  ApiServer::Options options;
  options.compaction_interval = std::chrono::milliseconds(0);
  Harness h(options);
  h.api.tick();
  h.post(kConfigMaps, config_map("kept", "web"));
  h.clock->advance(std::chrono::hours(1));
  h.api.tick();
  h.clock->advance(std::chrono::hours(1));
  h.api.tick();
  CHECK(h.api.store().history_size() >= 1);
}

TEST_CASE(
    "with a label selector, an object that stops matching is DELETED (as it was, at the new version) and "
    "one that starts matching is ADDED, as kube-apiserver's watch cache sends them") {
  Harness h;
  h.post(kConfigMaps, config_map("a", "web"));
  auto start = h.get(kConfigMaps + "?watch=true&resourceVersion=" + std::to_string(h.api.store().current_version()) +
                     "&labelSelector=app=web");
  REQUIRE(start.watch);
  h.call("PATCH", kConfigMaps + "/a", R"({"metadata":{"labels":{"app":"db"}}})", "application/merge-patch+json");
  const auto left_at = h.api.store().current_version();
  h.call("PATCH", kConfigMaps + "/a", R"({"data":{"x":"1"}})", "application/merge-patch+json");  // not matching
  h.call("PATCH", kConfigMaps + "/a", R"({"metadata":{"labels":{"app":"web"}}})", "application/merge-patch+json");
  auto events = h.api.watch_events(*start.watch, start.watch->start_after);
  REQUIRE(events.has_value());
  REQUIRE(types_of(events->lines) == std::vector<std::string>{"DELETED", "ADDED"});
  auto deleted = json::parse(events->lines[0]);
  CHECK(str(*deleted, {"object", "metadata", "labels", "app"}) == "web");  // the object before the change
  CHECK(str(*deleted, {"object", "metadata", "resourceVersion"}) == std::to_string(left_at));
  auto added = json::parse(events->lines[1]);
  CHECK(str(*added, {"object", "data", "x"}) == "1");
}

TEST_CASE("Accept as=PartialObjectMetadata: lists, gets, watch events and bookmarks carry metadata only") {
  Harness h;
  h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"web"}},)"
                      R"("data":{"key":"top-secret-value-42"}})");
  const std::string accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
  auto list = h.call("GET", kConfigMaps + "?labelSelector=app=web", "", "application/json", Harness::admin(), accept);
  REQUIRE(list.status == 200);
  auto listed = json::parse(list.body);
  CHECK(str(*listed, {"kind"}) == "PartialObjectMetadataList");
  CHECK(str(*listed, {"apiVersion"}) == "meta.k8s.io/v1");
  CHECK(str(*listed, {"metadata", "resourceVersion"}) == std::to_string(h.api.store().current_version()));
  const auto& item = (*json::find(*listed, "items"))[0];
  CHECK(str(item, {"kind"}) == "PartialObjectMetadata");
  CHECK(str(item, {"metadata", "name"}) == "a");
  CHECK(json::find_path(item, {"metadata", "managedFields"}) != nullptr);
  CHECK(json::find(item, "data") == nullptr);
  CHECK(list.body.find("top-secret-value-42") == std::string::npos);  // (field names appear in managedFields)

  auto one = h.call("GET", kConfigMaps + "/a", "", "application/json", Harness::admin(), accept);
  CHECK(str(*json::parse(one.body), {"kind"}) == "PartialObjectMetadata");
  CHECK(one.body.find("top-secret-value-42") == std::string::npos);

  auto start =
      h.call("GET", kConfigMaps + "?watch=true&resourceVersion=" + str(*listed, {"metadata", "resourceVersion"}), "",
             "application/json", Harness::admin(), accept);
  REQUIRE(start.watch);
  h.call("PATCH", kConfigMaps + "/a", R"({"data":{"x":"1"}})", "application/merge-patch+json");
  auto events = h.api.watch_events(*start.watch, start.watch->start_after);
  REQUIRE(events.has_value());
  REQUIRE(events->lines.size() == 1);
  auto modified = json::parse(events->lines[0]);
  CHECK(str(*modified, {"type"}) == "MODIFIED");
  CHECK(str(*modified, {"object", "kind"}) == "PartialObjectMetadata");
  CHECK(json::find_path(*modified, {"object", "data"}) == nullptr);
  auto bookmark = json::parse(h.api.bookmark_line(*start.watch, 9, false));
  CHECK(str(*bookmark, {"object", "kind"}) == "PartialObjectMetadata");
  CHECK(str(*bookmark, {"object", "metadata", "resourceVersion"}) == "9");
}

}  // namespace watch_test
