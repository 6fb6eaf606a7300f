// `kstate daemon` as a whole: config errors exit 2 with one line naming the key and
// file:line; a good config runs the daemon (fake reconciler) until SIGTERM, exit 0.
#include "daemon/daemon_command.hpp"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/daemon/fake_reconciler.hpp"
#include "tests/daemon/notify_socket.hpp"

namespace daemon_command_test {

namespace fs = std::filesystem;
using kstate::daemon::DaemonCommand;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device random;
    path =
        fs::temp_directory_path() / ("kstate-command-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

kstate::daemon::ReconcilerFactory fake_factory(std::atomic<int>& built) {
  return [&built](boost::asio::io_context&, const kstate::daemon::DaemonConfig&,
                  kstate::daemon::DaemonMetrics&) -> kstate::Result<std::unique_ptr<kstate::daemon::Reconciler>> {
    ++built;
    return std::unique_ptr<kstate::daemon::Reconciler>(std::make_unique<kstate::testing::FakeReconciler>());
  };
}

}  // namespace

TEST_CASE("kstate daemon: a bad config file exits 2 with one line naming file:line and key") {
  TempDir dir;
  const auto config = dir.path / "config.yaml";
  std::ofstream(config) << "debounce: 300ms\nresync-interval: often\n";
  std::atomic<int> built{0};
  std::ostringstream err;
  const int code = kstate::daemon::run_daemon_command({config.string(), {}, {}}, fake_factory(built), err);
  CHECK(code == 2);
  CHECK(err.str() == "kstate daemon: " + config.string() +
                         ":2: resync-interval: invalid duration \"often\": expected a number at \"often\" "
                         "(examples: 300ms, 5m, 1h30m)\n");
  CHECK(built == 0);  // nothing started

  std::ostringstream missing;
  CHECK(kstate::daemon::run_daemon_command({(dir.path / "none.yaml").string(), {}, {}}, fake_factory(built), missing) ==
        2);
  CHECK_THAT(missing.str(), Catch::Contains("none.yaml: cannot open the config file"));

  std::ostringstream bad_flag;
  CHECK(kstate::daemon::run_daemon_command({config.string(), {{"debounce", "soon"}}, {}}, fake_factory(built),
                                           bad_flag) == 2);
}

TEST_CASE("kstate daemon: runs with file + flags until SIGTERM, then exits 0") {
  TempDir dir;
  fs::create_directories(dir.path / "manifests");
  const auto config = dir.path / "config.yaml";
  std::ofstream(config) << "manifests-dir: " << (dir.path / "manifests").string()
                        << "\nlisten-address: 127.0.0.1:0\nlog:\n  level: warn\n";
  kstate::testing::NotifySocket notify;
  std::atomic<int> built{0};
  std::ostringstream err;
  int code = -1;
  std::thread daemon([&] {
    code = kstate::daemon::run_daemon_command({config.string(), {{"debounce", "20ms"}}, {}}, fake_factory(built), err);
  });
  std::optional<std::string> message;
  do {
    message = notify.receive(std::chrono::milliseconds(3000));
  } while (message && !message->starts_with("READY=1"));
  REQUIRE(message);
  CHECK(built == 1);
  ::kill(::getpid(), SIGTERM);
  daemon.join();
  CHECK(code == 0);
  CHECK(err.str().empty());
  // (The first reconcile's STATUS may come before.)
  std::optional<std::string> stopping;
  do {
    stopping = notify.receive(std::chrono::milliseconds(1000));
  } while (stopping && !stopping->starts_with("STOPPING=1"));
  REQUIRE(stopping);
}

}  // namespace daemon_command_test
