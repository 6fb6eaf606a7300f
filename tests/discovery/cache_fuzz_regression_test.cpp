// Regression test for the discovery cache bug discovery_fuzz (tests/fuzz/) found: a
// cache entry whose fetchedAt is beyond what the clock can represent.
#include <catch2/catch.hpp>
#include <string>

#include "core/encoding.hpp"
#include "discovery/cache.hpp"

namespace cache_fuzz_regression_test {

using namespace kstate;

TEST_CASE("a discovery cache entry with an out-of-range fetchedAt is stale, not undefined (discovery_fuzz)",
          "[discovery][fuzz]") {
  // seconds -> nanoseconds overflowed (signed overflow: undefined behaviour), giving
  // a fetch time anywhere, possibly in the future: a cache trusted forever.
  for (std::string fetched : {"9795000000000", "-9795000000000", "9223372036854775807"}) {
    INFO(fetched);
    std::string payload = R"({"server":"https://127.0.0.1:6443","fetchedAt":)" + fetched +
                          R"(,"format":"legacy","etagApi":"","etagApis":"","core":[],"groups":[]})";
    auto entry = discovery::parse_cache_entry("kstate-discovery-cache v1 sha256=" + encoding::sha256_hex(payload) +
                                              "\n" + payload);
    REQUIRE(entry.ok());
    CHECK(entry->fetched_at == std::chrono::system_clock::time_point{});
  }
}

}  // namespace cache_fuzz_regression_test
