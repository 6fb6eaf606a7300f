// The settle decision and the observation of a manifest file (see manifest_settle.hpp).
#include "daemon/manifest_settle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <mutex>

namespace kstate::daemon {

namespace {

std::chrono::system_clock::time_point time_of(const struct timespec& spec) {
  return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::seconds(spec.tv_sec) + std::chrono::nanoseconds(spec.tv_nsec)));
}

// Whether some process has `path` (a regular file) open for writing; nullopt when the
// kernel would not say (see the header).
std::optional<bool> open_for_writing(const std::string& path) {
  // A lease that is granted is broken by the next open for writing with SIGIO, whose
  // default action ends the process: kstate uses no SIGIO, so it ignores it (once) for
  // the microseconds a lease is held.
  static std::once_flag ignore_sigio;
  std::call_once(ignore_sigio, [] { std::signal(SIGIO, SIG_IGN); });
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return std::nullopt;
  }
  std::optional<bool> writing;
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    writing = false;
    ::fcntl(fd, F_SETLEASE, F_UNLCK);
  } else if (errno == EAGAIN) {
    writing = true;
  }
  ::close(fd);
  return writing;
}

}  // namespace

const char* to_string(ManifestSettle settle) {
  switch (settle) {
    case ManifestSettle::settled:
      return "settled";
    case ManifestSettle::missing:
      return "removed";
    case ManifestSettle::being_written:
      return "open for writing: its objects are kept, and it is read again once closed";
    case ManifestSettle::just_changed:
      return "changed moments ago: its objects are kept, and it is read again once unchanged for 2s";
    case ManifestSettle::empty:
      return "empty (0 bytes): its objects are kept; remove the file to remove them";
    case ManifestSettle::not_a_file:
      return "not a regular file (a FIFO, socket, device or folder where a manifest was): its objects are kept; "
             "remove it to remove them";
  }
  return "unknown";
}

bool holds_prune(ManifestSettle settle) {
  return settle != ManifestSettle::settled && settle != ManifestSettle::missing;
}

ManifestSettle classify_manifest(const ManifestObservation& file, std::chrono::system_clock::time_point now,
                                 std::chrono::system_clock::duration window) {
  if (!file.exists) {
    return ManifestSettle::missing;
  }
  if (file.type != S_IFREG) {
    return ManifestSettle::not_a_file;
  }
  if (file.open_for_writing.value_or(false)) {
    return ManifestSettle::being_written;
  }
  // A change "in the future" (a clock stepped back) counts as recent: keep, look again.
  if (window > std::chrono::system_clock::duration::zero() && now - file.changed_at < window) {
    return ManifestSettle::just_changed;
  }
  if (file.size == 0) {
    return ManifestSettle::empty;
  }
  return ManifestSettle::settled;
}

ManifestObservation observe_manifest(const std::string& path) {
  ManifestObservation file;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    file.exists = errno != ENOENT && errno != ENOTDIR;  // unreadable is not removed
    file.type = 0;
    return file;
  }
  file.exists = true;
  file.type = info.st_mode & S_IFMT;
  file.size = info.st_size;
  file.changed_at = std::max(time_of(info.st_mtim), time_of(info.st_ctim));
  if (file.type == S_IFREG) {
    file.open_for_writing = open_for_writing(path);
  }
  return file;
}

std::map<std::string, ManifestSettle> held_manifests(
    const std::set<std::string>& sources, std::chrono::system_clock::time_point now,
    std::chrono::system_clock::duration window,
    const std::function<std::optional<ManifestSettle>(const std::string&)>& known) {
  std::map<std::string, ManifestSettle> held;
  for (const std::string& source : sources) {
    std::optional<ManifestSettle> settle = known ? known(source) : std::nullopt;
    if (!settle) {
      settle = classify_manifest(observe_manifest(source), now, window);
    }
    if (holds_prune(*settle)) {
      held.emplace(source, *settle);
    }
  }
  return held;
}

std::map<std::string, std::string> reasons(const std::map<std::string, ManifestSettle>& held) {
  std::map<std::string, std::string> text;
  for (const auto& [source, settle] : held) {
    text.emplace(source, to_string(settle));
  }
  return text;
}

}  // namespace kstate::daemon
