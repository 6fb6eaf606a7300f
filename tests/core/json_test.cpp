// kstate's JSON documents: the pool allocator behind every json::Document (small
// documents stay small, growing values keep their contents, large values do not waste
// the chunk in use) and documents built on it round-trip through parse, copy and dump.
#include "core/json.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

namespace json_test {

using namespace kstate;

namespace {

// A ConfigMap of about a kilobyte, the size of a typical manifest.
std::string small_object(int n) {
  std::string text = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-)" + std::to_string(n) +
                     R"(","namespace":"bench","labels":{"app":"web","tier":"frontend"}},"data":{)";
  for (int i = 0; i < 20; ++i) {
    text += (i == 0 ? "" : ",") + ("\"key-" + std::to_string(i) + "\":\"value number " + std::to_string(i) + "\"");
  }
  return text + "}}";
}

}  // namespace

TEST_CASE("a small document reserves a few kilobytes, not a 64 KiB chunk") {
  auto parsed = json::parse(small_object(1));
  REQUIRE(parsed.ok());
  std::size_t reserved = parsed->GetAllocator().reserved_bytes();
  CHECK(reserved > 0);
  CHECK(reserved <= 8 * 1024);

  auto copied = json::copy(*parsed);
  CHECK(copied.GetAllocator().reserved_bytes() <= 8 * 1024);
  CHECK(json::dump(copied) == json::dump(*parsed));
}

TEST_CASE("a thousand small documents reserve about what they hold") {
  std::vector<json::Document> documents;
  std::size_t reserved = 0;
  std::size_t text_bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string text = small_object(i);
    text_bytes += text.size();
    auto parsed = json::parse(text);
    REQUIRE(parsed.ok());
    reserved += parsed->GetAllocator().reserved_bytes();
    documents.push_back(std::move(parsed).value());
  }
  // RapidJSON's default pool took 64 MB here (64 KiB per document).
  CHECK(reserved < 8 * text_bytes);
  CHECK(reserved < 8u * 1024u * 1024u);
  CHECK(json::string_or(json::find_path(documents[999], {"metadata", "name"}), "") == "app-999");
}

TEST_CASE("documents parsed into one shared pool keep their values there, and errors are the same") {
  json::Allocator pool;
  std::vector<json::Document> documents;
  for (int i = 0; i < 100; ++i) {
    auto parsed = json::parse(small_object(i), pool);
    REQUIRE(parsed.ok());
    CHECK(&parsed->GetAllocator() == &pool);
    documents.push_back(std::move(parsed).value());
  }
  CHECK(pool.reserved_bytes() > 100 * 500);  // the values live in the pool, not in 100 own ones
  CHECK(json::string_or(json::find_path(documents[42], {"metadata", "name"}), "") == "app-42");
  CHECK(json::dump(documents[7]) == json::dump(*json::parse(small_object(7))));

  auto broken = json::parse(R"({"a": [1, 2})", pool);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message == json::parse(R"({"a": [1, 2})").error().message);
  CHECK(broken.error().message.find("offset 11") != std::string::npos);
}

TEST_CASE("pool allocator: the last block grows in place, others move with their contents") {
  json::PoolAllocator pool;
  auto* first = static_cast<char*>(pool.Malloc(16));
  std::memcpy(first, "0123456789abcdef", 16);
  // The last block of the chunk grows where it is.
  auto* grown = static_cast<char*>(pool.Realloc(first, 16, 64));
  CHECK(grown == first);
  CHECK(std::memcmp(grown, "0123456789abcdef", 16) == 0);
  // A block that is no longer last moves, and keeps its bytes.
  auto* other = static_cast<char*>(pool.Malloc(8));
  REQUIRE(other != nullptr);
  auto* moved = static_cast<char*>(pool.Realloc(grown, 64, 128));
  CHECK(moved != grown);
  CHECK(std::memcmp(moved, "0123456789abcdef", 16) == 0);
  // Shrinking keeps the block; zero sizes give no block.
  CHECK(pool.Realloc(moved, 128, 32) == moved);
  CHECK(pool.Malloc(0) == nullptr);
  CHECK(pool.Realloc(nullptr, 0, 24) != nullptr);
}

TEST_CASE("pool allocator: a large block gets its own chunk and the current chunk stays in use") {
  json::PoolAllocator pool;
  auto* small = static_cast<char*>(pool.Malloc(32));
  std::size_t before_large = pool.reserved_bytes();
  auto* large = static_cast<char*>(pool.Malloc(200 * 1024));
  REQUIRE(large != nullptr);
  std::memset(large, 'x', 200 * 1024);
  CHECK(pool.reserved_bytes() - before_large >= 200 * 1024);
  // The next small block comes right after the first one, from the same chunk.
  auto* next = static_cast<char*>(pool.Malloc(32));
  CHECK(next == small + 32);
  CHECK(pool.reserved_bytes() - before_large < 200 * 1024 + 1024);
}

TEST_CASE("pool allocator: chunks double from 1 KiB up to 64 KiB") {
  json::PoolAllocator pool;
  std::vector<std::size_t> reserved;
  for (int i = 0; i < 2000; ++i) {
    std::size_t before = pool.reserved_bytes();
    REQUIRE(pool.Malloc(512) != nullptr);
    if (pool.reserved_bytes() != before) {
      reserved.push_back(pool.reserved_bytes() - before);
    }
  }
  REQUIRE(reserved.size() >= 8);
  CHECK(reserved[1] > reserved[0]);
  CHECK(reserved[2] > reserved[1]);
  std::size_t largest = 0;
  for (std::size_t chunk : reserved) {
    largest = std::max(largest, chunk);
  }
  CHECK(largest < 65 * 1024);
  CHECK(largest >= 64 * 1024);
  // 2000 blocks of 512 bytes: about 1 MB held, without per-block overhead.
  CHECK(pool.reserved_bytes() < 1100 * 1024);
}

TEST_CASE("documents on the pool allocator hold deep and large values") {
  std::string big = R"({"items":[)";
  for (int i = 0; i < 5000; ++i) {
    big += (i == 0 ? "" : ",") + small_object(i);
  }
  big += "]}";
  auto parsed = json::parse(big);
  REQUIRE(parsed.ok());
  const json::Value* items = json::find(*parsed, "items");
  REQUIRE(items != nullptr);
  REQUIRE(items->Size() == 5000);
  CHECK(json::string_or(json::find_path((*items)[4321], {"metadata", "name"}), "") == "app-4321");
  auto copied = json::copy(*parsed);
  CHECK(json::dump(copied) == json::dump(*parsed));
}

TEST_CASE("string_at reads a string at a path; anything else reads as empty") {
  auto parsed = json::parse(
      R"({"metadata":{"name":"web","resourceVersion":"4711","labels":{"app":"web"},"generation":3},"spec":"x"})");
  REQUIRE(parsed.ok());
  CHECK(json::string_at(*parsed, {"metadata", "name"}) == "web");
  CHECK(json::string_at(*parsed, {"metadata", "labels", "app"}) == "web");
  CHECK(json::string_at(*parsed, {"metadata", "uid"}).empty());         // absent
  CHECK(json::string_at(*parsed, {"metadata", "generation"}).empty());  // not a string
  CHECK(json::string_at(*parsed, {"metadata"}).empty());                // an object
  CHECK(json::string_at(*parsed, {"spec", "replicas"}).empty());        // through a non-object
  CHECK(json::string_at(*parsed, {"spec"}) == "x");
  CHECK(json::resource_version(*parsed) == "4711");
  auto bare = json::parse(R"({"kind":"ConfigMap"})");
  REQUIRE(bare.ok());
  CHECK(json::resource_version(*bare).empty());
}

namespace {

// What the API server sends for a ConfigMap: its managedFields (one entry per field
// manager, each listing every field it owns) are about as long as the object itself.
std::string managed_fields(int managers) {
  std::string text = "[";
  for (int m = 0; m < managers; ++m) {
    text += (m == 0 ? "" : ",") + (R"({"manager":"tool-)" + std::to_string(m) +
                                   R"(","operation":"Apply","apiVersion":"v1","time":"2026-11-25T10:00:00Z",)" +
                                   R"("fieldsType":"FieldsV1","fieldsV1":{"f:data":{)");
    for (int i = 0; i < 20; ++i) {
      text += (i == 0 ? "" : ",") + ("\"f:key-" + std::to_string(i) + "\":{}");
    }
    text += R"(},"f:metadata":{"f:labels":{"f:app":{},"f:tier":[1,2.5,null,true,"x"]}}}})";
  }
  return text + "]";
}

std::string config_map_answer(const std::string& name, const std::string& managed, const std::string& extra = "") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":"bench","managedFields":)" + managed +
         R"(,"labels":{"app":"web"},"resourceVersion":"12"},"data":{"key":"value"})" + extra + "}";
}

std::string without_spaces(std::string text) {
  std::erase(text, ' ');
  return text;
}

}  // namespace

TEST_CASE("an API answer is parsed without the objects' managedFields, and nothing else changes") {
  SECTION("one object: the member goes, the other members keep their order and values") {
    auto answer = json::parse_api_answer(config_map_answer("one", managed_fields(2)));
    REQUIRE(answer.ok());
    CHECK(json::dump(*answer) ==
          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"bench",)"
          R"("labels":{"app":"web"},"resourceVersion":"12"},"data":{"key":"value"}})");
  }
  SECTION("managedFields first, last, or the only member of metadata") {
    CHECK(json::dump(*json::parse_api_answer(R"({"metadata":{"managedFields":[{"a":[{}]}],"name":"x"}})")) ==
          R"({"metadata":{"name":"x"}})");
    CHECK(json::dump(*json::parse_api_answer(R"({"metadata":{"name":"x","managedFields":{"odd":"shape"}}})")) ==
          R"({"metadata":{"name":"x"}})");
    CHECK(json::dump(*json::parse_api_answer(R"({"metadata":{"managedFields":null},"kind":"K"})")) ==
          R"({"metadata":{},"kind":"K"})");
  }
  SECTION("a list: each item's go, the list's own metadata and the items stay") {
    std::string list = R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"40"},"items":[)" +
                       config_map_answer("a", managed_fields(1)) + "," + config_map_answer("b", managed_fields(3)) +
                       "]}";
    auto answer = json::parse_api_answer(list);
    REQUIRE(answer.ok());
    const json::Value& items = *json::find(*answer, "items");
    REQUIRE(items.Size() == 2);
    for (const auto& item : items.GetArray()) {
      CHECK(json::find_path(item, {"metadata", "managedFields"}) == nullptr);
      CHECK(json::string_or(json::find_path(item, {"metadata", "resourceVersion"}), "") == "12");
      CHECK(json::string_or(json::find_path(item, {"data", "key"}), "") == "value");
    }
    CHECK(json::string_or(json::find_path(items[1], {"metadata", "name"}), "") == "b");
  }
  SECTION("a watch event: its object's go") {
    auto answer =
        json::parse_api_answer(R"({"type":"ADDED","object":)" + config_map_answer("w", managed_fields(1)) + "}");
    REQUIRE(answer.ok());
    CHECK(json::find_path(*answer, {"object", "metadata", "managedFields"}) == nullptr);
    CHECK(json::string_or(json::find_path(*answer, {"object", "metadata", "name"}), "") == "w");
  }
  SECTION("managedFields anywhere else is data, and kept") {
    std::string text = R"({"metadata":{"name":"d"},"spec":{"template":{"metadata":{"managedFields":[1]}}},)"
                       R"("data":{"managedFields":"text"},"managedFields":[2],)"
                       R"("items":{"metadata":{"managedFields":[3]}},"list":[{"metadata":{"managedFields":[4]}}]})";
    auto answer = json::parse_api_answer(text);
    REQUIRE(answer.ok());
    CHECK(json::dump(*answer) == without_spaces(text));
  }
  SECTION("errors and limits inside the dropped member are still errors") {
    const std::string text = R"({"metadata":{"managedFields":[{"a":}],"name":"x"}})";
    auto broken = json::parse_api_answer(text);
    REQUIRE_FALSE(broken.ok());
    CHECK(broken.error().message.find("invalid JSON at offset 35") != std::string::npos);
    CHECK(broken.error().message == json::parse(text).error().message);
    std::string deep = R"({"metadata":{"managedFields":)" + std::string(10'001, '[') + std::string(10'001, ']') + "}}";
    auto too_deep = json::parse_api_answer(deep);
    REQUIRE_FALSE(too_deep.ok());
    CHECK(too_deep.error().message.find("nested deeper than") != std::string::npos);
  }
  SECTION("plain parse keeps managedFields") {
    auto parsed = json::parse(config_map_answer("p", managed_fields(1)));
    REQUIRE(parsed.ok());
    CHECK(json::find_path(*parsed, {"metadata", "managedFields"}) != nullptr);
  }
}

TEST_CASE("an API answer's document takes memory for the object, not for its managedFields") {
  std::string answer = config_map_answer("big", managed_fields(40));
  auto with = json::parse(answer);
  auto without = json::parse_api_answer(answer);
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with->GetAllocator().reserved_bytes() > 60 * 1024);
  CHECK(without->GetAllocator().reserved_bytes() <= 2 * 1024);
}

TEST_CASE("pool allocator: reserve takes a chunk of exactly what is asked, once") {
  json::Allocator pool;
  pool.reserve(3000);
  const std::size_t reserved = pool.reserved_bytes();
  CHECK(reserved >= 3000);
  CHECK(reserved < 3100);
  void* first = pool.Malloc(1000);
  void* second = pool.Malloc(2000);
  CHECK(pool.reserved_bytes() == reserved);  // both from the reserved chunk
  CHECK(static_cast<char*>(second) == static_cast<char*>(first) + 1000);
  pool.reserve(10);  // the chunk in use has no room left: a new one, as small
  CHECK(pool.reserved_bytes() < reserved + 100);
}

}  // namespace json_test
