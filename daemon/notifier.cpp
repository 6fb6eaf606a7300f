// The sd_notify protocol itself, as systemd documents it (sd_notify(3)): one datagram
// on the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or '@' for an abstract name),
// so kstate needs no libsystemd. Failures to notify are logged at debug level only:
// outside systemd there is no socket, and a notify error must never stop the daemon.
#include "daemon/notifier.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace kstate::daemon {
namespace {

std::string status_line(std::string_view status) {
  std::string line(status);
  std::replace_if(
      line.begin(), line.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return "STATUS=" + line;
}

void send(const std::string& message) {
  const char* socket_name = std::getenv("NOTIFY_SOCKET");
  if (socket_name == nullptr || socket_name[0] == '\0') {
    return;  // not started by a service manager
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(socket_name);
  if ((socket_name[0] != '/' && socket_name[0] != '@') || length >= sizeof(address.sun_path)) {
    spdlog::debug("NOTIFY_SOCKET is not a socket path: not notifying");
    return;
  }
  std::memcpy(address.sun_path, socket_name, length);
  if (address.sun_path[0] == '@') {
    address.sun_path[0] = '\0';  // an abstract socket name
  }
  const int descriptor = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (descriptor < 0) {
    spdlog::debug("sd_notify: socket: {}", std::strerror(errno));
    return;
  }
  const auto address_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  if (::sendto(descriptor, message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address),
               address_length) < 0) {
    spdlog::debug("sd_notify failed: {}", std::strerror(errno));
  }
  ::close(descriptor);
}

std::optional<std::uint64_t> environment_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const char* end = text + std::strlen(text);
  auto [at, error] = std::from_chars(text, end, value);
  if (error != std::errc() || at != end || at == text) {
    return std::nullopt;
  }
  return value;
}

std::chrono::microseconds monotonic_now() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::microseconds(now.tv_nsec / 1000);
}

}  // namespace

std::string ready_message(std::string_view status) {
  return "READY=1\n" + status_line(status);
}

std::string status_message(std::string_view status) {
  return status_line(status);
}

std::string reloading_message(std::string_view status, std::chrono::microseconds monotonic) {
  return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic.count()) + "\n" + status_line(status);
}

std::string stopping_message(std::string_view status) {
  return "STOPPING=1\n" + status_line(status);
}

void SystemdNotifier::ready(std::string_view status) {
  send(ready_message(status));
}

void SystemdNotifier::status(std::string_view status) {
  send(status_message(status));
}

void SystemdNotifier::reloading(std::string_view status) {
  send(reloading_message(status, monotonic_now()));
}

void SystemdNotifier::stopping(std::string_view status) {
  send(stopping_message(status));
}

void SystemdNotifier::watchdog() {
  send("WATCHDOG=1");
}

// As sd_watchdog_enabled(): WATCHDOG_USEC, for this process when WATCHDOG_PID is set.
std::optional<std::chrono::microseconds> SystemdNotifier::watchdog_interval() const {
  const auto usec = environment_number("WATCHDOG_USEC");
  if (!usec || *usec == 0) {
    return std::nullopt;
  }
  if (std::getenv("WATCHDOG_PID") != nullptr) {
    const auto pid = environment_number("WATCHDOG_PID");
    if (!pid || *pid != static_cast<std::uint64_t>(::getpid())) {
      return std::nullopt;
    }
  }
  return std::chrono::microseconds(*usec / 2);
}

}  // namespace kstate::daemon
