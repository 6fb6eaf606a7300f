// The daemon's process-wide limits (see process_limits.hpp).
#include "daemon/process_limits.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace kstate::daemon {

OpenFileLimit raise_open_file_limit() {
  OpenFileLimit result;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    result.error = std::string("getrlimit: ") + std::strerror(errno);
    return result;
  }
  result.before = limit.rlim_cur;
  result.after = limit.rlim_cur;
  if (limit.rlim_cur == limit.rlim_max) {
    return result;
  }
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    result.error = std::string("setrlimit: ") + std::strerror(errno);
    return result;
  }
  result.after = limit.rlim_cur;
  return result;
}

std::string forbid_core_dumps() {
  std::string problems;
  const rlimit none{0, 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0) {
    problems = std::string("setrlimit(RLIMIT_CORE): ") + std::strerror(errno);
  }
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    problems += (problems.empty() ? "" : "; ") + std::string("prctl(PR_SET_DUMPABLE): ") + std::strerror(errno);
  }
  return problems;
}

}  // namespace kstate::daemon
