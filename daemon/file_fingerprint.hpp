// Whether a manifest file can have changed since the daemon last read it, from one
// stat instead of reading and hashing it again: a resync of 1,000 unchanged files would
// otherwise read all of them. The rule is git's index rule. A file is known unchanged
// when its device, inode, size, mtime and ctime are what they were just before its
// content was last read, and that ctime was already more than `racy_window` older than
// the moment of that stat. The window matters because file times come from a coarse
// clock (one tick is milliseconds; some file systems keep whole seconds): a second
// write within the tick of the first keeps every field of the stat when it keeps the
// size. ctime cannot be set by users (touch -d, tar and rsync set mtime only), and an
// editor's save-by-rename gives a new inode. Anything else means "read it again".
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace kstate::daemon {

struct FileFingerprint {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t size = 0;
  std::chrono::nanoseconds modified{};  // mtime since the epoch
  std::chrono::nanoseconds changed{};   // ctime since the epoch
  friend bool operator==(const FileFingerprint&, const FileFingerprint&) = default;
};

// The fingerprint of `path` (following symbolic links, as reading it does), or nullopt
// when it cannot be stat'ed.
std::optional<FileFingerprint> fingerprint_of(const std::string& path);
// The same from a stat already taken (the folder walk's).
FileFingerprint fingerprint_from(const struct stat& info);

// A fingerprint taken just before the content was read, and when.
struct ReadFingerprint {
  FileFingerprint fingerprint;
  std::chrono::system_clock::time_point taken;
};

constexpr std::chrono::seconds racy_window{2};

// True when `current` proves the content is still what was read after `recorded`.
bool known_unchanged(const ReadFingerprint& recorded, const FileFingerprint& current);

}  // namespace kstate::daemon
