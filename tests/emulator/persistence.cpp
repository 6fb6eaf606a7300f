// Atomic file replacement with POSIX calls (see persistence.hpp).
#include "tests/emulator/persistence.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kstate::emulator {

namespace {

Error io_error(const std::string& what, const std::filesystem::path& path) {
  return Error(ErrorKind::io, what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode) {
  auto temporary = path;
  temporary += ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return io_error("cannot create", temporary);
  }
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      ::close(fd);
      return io_error("cannot write", temporary);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return io_error("cannot fsync", temporary);
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return io_error("cannot rename onto", path);
  }
  auto directory = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return ok_status();
}

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorKind::io, "cannot read " + path.string());
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

Journal::~Journal() {
  if (fd_ >= 0) {
    sync();
    ::close(fd_);
  }
}

Status Journal::open(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    return io_error("cannot open", path);
  }
  return ok_status();
}

Status Journal::append(std::string_view line) {
  std::string text(line);
  text += '\n';
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error(ErrorKind::io, std::string("cannot append to the journal: ") + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  dirty_ = true;
  ++lines_;
  return ok_status();
}

void Journal::sync() {
  if (fd_ >= 0 && dirty_) {
    ::fdatasync(fd_);
    dirty_ = false;
  }
}

Status Journal::truncate() {
  if (::ftruncate(fd_, 0) != 0) {
    return Error(ErrorKind::io, std::string("cannot truncate the journal: ") + std::strerror(errno));
  }
  ::fsync(fd_);
  dirty_ = false;
  lines_ = 0;
  return ok_status();
}

}  // namespace kstate::emulator
