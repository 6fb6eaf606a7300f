// Resource quantities as nodes report them, in millicores and bytes, rounded up as the
// API server rounds them; what is not a quantity gives no number.
#include "inventory/quantity.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace quantity_test {

using kstate::inventory::quantity_millis;
using kstate::inventory::quantity_units;

TEST_CASE("quantities as millis and as units, every suffix", "[inventory][quantity]") {
  struct Row {
    std::string text;
    std::int64_t millis;
    std::int64_t units;
  };
  const std::vector<Row> rows = {
      {"4", 4000, 4},
      {"3800m", 3800, 4},  // 3.8 rounds up to 4 units
      {"100m", 100, 1},
      {"0.1", 100, 1},  // exact: not 100.000001 rounded up to 101
      {"1.5", 1500, 2},
      {".5", 500, 1},
      {"16331016Ki", 16331016LL * 1024 * 1000, 16331016LL * 1024},
      {"8Gi", 8LL * 1024 * 1024 * 1024 * 1000, 8LL * 1024 * 1024 * 1024},
      {"0.5Gi", 536870912LL * 1000, 536870912},
      {"1Mi", 1048576LL * 1000, 1048576},
      {"2Ti", 2LL * 1024 * 1024 * 1024 * 1024 * 1000, 2LL * 1024 * 1024 * 1024 * 1024},
      {"1k", 1000LL * 1000, 1000},
      {"1.5G", 1500000000LL * 1000, 1500000000},
      {"2M", 2000000LL * 1000, 2000000},
      {"1T", 1000000000000LL * 1000, 1000000000000LL},
      {"1P", 1000000000000000LL * 1000, 1000000000000000LL},
      {"2e3", 2000000, 2000},
      {"2E3", 2000000, 2000},
      {"1e-3", 1, 1},
      {"5n", 1, 1},  // 0.000000005 rounds up to 1 milli and 1 unit
      {"250u", 1, 1},
      {"0", 0, 0},
      {"-100m", -100, 0},  // rounding up a negative value truncates it
      {"+2", 2000, 2},
      {"1Ei", -1, 1152921504606846976LL},  // units fit, millis do not (-1: no number)
  };
  for (const auto& row : rows) {
    INFO(row.text);
    auto units = quantity_units(row.text);
    REQUIRE(units.has_value());
    CHECK(*units == row.units);
    auto millis = quantity_millis(row.text);
    if (row.millis < 0 && row.units > 0) {
      CHECK_FALSE(millis.has_value());
    } else {
      REQUIRE(millis.has_value());
      CHECK(*millis == row.millis);
    }
  }
}

TEST_CASE("text that is not a quantity gives no number", "[inventory][quantity]") {
  for (const std::string bad :
       {"", "m", "Ki", "4 cores", "1.2.3", "1e", "1x", "1KiB", "1e99999", "--1", "1ki", "99999999999999999999999"}) {
    INFO(bad);
    CHECK_FALSE(quantity_millis(bad).has_value());
    CHECK_FALSE(quantity_units(bad).has_value());
  }
}

}  // namespace quantity_test
