// Go-style durations (core/duration.hpp): what config keys, flags and a state's wait
// arguments accept, and how they are printed back.
#include "core/duration.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string_view>

namespace duration_test {

using namespace std::chrono_literals;
using kstate::Duration;
using kstate::format_duration;
using kstate::parse_duration;

TEST_CASE("Go-style durations parse like time.ParseDuration") {
  struct Case {
    const char* text;
    Duration expected;
  };
  const Case cases[] = {
      {"0", 0ns},       {"300ms", 300ms},   {"5m", 5min},
      {"1h30m", 90min}, {"1.5s", 1500ms},   {"2h45m30s", 2h + 45min + 30s},
      {"10us", 10us},   {"7ns", 7ns},       {"1m0.5s", 60500ms},
      {".5s", 500ms},   {"\xC2\xB5s", 0ns},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_duration(c.text);
    if (std::string_view(c.text) == "\xC2\xB5s") {
      CHECK_FALSE(parsed.ok());  // a unit without a number
      continue;
    }
    REQUIRE(parsed.ok());
    CHECK(*parsed == c.expected);
  }
  CHECK(*parse_duration("3\xC2\xB5s") == 3us);
}

TEST_CASE("bad durations are errors that say why") {
  for (const char* text : {"", "5", "5 m", "-5s", "5d", "m", "1h30", "ms5", "1.s2"}) {
    INFO(text);
    auto parsed = parse_duration(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message.find("invalid duration") != std::string::npos);
  }
}

TEST_CASE("durations format back to their shortest Go spelling") {
  CHECK(format_duration(0ns) == "0s");
  CHECK(format_duration(300ms) == "300ms");
  CHECK(format_duration(5min) == "5m");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(format_duration(1500ms) == "1.5s");
  CHECK(format_duration(15s) == "15s");
  for (const char* text : {"1h30m", "300ms", "2h45m30.25s", "15s", "10us"}) {
    CHECK(format_duration(*parse_duration(text)) == text);
  }
}

}  // namespace duration_test
