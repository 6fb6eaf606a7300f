// Process-wide settings the daemon makes at start, against local users and crashes:
//  - the open-file soft limit is raised to the hard limit (systemd starts services
//    with 1,024 soft): connections to the endpoints, the API server and inotify then
//    never run the daemon out of descriptors first;
//  - the process is made non-dumpable (prctl PR_SET_DUMPABLE 0) and core dumps are
//    turned off (RLIMIT_CORE 0): its memory holds bearer tokens, client keys and
//    Secret values, which a core file (or another process of the same user reading
//    /proc/PID/mem or attaching a debugger) would expose. Root keeps its access; so
//    does `systemctl` (the unit also sets LimitCORE=0).
// Each is best effort (a seccomp filter may refuse setrlimit): the outcome is returned
// for the caller to log, never fatal.
#pragma once

#include <cstdint>
#include <string>

namespace kstate::daemon {

struct OpenFileLimit {
  std::uint64_t before = 0;  // soft limit found
  std::uint64_t after = 0;   // soft limit now (the hard limit when raised)
  std::string error;         // why it could not be raised ("" when it was, or already at the hard limit)
};
OpenFileLimit raise_open_file_limit();

// "" when done, else what failed.
std::string forbid_core_dumps();

}  // namespace kstate::daemon
