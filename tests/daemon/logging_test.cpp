// Logs: levels filter, text lines carry the level and escape control characters (no
// forged lines), json lines are one valid object each even when the message contains
// quotes and newlines.
#include "daemon/logging.hpp"

#include <rapidjson/document.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <sstream>

namespace logging_test {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    lines.push_back(line);
  }
  return lines;
}

// The tests log into a local stream: put the previous logger back before it goes away.
struct RestoreDefaultLogger {
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  ~RestoreDefaultLogger() { spdlog::set_default_logger(saved); }
};

}  // namespace

TEST_CASE("json log format writes one parsable object per line") {
  RestoreDefaultLogger restore;
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  REQUIRE(kstate::daemon::setup_logging("info", kstate::daemon::LogFormat::json, sink).ok());
  spdlog::debug("hidden");
  spdlog::info("created Deployment {}/{} from {}", "web", "nginx", "apps/web.yaml");
  spdlog::warn("quote \" and\nnewline");
  spdlog::default_logger()->flush();
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 2);
  rapidjson::Document first;
  first.Parse(lines[0].c_str());
  REQUIRE_FALSE(first.HasParseError());
  CHECK(std::string(first["level"].GetString()) == "info");
  CHECK(std::string(first["message"].GetString()) == "created Deployment web/nginx from apps/web.yaml");
  CHECK(std::string(first["time"].GetString()).back() == 'Z');
  rapidjson::Document second;
  second.Parse(lines[1].c_str());
  REQUIRE_FALSE(second.HasParseError());
  CHECK(std::string(second["level"].GetString()) == "warning");
  CHECK(std::string(second["message"].GetString()) == "quote \" and\nnewline");
}

TEST_CASE("text log format shows the level and honours it") {
  RestoreDefaultLogger restore;
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  REQUIRE(kstate::daemon::setup_logging("warn", kstate::daemon::LogFormat::text, sink).ok());
  spdlog::info("not shown");
  spdlog::error("apply failed");
  spdlog::default_logger()->flush();
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::EndsWith("error apply failed"));
}

TEST_CASE("text log lines cannot be forged: line breaks and escape sequences in a message are escaped") {
  RestoreDefaultLogger restore;
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  REQUIRE(kstate::daemon::setup_logging("info", kstate::daemon::LogFormat::text, sink).ok());
  // What an admission webhook's denial could hold, quoted in a failed state's log line.
  spdlog::error("ConfigMap/default/app: Forbidden: denied\r\n2026-01-01T00:00:00.000 info all good\x1b[2J\x1b[32m");
  spdlog::default_logger()->flush();
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::EndsWith("error ConfigMap/default/app: Forbidden: denied\\r\\n2026-01-01T00:00:00.000 "
                                       "info all good\\x1b[2J\\x1b[32m"));
  CHECK(lines[0].find('\x1b') == std::string::npos);
}

TEST_CASE("an unknown log level is an error") {
  RestoreDefaultLogger restore;
  auto status = kstate::daemon::setup_logging("chatty", kstate::daemon::LogFormat::text);
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message, Catch::Contains("chatty"));
}

}  // namespace logging_test
