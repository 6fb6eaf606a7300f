// The incremental watch decoder: events split anywhere across reads.
#include "core/watch.hpp"

#include <catch2/catch.hpp>

namespace watch_test {

using namespace kstate;

TEST_CASE("watch events split across reads are decoded in order", "[watch]") {
  std::string stream =
      R"({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}})"
      "\n"
      R"({"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"2"}}})"
      "\n"
      R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"3"}}})"
      "\n"
      R"({"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"4"}}})"
      "\n";
  for (std::size_t piece : {1u, 7u, 64u, 1000u}) {
    WatchDecoder decoder;
    std::vector<WatchEvent> events;
    for (std::size_t offset = 0; offset < stream.size(); offset += piece) {
      auto decoded = decoder.feed(std::string_view(stream).substr(offset, piece));
      REQUIRE(decoded.ok());
      for (auto& event : decoded.value()) {
        events.push_back(std::move(event));
      }
    }
    REQUIRE(events.size() == 4);
    CHECK(events[0].type == WatchEventType::added);
    CHECK(events[1].type == WatchEventType::modified);
    CHECK(events[2].type == WatchEventType::bookmark);
    CHECK(events[3].type == WatchEventType::deleted);
    CHECK(json::string_or(json::find_path(events[1].object, {"metadata", "resourceVersion"}), "") == "2");
    CHECK_FALSE(decoder.has_partial_event());
  }
}

TEST_CASE("event objects lose their managedFields unless the decoder is asked to keep them", "[watch]") {
  const std::string line =
      R"({"type":"MODIFIED","object":{"kind":"PartialObjectMetadata","metadata":{"name":"a","managedFields":)"
      R"([{"manager":"kstate","operation":"Apply"}]}}})"
      "\n";
  WatchDecoder dropping;
  auto dropped = dropping.feed(line);
  REQUIRE(dropped.ok());
  REQUIRE(dropped->size() == 1);
  CHECK(json::find_path((*dropped)[0].object, {"metadata", "managedFields"}) == nullptr);
  WatchDecoder keeping(true);
  auto kept = keeping.feed(line);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 1);
  const json::Value* fields = json::find_path((*kept)[0].object, {"metadata", "managedFields"});
  REQUIRE(fields != nullptr);
  CHECK(fields->IsArray());
}

TEST_CASE("an ERROR event carries a Status, a broken line is an error", "[watch]") {
  WatchDecoder decoder;
  auto events = decoder.feed(
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})json"
      "\n{\"type\":\"ADDED\",\"obj");
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK(events.value()[0].type == WatchEventType::error);
  auto error = events.value()[0].error_of();
  CHECK(error.kind == ErrorKind::gone);
  CHECK(error.reason == "Expired");
  CHECK(decoder.has_partial_event());
  CHECK_FALSE(decoder.feed("ect\": 1}\n").ok());
  CHECK_FALSE(decode_watch_line(R"({"type":"SOMETHING","object":{}})").ok());
}

}  // namespace watch_test
