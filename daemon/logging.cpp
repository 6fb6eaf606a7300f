// spdlog set-up. The JSON formatter writes through RapidJSON's Writer so that messages
// with quotes, newlines or control characters still produce one valid object per line;
// the text format escapes control characters (untrusted_text.hpp), so that a message
// holding text from elsewhere (a server's error, a file name) is one line and cannot
// forge another or send escape sequences to a terminal.
#include "daemon/logging.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <limits>

#include "core/untrusted_text.hpp"

namespace kstate::daemon {
namespace {

// %* in a pattern: the message with control characters escaped, never cut (the
// messages kstate logs cap what they quote themselves).
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(message.payload.data(), message.payload.size());
    const std::string escaped = printable(payload, std::numeric_limits<std::size_t>::max());
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    writer.StartObject();
    writer.Key("time");
    const std::string time = rfc3339(message.time);
    writer.String(time.data(), static_cast<rapidjson::SizeType>(time.size()));
    writer.Key("level");
    const auto level = spdlog::level::to_string_view(message.level);
    writer.String(level.data(), static_cast<rapidjson::SizeType>(level.size()));
    writer.Key("logger");
    writer.String(message.logger_name.data(), static_cast<rapidjson::SizeType>(message.logger_name.size()));
    writer.Key("message");
    writer.String(message.payload.data(), static_cast<rapidjson::SizeType>(message.payload.size()));
    writer.EndObject();
    dest.append(buffer.GetString(), buffer.GetString() + buffer.GetSize());
    dest.push_back('\n');
  }

  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }

 private:
  static std::string rfc3339(spdlog::log_clock::time_point time) {
    const auto since_epoch = time.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[32];
    const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(millis));
    return std::string(text, length) + fraction;
  }
};

}  // namespace

Status setup_logging(std::string_view level, LogFormat format, std::shared_ptr<spdlog::sinks::sink> sink) {
  const auto parsed_level = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (parsed_level == spdlog::level::off && level != "off") {
    return Error(ErrorKind::invalid_input, "unknown log level \"" + std::string(level) + "\"");
  }
  if (!sink) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  auto logger = std::make_shared<spdlog::logger>("kstate", std::move(sink));
  if (format == LogFormat::json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    // journald stamps lines itself, but a terminal or a file needs the time.
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %*");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(parsed_level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  return ok_status();
}

}  // namespace kstate::daemon
