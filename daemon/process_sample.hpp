// What the standard process_* metrics report about the daemon itself (Prometheus'
// process collector: resident memory, open file descriptors, start time, CPU time),
// read from /proc/self. The unit mounts /proc with ProcSubset=pid, so /proc/stat (the
// boot time) is out of reach: the start time is derived from the clocks instead.
// Parsing is pure and tested on a fixed line; reading is one call per scrape.
#pragma once

#include <optional>
#include <string_view>

namespace kstate::daemon {

struct ProcessSample {
  double resident_memory_bytes = 0;
  double open_fds = 0;
  double start_time_seconds = 0;  // Unix time
  double cpu_seconds = 0;         // user + system
};

// The fields of /proc/PID/stat that ProcessSample needs.
struct ProcessStat {
  double cpu_seconds = 0;               // utime + stime (fields 14, 15)
  double start_seconds_after_boot = 0;  // starttime (field 22)
  double resident_memory_bytes = 0;     // rss (field 24) in pages
};

// Parses a /proc/PID/stat line (the command name in parentheses may hold spaces and
// parentheses itself); nullopt when it is not one.
std::optional<ProcessStat> parse_process_stat(std::string_view stat, long ticks_per_second, long page_size);

// The daemon's own sample now; fields that cannot be read stay 0.
ProcessSample read_process_sample();

}  // namespace kstate::daemon
