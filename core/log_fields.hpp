// Structured fields of one log line: which state and object a message is about, what
// was done and where it was declared. The JSON log format writes them as keys of the
// line's object (log shippers filter on them); the text and journal formats show only
// the message, which already names the object. The fields travel next to spdlog's call
// on the calling thread (the loggers are synchronous, so the formatter runs there).
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

namespace kstate {

struct LogFields {
  std::string_view state_id;
  std::string_view kind;
  std::string_view namespace_name;
  std::string_view name;
  std::string_view action;  // created, configured, deleted, pruned, failed, ...
  std::string_view file;
  int line = 0;  // 0: unknown
  std::optional<double> duration_ms;
};

// The fields of the line being logged on this thread, or nullptr.
const LogFields* current_log_fields();

// Sets the current thread's fields for its lifetime (nests: the outer ones come back).
class ScopedLogFields {
 public:
  explicit ScopedLogFields(const LogFields& fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  const LogFields* previous_;
};

// spdlog::log(level, ...) with `fields` attached to that one line.
template <typename... Args>
void log_with(const LogFields& fields, spdlog::level::level_enum level, spdlog::format_string_t<Args...> format,
              Args&&... args) {
  ScopedLogFields scope(fields);
  spdlog::log(level, format, std::forward<Args>(args)...);
}

}  // namespace kstate
