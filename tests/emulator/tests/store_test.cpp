// The store's persistence pieces: snapshot/restore, journal replay (including a
// line torn by a crash), and watch history after compaction.
#include "tests/emulator/store.hpp"

#include <catch2/catch.hpp>

namespace store_test {

using namespace kstate;
using namespace kstate::emulator;

namespace {

ObjectPtr object(const std::string& name, std::uint64_t version) {
  auto doc = json::parse(R"({"metadata":{"name":")" + name + R"(","namespace":"default","resourceVersion":")" +
                         std::to_string(version) + R"("}})");
  return std::make_shared<const json::Document>(std::move(*doc));
}

void put(Store& store, const std::string& name, const char* type) {
  auto version = store.next_version();
  store.put(object_key("", "configmaps", "default", name), object(name, version), type);
}

}  // namespace

TEST_CASE("snapshot and restore keep objects and the resourceVersion counter") {
  Store store;
  put(store, "a", "ADDED");
  put(store, "b", "ADDED");
  Store restored;
  REQUIRE(restored.restore(store.snapshot()).ok());
  CHECK(restored.current_version() == store.current_version());
  CHECK(restored.get(object_key("", "configmaps", "default", "b")) != nullptr);
  CHECK_FALSE(restored.restore("{not json").ok());
}

TEST_CASE("journal replay applies changes newer than the snapshot and stops at a torn line") {
  Store store;
  put(store, "a", "ADDED");
  std::string snapshot = store.snapshot();
  std::string journal;
  auto record = [&](const std::string& name, const char* type) {
    if (std::string(type) == "DELETED") {
      store.next_version();
      store.erase(object_key("", "configmaps", "default", name), object(name, store.current_version()));
    } else {
      put(store, name, type);
    }
    journal += Store::journal_line(*store.events_after(store.current_version() - 1).back()) + "\n";
  };
  record("b", "ADDED");
  record("a", "DELETED");
  record("c", "ADDED");
  std::string torn = journal + R"({"rv":99,"type":"ADDED","key":"/configmaps/default/d","obj)";

  Store restored;
  REQUIRE(restored.restore(snapshot).ok());
  restored.replay(torn);
  CHECK(restored.current_version() == store.current_version());
  CHECK(restored.get(object_key("", "configmaps", "default", "a")) == nullptr);
  CHECK(restored.get(object_key("", "configmaps", "default", "b")) != nullptr);
  CHECK(restored.get(object_key("", "configmaps", "default", "c")) != nullptr);
  CHECK(restored.get(object_key("", "configmaps", "default", "d")) == nullptr);
  // Replaying again changes nothing: lines at or below the current version are skipped.
  restored.replay(journal);
  CHECK(restored.current_version() == store.current_version());
}

TEST_CASE("events_after and compaction bound how far back a watch may start") {
  Store store(3);
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    put(store, name, "ADDED");
  }
  CHECK(store.events_after(store.current_version() - 2).size() == 2);
  CHECK(store.oldest_watchable() > 1);  // the history keeps only 3 events
  store.compact();
  CHECK(store.oldest_watchable() == store.current_version());
  CHECK(store.events_after(0).empty());
}

}  // namespace store_test
