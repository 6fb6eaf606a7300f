// Logs: levels filter, text lines carry the level, a time with its UTC offset and
// escape control characters (no forged lines), journal lines start with their syslog
// priority and carry no time, json lines are one valid object each even when the
// message contains quotes and newlines, with the structured fields of the line.
#include "daemon/logging.hpp"

#include <rapidjson/document.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "core/log_fields.hpp"

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

// The default logger set up as kstate sets it up, writing into a string.
struct CapturedLog {
  RestoreDefaultLogger restore;
  std::ostringstream out;
  CapturedLog(const char* level, kstate::daemon::LogFormat format) {
    REQUIRE(kstate::daemon::setup_logging(level, format, std::make_shared<spdlog::sinks::ostream_sink_mt>(out)).ok());
  }
  std::vector<std::string> lines() {
    spdlog::default_logger()->flush();
    return lines_of(out.str());
  }
};

}  // namespace

TEST_CASE("json log format writes one parsable object per line") {
  CapturedLog log("info", kstate::daemon::LogFormat::json);
  spdlog::debug("hidden");
  spdlog::info("created Deployment {}/{} from {}", "web", "nginx", "apps/web.yaml");
  spdlog::warn("quote \" and\nnewline");
  const auto lines = log.lines();
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
  CapturedLog log("warn", kstate::daemon::LogFormat::text);
  spdlog::info("not shown");
  spdlog::error("apply failed");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::EndsWith("error apply failed"));
}

TEST_CASE("text log lines cannot be forged: line breaks and escape sequences in a message are escaped") {
  CapturedLog log("info", kstate::daemon::LogFormat::text);
  // What an admission webhook's denial could hold, quoted in a failed state's log line.
  spdlog::error("ConfigMap/default/app: Forbidden: denied\r\n2026-01-01T00:00:00.000 info all good\x1b[2J\x1b[32m");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::EndsWith("error ConfigMap/default/app: Forbidden: denied\\r\\n2026-01-01T00:00:00.000 "
                                       "info all good\\x1b[2J\\x1b[32m"));
  CHECK(lines[0].find('\x1b') == std::string::npos);
}

TEST_CASE("text log lines start with an RFC 3339 time that carries its offset from UTC") {
  CapturedLog log("info", kstate::daemon::LogFormat::text);
  spdlog::info("hello");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 1);
  CHECK(std::regex_match(lines[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d info hello)")));
}

TEST_CASE("journal log lines start with their syslog priority and carry no time of their own") {
  CapturedLog log("trace", kstate::daemon::LogFormat::journal);
  spdlog::trace("request");
  spdlog::debug("detail");
  spdlog::info("created Deployment/demo/web");
  spdlog::warn("failed ConfigMap/demo/app");
  spdlog::error("cannot watch /etc/kstate/manifests");
  spdlog::critical("out of memory");
  spdlog::error("denied\n<6>forged");
  const std::vector<std::string> expected = {
      "<7>request",
      "<7>detail",
      "<6>created Deployment/demo/web",
      "<4>failed ConfigMap/demo/app",
      "<3>cannot watch /etc/kstate/manifests",
      "<2>out of memory",
      "<3>denied\\n<6>forged",  // one line: a message cannot start a line of another priority
  };
  CHECK(log.lines() == expected);
}

TEST_CASE("json log lines carry the structured fields of the line") {
  CapturedLog log("info", kstate::daemon::LogFormat::json);
  kstate::LogFields fields;
  fields.state_id = "web-replicas";
  fields.kind = "Deployment";
  fields.namespace_name = "demo";
  fields.name = "web";
  fields.action = "configured";
  fields.file = "manifests/web.yaml";
  fields.line = 12;
  fields.duration_ms = 4.5;
  kstate::log_with(fields, spdlog::level::info, "configured Deployment/demo/web ({}:{})", "manifests/web.yaml", 12);
  spdlog::info("a line about nothing in particular");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  rapidjson::Document first;
  first.Parse(lines[0].c_str());
  REQUIRE_FALSE(first.HasParseError());
  CHECK(std::string(first["state"].GetString()) == "web-replicas");
  CHECK(std::string(first["kind"].GetString()) == "Deployment");
  CHECK(std::string(first["namespace"].GetString()) == "demo");
  CHECK(std::string(first["name"].GetString()) == "web");
  CHECK(std::string(first["action"].GetString()) == "configured");
  CHECK(std::string(first["file"].GetString()) == "manifests/web.yaml");
  CHECK(first["line"].GetInt() == 12);
  CHECK(first["duration_ms"].GetDouble() == 4.5);
  rapidjson::Document second;
  second.Parse(lines[1].c_str());
  REQUIRE_FALSE(second.HasParseError());
  CHECK_FALSE(second.HasMember("state"));  // the fields belong to the one line they were given with
  CHECK_FALSE(second.HasMember("action"));
}

TEST_CASE("kubectl's -v numbers map to log levels; names stay themselves") {
  using kstate::daemon::log_level_name;
  CHECK(log_level_name("0") == "info");
  CHECK(log_level_name("2") == "info");
  CHECK(log_level_name("3") == "debug");
  CHECK(log_level_name("5") == "debug");
  CHECK(log_level_name("6") == "trace");
  CHECK(log_level_name("10") == "trace");
  CHECK(log_level_name("warn") == "warn");
  CHECK(log_level_name("off") == "off");
  CHECK_FALSE(log_level_name("11"));
  CHECK_FALSE(log_level_name("-1"));
  CHECK_FALSE(log_level_name("6x"));
  CHECK_FALSE(log_level_name(""));
  CHECK_FALSE(log_level_name("warning"));
}

TEST_CASE("JOURNAL_STREAM names the journal only when device and inode are those of stderr") {
  using kstate::daemon::is_journal_stream;
  CHECK(is_journal_stream("8:12345", 8, 12345));
  CHECK_FALSE(is_journal_stream("8:12345", 8, 12346));  // stderr redirected since systemd set it
  CHECK_FALSE(is_journal_stream("9:12345", 8, 12345));
  CHECK_FALSE(is_journal_stream("", 8, 12345));
  CHECK_FALSE(is_journal_stream("8", 8, 12345));
  CHECK_FALSE(is_journal_stream("8:", 8, 12345));
  CHECK_FALSE(is_journal_stream("x:12345", 8, 12345));
}

TEST_CASE("an unknown log level is an error") {
  RestoreDefaultLogger restore;
  auto status = kstate::daemon::setup_logging("chatty", kstate::daemon::LogFormat::text);
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message, Catch::Contains("chatty"));
}

}  // namespace logging_test
