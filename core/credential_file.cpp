// Bounded reads of credential files and the checks of tokens (see credential_file.hpp).
#include "core/credential_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace kstate {

Result<std::string> read_bounded_file(const std::string& path, std::string_view what, std::size_t max_bytes,
                                      bool regular_only) {
  // ErrorKind::io: the file cannot be opened or read (missing, permissions);
  // ErrorKind::config: it was refused (its kind, its size).
  auto failed = [&](const std::string& why, ErrorKind kind = ErrorKind::config) {
    return Error(kind, "cannot read " + std::string(what) + ": " + path + ": " + why);
  };
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | (regular_only ? O_NONBLOCK : 0));
  if (descriptor < 0) {
    return failed(std::strerror(errno), ErrorKind::io);
  }
  struct Closer {
    int descriptor;
    ~Closer() { ::close(descriptor); }
  } closer{descriptor};
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) {
    return failed(std::strerror(errno), ErrorKind::io);
  }
  if (regular_only && !S_ISREG(status.st_mode)) {
    return failed("not a regular file");
  }
  const auto too_large = [&] {
    return failed("larger than the limit of " + std::to_string(max_bytes / 1024) + " KiB");
  };
  if (S_ISREG(status.st_mode) && static_cast<std::uint64_t>(status.st_size) > max_bytes) {
    return too_large();
  }
  std::string content;
  char chunk[16 * 1024];
  for (;;) {
    const ssize_t count = ::read(descriptor, chunk, sizeof chunk);
    if (count < 0 && errno == EINTR) {
      continue;
    }
    if (count < 0) {
      return failed(std::strerror(errno), ErrorKind::io);
    }
    if (count == 0) {
      return content;
    }
    if (content.size() + static_cast<std::size_t>(count) > max_bytes) {
      return too_large();  // (a file that grew, or a device without end)
    }
    content.append(chunk, static_cast<std::size_t>(count));
  }
}

Result<std::string> read_credential_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  return read_bounded_file(path, what, max_bytes, true);
}

std::string token_problem(std::string_view token) {
  if (token.empty()) {
    return "empty";
  }
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c == '\n' || c == '\r') {
      return "holds a line break: a token is one line";
    }
    if (c < 0x20 || c == 0x7f) {
      return "holds a control character (byte " + std::to_string(i + 1) + ")";
    }
    if (c == ' ') {
      return "holds a space (byte " + std::to_string(i + 1) + "): a token is one word";
    }
    if (c > 0x7f) {
      return "holds a byte that is not ASCII (byte " + std::to_string(i + 1) + ")";
    }
  }
  return {};
}

std::string basic_auth_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      return "holds a control character (byte " + std::to_string(i + 1) + ")";
    }
  }
  return {};
}

}  // namespace kstate
