// No-op detection: when is a live object already what the manifest asks for, and the
// configuration hash kstate records on what it applies.
#include "states/compare.hpp"

#include <catch2/catch.hpp>

#include "core/json.hpp"

namespace compare_test {

using namespace kstate;

namespace {

json::Document parse(std::string_view text) {
  auto parsed = json::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

}  // namespace

TEST_CASE("a live object with every desired field (and more the server added) is already good") {
  auto desired = parse(R"({"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"},"n":1,"list":[1,{"x":2}]})");
  auto live =
      parse(R"({"kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"7"},"data":{"k":"v"},"n":1.0,)"
            R"("list":[1,{"x":2,"y":3}]})");
  CHECK(states::is_subset(desired, live));
  CHECK(states::is_stored_subset(desired, live));
  CHECK_FALSE(states::is_subset(live, desired));
  auto changed = parse(R"({"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"other"}})");
  CHECK_FALSE(states::is_stored_subset(changed, live));
  auto shorter_list = parse(R"({"list":[1]})");
  CHECK_FALSE(states::is_stored_subset(shorter_list, live));
}

TEST_CASE("a Secret's stringData is compared as the base64 data the server stores") {
  auto desired = parse(R"({"kind":"Secret","metadata":{"name":"s"},"stringData":{"password":"hunter2"}})");
  auto live = parse(R"({"kind":"Secret","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="}})");
  CHECK(states::is_stored_subset(desired, live));
  CHECK_FALSE(states::is_subset(desired, live));  // stringData is write-only on the server
  auto rotated = parse(R"({"kind":"Secret","metadata":{"name":"s"},"data":{"password":"b3RoZXI="}})");
  CHECK_FALSE(states::is_stored_subset(desired, rotated));
  // Only Secrets fold stringData.
  auto not_secret = parse(R"({"kind":"Widget","stringData":{"password":"hunter2"}})");
  CHECK_FALSE(states::is_stored_subset(not_secret, live));
}

TEST_CASE("the configuration hash leaves out its own annotation and changes with any other field") {
  auto plain = parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x"}},"data":{"k":"v"}})");
  auto annotated =
      parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x","kstate.io/config-hash":"abc"}},)"
            R"("data":{"k":"v"}})");
  std::string hash = states::config_hash(plain);
  CHECK(hash.size() == 64);
  CHECK(states::config_hash(annotated) == hash);
  auto other = parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x"}},"data":{"k":"w"}})");
  CHECK(states::config_hash(other) != hash);
  CHECK(states::recorded_config_hash(annotated) == "abc");
  CHECK(states::recorded_config_hash(plain).empty());
}

}  // namespace compare_test
