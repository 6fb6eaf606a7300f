// sd_notify wrapper. Failures to notify are logged at debug level only: outside systemd
// there is no socket, and a notify error must never stop the daemon.
#include "daemon/notifier.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <algorithm>
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
  const int result = sd_notify(0, message.c_str());
  if (result < 0) {
    spdlog::debug("sd_notify failed: {}", std::strerror(-result));
  }
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

std::optional<std::chrono::microseconds> SystemdNotifier::watchdog_interval() const {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) {
    return std::nullopt;
  }
  return std::chrono::microseconds(usec / 2);
}

}  // namespace kstate::daemon
