// kstate's JSON documents: the pool allocator behind every json::Document (small
// documents stay small, growing values keep their contents, large values do not waste
// the chunk in use) and documents built on it round-trip through parse, copy and dump.
#include "core/json.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

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
