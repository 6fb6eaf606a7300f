// A real NOTIFY_SOCKET for tests: a Unix datagram socket bound to a temporary path,
// exported in the environment the way systemd does, that collects the messages the
// daemon sends.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

namespace kstate::testing {

class NotifySocket {
 public:
  NotifySocket() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("kstate-notify-" + std::to_string(::getpid()) + "-" + std::to_string(random()) + ".sock");
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string text = path_.string();
    if (fd_ < 0 || text.size() >= sizeof address.sun_path) {
      throw std::runtime_error("cannot create the notify socket");
    }
    text.copy(address.sun_path, text.size());
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot bind the notify socket");
    }
    ::setenv("NOTIFY_SOCKET", text.c_str(), 1);
  }
  ~NotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  // The next datagram, or nullopt after `timeout`.
  std::optional<std::string> receive(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    pollfd poll_fd{fd_, POLLIN, 0};
    if (::poll(&poll_fd, 1, static_cast<int>(timeout.count())) <= 0) {
      return std::nullopt;
    }
    char buffer[4096];
    const ssize_t size = ::recv(fd_, buffer, sizeof buffer, 0);
    if (size < 0) {
      return std::nullopt;
    }
    return std::string(buffer, static_cast<std::size_t>(size));
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace kstate::testing
