// spdlog set-up. The JSON formatter writes through RapidJSON's Writer so that messages
// with quotes, newlines or control characters still produce one valid object per line;
// the text and journal formats escape control characters (untrusted_text.hpp), so that
// a message holding text from elsewhere (a server's error, a file name) is one line and
// cannot forge another (nor, in the journal, a priority) or send escape sequences to a
// terminal.
#include "daemon/logging.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <limits>

#include "core/log_fields.hpp"
#include "core/untrusted_text.hpp"

namespace kstate::daemon {
namespace {

void append_escaped_message(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) {
  const std::string_view payload(message.payload.data(), message.payload.size());
  // Never cut: the messages kstate logs cap what they quote themselves.
  const std::string escaped = printable(payload, std::numeric_limits<std::size_t>::max());
  dest.append(escaped.data(), escaped.data() + escaped.size());
}

// %* in a pattern: the message with control characters escaped.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    append_escaped_message(message, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

// The syslog priority of a level (sd-daemon(3)'s SD_DEBUG ... SD_CRIT).
char syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return '2';
    case spdlog::level::err:
      return '3';
    case spdlog::level::warn:
      return '4';
    case spdlog::level::info:
      return '6';
    default:
      return '7';  // debug, trace
  }
}

// "<4>message": journald takes the priority from the prefix and stamps the time itself.
class JournalFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    const std::array<char, 3> prefix{'<', syslog_priority(message.level), '>'};
    dest.append(prefix.data(), prefix.data() + prefix.size());
    append_escaped_message(message, dest);
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JournalFormatter>(); }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    auto string = [&writer](std::string_view text) {
      writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
    };
    writer.StartObject();
    writer.Key("time");
    string(rfc3339(message.time));
    writer.Key("level");
    string(std::string_view(spdlog::level::to_string_view(message.level).data(),
                            spdlog::level::to_string_view(message.level).size()));
    writer.Key("logger");
    string(std::string_view(message.logger_name.data(), message.logger_name.size()));
    writer.Key("message");
    string(std::string_view(message.payload.data(), message.payload.size()));
    if (const LogFields* fields = current_log_fields(); fields != nullptr) {
      const std::pair<const char*, std::string_view> texts[] = {
          {"state", fields->state_id}, {"kind", fields->kind},     {"namespace", fields->namespace_name},
          {"name", fields->name},      {"action", fields->action}, {"file", fields->file},
      };
      for (const auto& [key, value] : texts) {
        if (!value.empty()) {
          writer.Key(key);
          string(value);
        }
      }
      if (fields->line > 0) {
        writer.Key("line");
        writer.Int(fields->line);
      }
      if (fields->duration_ms) {
        writer.Key("duration_ms");
        writer.Double(*fields->duration_ms);
      }
    }
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

template <typename Number>
bool parse_whole(std::string_view text, Number& value) {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

std::optional<std::string_view> log_level_name(std::string_view level_or_number) {
  static constexpr std::string_view names[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (std::string_view name : names) {
    if (name == level_or_number) {
      return name;
    }
  }
  int number = 0;
  if (!parse_whole(level_or_number, number) || number < 0 || number > 10) {
    return std::nullopt;
  }
  return number <= 2 ? "info" : number <= 5 ? "debug" : "trace";
}

bool is_journal_stream(std::string_view journal_stream, dev_t device, ino_t inode) {
  const auto colon = journal_stream.find(':');
  if (colon == std::string_view::npos) {
    return false;
  }
  unsigned long long stream_device = 0;
  unsigned long long stream_inode = 0;
  return parse_whole(journal_stream.substr(0, colon), stream_device) &&
         parse_whole(journal_stream.substr(colon + 1), stream_inode) && stream_device == device &&
         stream_inode == inode;
}

bool stderr_is_journal() {
  const char* journal_stream = std::getenv("JOURNAL_STREAM");
  struct stat status {};
  return journal_stream != nullptr && fstat(STDERR_FILENO, &status) == 0 &&
         is_journal_stream(journal_stream, status.st_dev, status.st_ino);
}

Status setup_logging(std::string_view level, LogFormat format, std::shared_ptr<spdlog::sinks::sink> sink) {
  const auto name = log_level_name(level);
  if (!name) {
    return Error(ErrorKind::invalid_input, "unknown log level \"" + std::string(level) +
                                               "\" (trace, debug, info, warn, error, off, or kubectl's 0-10)");
  }
  if (!sink) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    if (format == LogFormat::text && stderr_is_journal()) {
      format = LogFormat::journal;
    }
  }
  auto logger = std::make_shared<spdlog::logger>("kstate", std::move(sink));
  if (format == LogFormat::json) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else if (format == LogFormat::journal) {
    logger->set_formatter(std::make_unique<JournalFormatter>());
  } else {
    // A terminal or a file needs the time, with its offset from UTC.
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %*");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(spdlog::level::from_str(std::string(*name)));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
  return ok_status();
}

}  // namespace kstate::daemon
