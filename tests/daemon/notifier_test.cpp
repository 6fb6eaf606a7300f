// The real sd_notify path: messages arrive on a NOTIFY_SOCKET datagram socket created by
// the test, in the protocol's KEY=VALUE form; the watchdog interval is half WATCHDOG_USEC.
// kstate speaks the protocol itself: no libsystemd is loaded, even to notify.
#include "daemon/notifier.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>

#include "tests/daemon/notify_socket.hpp"
#include "tests/support/process.hpp"

namespace notifier_test {

using kstate::daemon::SystemdNotifier;
using kstate::testing::NotifySocket;

TEST_CASE("systemd notifier sends READY, STATUS, RELOADING, STOPPING and WATCHDOG over NOTIFY_SOCKET") {
  NotifySocket socket;
  SystemdNotifier notifier;

  notifier.ready("reconciled 12 states: 3 changed, 0 failed");
  CHECK(socket.receive() == "READY=1\nSTATUS=reconciled 12 states: 3 changed, 0 failed");

  notifier.status("API server unreachable,\nretrying in 4s");
  CHECK(socket.receive() == "STATUS=API server unreachable, retrying in 4s");

  timespec before{};
  clock_gettime(CLOCK_MONOTONIC, &before);
  notifier.reloading("reloading configuration");
  auto reloading = socket.receive();
  REQUIRE(reloading);
  CHECK_THAT(*reloading, Catch::StartsWith("RELOADING=1\nMONOTONIC_USEC="));
  CHECK_THAT(*reloading, Catch::EndsWith("\nSTATUS=reloading configuration"));
  const auto usec_start = reloading->find('=', reloading->find("MONOTONIC_USEC")) + 1;
  const long long usec = std::stoll(reloading->substr(usec_start));
  CHECK(usec >= before.tv_sec * 1000000LL);
  CHECK(usec < (before.tv_sec + 5) * 1000000LL);

  notifier.stopping("stopping");
  CHECK(socket.receive() == "STOPPING=1\nSTATUS=stopping");

  notifier.watchdog();
  CHECK(socket.receive() == "WATCHDOG=1");
}

TEST_CASE("systemd notifier reaches an abstract NOTIFY_SOCKET ('@' name), as sd_notify does") {
  const std::string name = "kstate-notify-test-" + std::to_string(::getpid());
  const int descriptor = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(descriptor >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  name.copy(address.sun_path + 1, name.size());  // sun_path[0] == '\0': abstract
  REQUIRE(::bind(descriptor, reinterpret_cast<const sockaddr*>(&address),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
  ::setenv("NOTIFY_SOCKET", ("@" + name).c_str(), 1);
  SystemdNotifier().ready("up");
  ::unsetenv("NOTIFY_SOCKET");
  pollfd poll_fd{descriptor, POLLIN, 0};
  REQUIRE(::poll(&poll_fd, 1, 2000) == 1);
  char buffer[256];
  const ssize_t size = ::recv(descriptor, buffer, sizeof buffer, 0);
  ::close(descriptor);
  REQUIRE(size > 0);
  CHECK(std::string(buffer, static_cast<std::size_t>(size)) == "READY=1\nSTATUS=up");
}

TEST_CASE("watchdog interval is half of WATCHDOG_USEC, and absent without it") {
  SystemdNotifier notifier;
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  CHECK_FALSE(notifier.watchdog_interval().has_value());

  ::setenv("WATCHDOG_USEC", "20000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  auto interval = notifier.watchdog_interval();
  REQUIRE(interval);
  CHECK(*interval == std::chrono::seconds(10));

  // Meant for another process (WATCHDOG_PID of a parent): not ours to answer.
  ::setenv("WATCHDOG_PID", "1", 1);
  CHECK_FALSE(notifier.watchdog_interval().has_value());
  ::setenv("WATCHDOG_PID", "not-a-pid", 1);
  CHECK_FALSE(notifier.watchdog_interval().has_value());
  ::unsetenv("WATCHDOG_PID");  // no WATCHDOG_PID: meant for whoever reads it
  CHECK(notifier.watchdog_interval() == std::chrono::seconds(10));
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
}

TEST_CASE("kstate never loads libsystemd: sd_notify is one datagram of its own") {
  kstate::testing::RunOptions options;
  options.env["LD_DEBUG"] = "libs";  // the dynamic loader names every library it loads
  auto result = kstate::testing::run_process({KSTATE_BINARY, "version"}, options);
  CHECK(result.exit_code == 0);
  CHECK(result.err.find("libssl") != std::string::npos);  // the loader did report
  CHECK(result.err.find("libsystemd") == std::string::npos);
}

}  // namespace notifier_test
