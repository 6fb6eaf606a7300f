// See file_fingerprint.hpp.
#include "daemon/file_fingerprint.hpp"

#include <sys/stat.h>

namespace kstate::daemon {
namespace {

std::chrono::nanoseconds since_epoch(const timespec& time) {
  return std::chrono::seconds(time.tv_sec) + std::chrono::nanoseconds(time.tv_nsec);
}

}  // namespace

std::optional<FileFingerprint> fingerprint_of(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return std::nullopt;
  }
  return fingerprint_from(info);
}

FileFingerprint fingerprint_from(const struct stat& info) {
  FileFingerprint result;
  result.device = info.st_dev;
  result.inode = info.st_ino;
  result.size = info.st_size;
  result.modified = since_epoch(info.st_mtim);
  result.changed = since_epoch(info.st_ctim);
  return result;
}

bool known_unchanged(const ReadFingerprint& recorded, const FileFingerprint& current) {
  if (!(recorded.fingerprint == current)) {
    return false;
  }
  // A ctime within the window of the recorded stat (or after it: a clock set back)
  // could be shared by a later write of the same size.
  const std::chrono::nanoseconds stat_time = recorded.taken.time_since_epoch();
  return recorded.fingerprint.changed + racy_window < stat_time;
}

}  // namespace kstate::daemon
