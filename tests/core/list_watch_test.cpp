// ListWatcher: no change is missed when a watch drops or the server answers 410 Gone.
// First with the fake transport (exact request sequence: list, watch from the list's
// resourceVersion, re-watch from the last one seen, relist after 410 with the
// differences as events), then against kstate-emulator while objects change, with the
// stream dropped (/emulator/drop-watches) and the history compacted (410 Expired).
#include "core/list_watch.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tests/support/api_resources.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/fake_transport.hpp"

namespace list_watch_test {

using namespace kstate;
using kstate::testing::Emulator;
using kstate::testing::FakeTransport;
using kstate::testing::query_value;

namespace {

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

std::string object(const std::string& name, int version, const std::string& value = "x") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + std::to_string(version) + R"("},"data":{"key":")" + value +
         R"("}})";
}

std::string line(const std::string& type, const std::string& body) {
  return R"({"type":")" + type + R"(","object":)" + body + "}\n";
}

std::string list_body(const std::vector<std::string>& items, int version) {
  std::string joined;
  for (const auto& item : items) {
    joined += (joined.empty() ? "" : ",") + item;
  }
  return R"({"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":")" + std::to_string(version) +
         R"("},"items":[)" + joined + "]}";
}

std::string describe(const WatchEvent& event) {
  return std::string(to_string(event.type)) + " " +
         std::string(json::string_or(json::find_path(event.object, {"metadata", "name"}), "")) + " " +
         std::string(json::string_or(json::find_path(event.object, {"data", "key"}), ""));
}

}  // namespace

TEST_CASE("ListWatcher re-watches after a drop and relists after 410 without losing a change", "[watch][fake]") {
  FakeTransport fake;
  fake.respond(200, list_body({object("a", 1), object("b", 2)}, 2));
  fake.stream({line("MODIFIED", object("a", 3, "y"))}, Error(ErrorKind::connection, "connection reset"));
  fake.stream({line("ADDED", object("c", 4)),
               line("BOOKMARK", R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5"}})"),
               line("ERROR", R"json({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired",)json"
                             R"json("message":"too old resource version: 5 (9)","code":410})json")});
  // While the watcher was away: c modified, d added, b deleted.
  fake.respond(200, list_body({object("a", 3, "y"), object("c", 6, "z"), object("d", 7)}, 9));
  fake.stream({line("DELETED", object("a", 10, "y"))});  // then a clean end
  fake.refuse_stream(Error(ErrorKind::forbidden, "stop here"));

  DynamicClient client(fake);
  ListWatcher watcher(client, configmaps(), "default", ListOptions{});
  boost::asio::io_context io;
  std::vector<std::string> seen;
  auto last_error = run_sync(io, [&]() -> asio::awaitable<Error> {
    for (;;) {
      auto event = co_await watcher.next();
      if (!event) {
        co_return event.error();
      }
      seen.push_back(describe(*event));
    }
  }());
  CHECK(last_error.kind == ErrorKind::forbidden);
  CHECK(seen == std::vector<std::string>{"ADDED a x", "ADDED b x", "MODIFIED a y", "ADDED c x", "MODIFIED c z",
                                         "ADDED d x", "DELETED b x", "DELETED a y"});

  // list; watch from 2; from 3 (after the drop); list (410); watch from 9; from 10 (clean end).
  const auto& requests = fake.requests();
  REQUIRE(requests.size() == 6);
  CHECK(query_value(requests[0], "watch").empty());
  CHECK(query_value(requests[1], "watch") == "true");
  CHECK(query_value(requests[1], "resourceVersion") == "2");
  CHECK(query_value(requests[1], "allowWatchBookmarks") == "true");
  CHECK(query_value(requests[2], "resourceVersion") == "3");
  CHECK(query_value(requests[3], "watch").empty());
  CHECK(query_value(requests[4], "resourceVersion") == "9");
  CHECK(query_value(requests[5], "resourceVersion") == "10");
  CHECK(watcher.stats().lists == 2);
  CHECK(watcher.stats().relists == 1);
  CHECK(watcher.stats().rewatches == 2);
  CHECK(watcher.stats().bookmarks == 1);
  CHECK(watcher.stats().synthesized == 3);
  CHECK(watcher.objects().size() == 2);  // c and d
}

TEST_CASE("ListWatcher against the emulator: dropped streams and compaction while objects change",
          "[watch][emulator]") {
  Emulator emulator(kstate::testing::without_namespace_controllers());
  boost::asio::io_context io;
  KubeconfigSources sources;
  sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  TransportOptions options;
  options.request_timeout = std::chrono::seconds(10);
  auto made = make_client(io.get_executor(), sources, options);
  REQUIRE(made.ok());
  auto& client = *made.value()->dynamic;
  auto resource = configmaps();
  auto write = [&](const std::string& method, const std::string& path, const std::string& body) {
    auto reply =
        emulator.request(method, path, body, method == "PATCH" ? "application/merge-patch+json" : "application/json");
    REQUIRE(reply.status / 100 == 2);
  };
  const std::string collection = "/api/v1/namespaces/default/configmaps";
  auto create = [&](const std::string& name, const std::string& value) {
    write("POST", collection,
          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("},"data":{"key":")" + value +
              R"("}})");
  };
  auto modify = [&](const std::string& name, const std::string& value) {
    write("PATCH", collection + "/" + name, R"({"data":{"key":")" + value + R"("}})");
  };
  auto remove = [&](const std::string& name) { write("DELETE", collection + "/" + name, ""); };

  create("initial-0", "a");
  create("initial-1", "a");
  ListWatcher watcher(client, resource, "default", ListOptions{});
  // What the events say the collection is: name -> data.key.
  std::map<std::string, std::string> mirror;
  std::vector<std::string> log;
  auto consume = [&](std::size_t count) {
    auto status = run_sync(io, [&]() -> asio::awaitable<Status> {
      for (std::size_t i = 0; i < count; ++i) {
        auto event = co_await watcher.next();
        if (!event) {
          co_return event.error();
        }
        auto name = std::string(json::string_or(json::find_path(event->object, {"metadata", "name"}), ""));
        if (event->type == WatchEventType::deleted) {
          mirror.erase(name);
        } else {
          mirror[name] = std::string(json::string_or(json::find_path(event->object, {"data", "key"}), ""));
        }
        log.push_back(describe(*event));
      }
      co_return ok_status();
    }());
    REQUIRE(status.ok());
  };
  consume(2);  // the initial objects
  CHECK(mirror == std::map<std::string, std::string>{{"initial-0", "a"}, {"initial-1", "a"}});
  create("live", "a");  // a change the open watch delivers
  consume(1);
  CHECK(watcher.stats().watches == 1);

  // 1. The stream is dropped while nobody reads; changes happen meanwhile (history kept).
  auto dropped = emulator.request("POST", "/emulator/drop-watches");
  REQUIRE(dropped.status == 200);
  create("during-drop", "b");
  modify("initial-0", "b");
  consume(2);
  CHECK(watcher.stats().rewatches >= 1);
  CHECK(watcher.stats().relists == 0);

  // 2. Dropped again, changes, then the history is compacted: the re-watch gets 410,
  //    the watcher relists and emits the differences.
  REQUIRE(emulator.request("POST", "/emulator/drop-watches").status == 200);
  create("during-gone", "c");
  modify("during-drop", "c");
  remove("initial-1");
  emulator.compact();
  consume(3);
  CHECK(watcher.stats().relists >= 1);

  // 3. And it keeps following live changes afterwards.
  create("after", "d");
  consume(1);

  auto server = emulator.request("GET", collection);
  REQUIRE(server.status == 200);
  auto listed = json::parse(server.body);
  REQUIRE(listed.ok());
  std::map<std::string, std::string> truth;
  for (const auto& item : json::find(*listed, "items")->GetArray()) {
    truth[std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""))] =
        std::string(json::string_or(json::find_path(item, {"data", "key"}), ""));
  }
  CHECK(mirror == truth);
  CHECK(truth == std::map<std::string, std::string>{
                     {"initial-0", "b"}, {"live", "a"}, {"during-drop", "c"}, {"during-gone", "c"}, {"after", "d"}});
  CHECK(watcher.objects().size() == truth.size());
  INFO("events: " << log.size());
  WARN("list-watch: " << log.size() << " events, " << watcher.stats().watches << " watches, "
                      << watcher.stats().rewatches << " re-watches, " << watcher.stats().relists << " relists (410), "
                      << watcher.stats().synthesized << " events from relist differences, 0 changes missed");
}

TEST_CASE("ListWatcher: a watch stream that goes silent hits the idle deadline and is re-watched",
          "[watch][emulator]") {
  Emulator emulator(kstate::testing::without_namespace_controllers());
  boost::asio::io_context io;
  KubeconfigSources sources;
  sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  TransportOptions options;
  options.watch_idle_timeout = std::chrono::milliseconds(500);
  auto made = make_client(io.get_executor(), sources, options);
  REQUIRE(made.ok());
  ListWatcher watcher(*made.value()->dynamic, configmaps(), "default", ListOptions{});
  const std::string collection = "/api/v1/namespaces/default/configmaps";
  auto create = [&](const std::string& name) {
    auto reply = emulator.request("POST", collection,
                                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("}})");
    REQUIRE(reply.status == 201);
  };
  auto next_name = [&]() {
    auto event = run_sync(io, watcher.next());
    REQUIRE(event.ok());
    return std::string(json::string_or(json::find_path(event->object, {"metadata", "name"}), ""));
  };
  create("first");
  CHECK(next_name() == "first");  // from the list
  create("live");
  CHECK(next_name() == "live");  // from the open watch
  auto stalled = emulator.request("POST", "/emulator/stall-watches");
  REQUIRE(stalled.status == 200);
  CHECK(stalled.body == R"({"stalled":1})");
  auto rewatches_before = watcher.stats().rewatches;
  create("after-stall");
  auto start = std::chrono::steady_clock::now();
  CHECK(next_name() == "after-stall");
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  CHECK(watcher.stats().rewatches > rewatches_before);
  CHECK(waited >= 400);  // the silent stream was given its idle deadline (500 ms, measured from its last byte)
  CHECK(waited < 3000);
  WARN("silent watch stream: idle deadline 500 ms, change delivered by the re-watch after " << waited << " ms");
}

}  // namespace list_watch_test
