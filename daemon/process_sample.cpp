// Reading /proc/self for the process_* metrics (see process_sample.hpp).
#include "daemon/process_sample.hpp"

#include <time.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kstate::daemon {
namespace {

double clock_seconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace

std::optional<ProcessStat> parse_process_stat(std::string_view stat, long ticks_per_second, long page_size) {
  // "PID (comm) S ppid ...": fields after the last ')' start with field 3 (state).
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) {
    return std::nullopt;
  }
  std::string_view rest = stat.substr(close + 1);
  double fields[25] = {};  // by field number; 14, 15, 22, 24 are read
  int field = 2;
  while (field < 24) {
    const auto start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) {
      return std::nullopt;
    }
    rest.remove_prefix(start);
    const auto end = rest.find(' ');
    const std::string_view word = rest.substr(0, end);
    ++field;
    if (field == 14 || field == 15 || field == 22 || field == 24) {
      long long value = 0;
      auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (ec != std::errc() || ptr != word.data() + word.size()) {
        return std::nullopt;
      }
      fields[field] = static_cast<double>(value);
    }
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  const double ticks = static_cast<double>(ticks_per_second);
  return ProcessStat{(fields[14] + fields[15]) / ticks, fields[22] / ticks,
                     fields[24] * static_cast<double>(page_size)};
}

ProcessSample read_process_sample() {
  ProcessSample sample;
  std::ifstream file("/proc/self/stat");
  std::ostringstream text;
  text << file.rdbuf();
  if (auto stat = parse_process_stat(text.str(), sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE))) {
    sample.cpu_seconds = stat->cpu_seconds;
    sample.resident_memory_bytes = stat->resident_memory_bytes;
    // starttime counts from boot on CLOCK_BOOTTIME's scale.
    sample.start_time_seconds =
        clock_seconds(CLOCK_REALTIME) - (clock_seconds(CLOCK_BOOTTIME) - stat->start_seconds_after_boot);
  }
  std::error_code error;
  int fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end; it.increment(error)) {
    ++fds;
  }
  sample.open_fds = error ? 0 : fds - 1;  // not the descriptor the listing itself holds
  return sample;
}

}  // namespace kstate::daemon
