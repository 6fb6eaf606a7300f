// Telling the service manager what the daemon is doing (sd_notify protocol): READY=1
// once it runs and watches, STATUS= lines saying what it waits for or summarising the
// last reconcile, RELOADING=1 on SIGHUP, STOPPING=1 on shutdown, WATCHDOG=1
// keep-alives. An interface so the runner can be tested with a recording fake; the
// real one is libsystemd's sd_notify, which does nothing when NOTIFY_SOCKET is unset
// (not started by systemd).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace kstate::daemon {

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual void ready(std::string_view status) = 0;
  virtual void status(std::string_view status) = 0;
  // RELOADING=1 with MONOTONIC_USEC (required by Type=notify-reload, harmless otherwise).
  virtual void reloading(std::string_view status) = 0;
  virtual void stopping(std::string_view status) = 0;
  virtual void watchdog() = 0;
  // How often watchdog() must be called: half of WATCHDOG_USEC, or nullopt when the
  // service manager did not ask for keep-alives.
  virtual std::optional<std::chrono::microseconds> watchdog_interval() const = 0;
};

class SystemdNotifier final : public Notifier {
 public:
  void ready(std::string_view status) override;
  void status(std::string_view status) override;
  void reloading(std::string_view status) override;
  void stopping(std::string_view status) override;
  void watchdog() override;
  std::optional<std::chrono::microseconds> watchdog_interval() const override;
};

// The notify message for each call (pure; exposed for tests). STATUS text is made
// single-line since the protocol is newline-separated.
std::string ready_message(std::string_view status);
std::string status_message(std::string_view status);
std::string reloading_message(std::string_view status, std::chrono::microseconds monotonic_now);
std::string stopping_message(std::string_view status);

}  // namespace kstate::daemon
