// Crash-safe files for --data-dir. Snapshots: write to a temporary file, fsync
// it, rename over the target and fsync the directory, so a crash leaves either
// the old or the new content, never a torn file. Between snapshots every write
// is appended to a journal (one JSON line per change); a torn last line left by
// a crash is ignored on replay.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.hpp"

namespace kstate::emulator {

Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode = 0600);
Result<std::string> read_file(const std::filesystem::path& path);

// An append-only file of lines. Appends reach the kernel at once (so a killed
// process loses nothing); sync() makes them durable and is called periodically.
class Journal {
 public:
  Journal() = default;
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  Status open(const std::filesystem::path& path);
  Status append(std::string_view line);  // adds the newline
  void sync();
  Status truncate();
  std::size_t lines_since_truncate() const { return lines_; }

 private:
  int fd_ = -1;
  bool dirty_ = false;
  std::size_t lines_ = 0;
};

}  // namespace kstate::emulator
