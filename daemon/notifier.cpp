// sd_notify wrapper. Failures to notify are logged at debug level only: outside systemd
// there is no socket, and a notify error must never stop the daemon.
// libsystemd is loaded on first use, not linked: with its own dependencies (gcrypt,
// lzma, zstd, lz4, libcap) it added ~1.4 ms to every start of kstate, a tenth of it for
// `kstate apply`, which never notifies (bench/RESULTS.md).
#include "daemon/notifier.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <algorithm>
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

// The two functions kstate uses, from libsystemd.so.0 (the ABI the headers describe).
struct LibSystemd {
  decltype(&::sd_notify) notify = nullptr;
  decltype(&::sd_watchdog_enabled) watchdog_enabled = nullptr;
};

const LibSystemd& libsystemd() {
  static const LibSystemd loaded = [] {
    LibSystemd functions;
    void* library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      functions.notify = reinterpret_cast<decltype(&::sd_notify)>(dlsym(library, "sd_notify"));
      functions.watchdog_enabled =
          reinterpret_cast<decltype(&::sd_watchdog_enabled)>(dlsym(library, "sd_watchdog_enabled"));
    }
    if (functions.notify == nullptr || functions.watchdog_enabled == nullptr) {
      const char* why = dlerror();
      // Under systemd (Type=notify) this matters: it would give up waiting for READY=1.
      if (std::getenv("NOTIFY_SOCKET") != nullptr) {
        spdlog::error("cannot load libsystemd.so.0 to notify systemd: {}", why == nullptr ? "?" : why);
      }
      functions = {};
    }
    return functions;
  }();
  return loaded;
}

void send(const std::string& message) {
  if (std::getenv("NOTIFY_SOCKET") == nullptr) {
    return;  // not started by a service manager: what sd_notify would do, unloaded
  }
  const LibSystemd& systemd = libsystemd();
  if (systemd.notify == nullptr) {
    return;
  }
  const int result = systemd.notify(0, message.c_str());
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
  if (std::getenv("WATCHDOG_USEC") == nullptr) {
    return std::nullopt;
  }
  const LibSystemd& systemd = libsystemd();
  std::uint64_t usec = 0;
  if (systemd.watchdog_enabled == nullptr || systemd.watchdog_enabled(0, &usec) <= 0 || usec == 0) {
    return std::nullopt;
  }
  return std::chrono::microseconds(usec / 2);
}

}  // namespace kstate::daemon
