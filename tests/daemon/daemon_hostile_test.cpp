// `kstate daemon` against local users and dead servers, end to end, each case printing
// its figures:
//  - 1,100 connections held open to the endpoints (more than the 1,024 descriptors
//    systemd gives a service by default, which the daemon raises to the hard limit):
//    /healthz answers during the flood, a file edit is applied meanwhile, CPU and log
//    lines stay bounded;
//  - an API server that accepts TCP and never answers TLS at start-up: the log and
//    /readyz say so within two connect deadlines;
//  - an API server that freezes after start-up (connections open, no answers):
//    /readyz says so within one request deadline of the first request that hangs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "core/encoding.hpp"
#include "tests/daemon/daemon_process.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/hostile_server.hpp"

namespace daemon_hostile_test {

using kstate::testing::Emulator;
using kstate::testing::HostileBehaviour;
using kstate::testing::HostileServer;
using kstate::testing::write_file;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace kstate::testing::daemon_process;

namespace {

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// "Max open files" soft and hard limits from /proc/PID/limits.
std::string open_file_limits(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(limits, line)) {
    if (line.rfind("Max open files", 0) == 0) {
      std::istringstream fields(line.substr(14));
      std::string soft;
      std::string hard;
      fields >> soft >> hard;
      return soft + "/" + hard;
    }
  }
  return "?";
}

int connect_to(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace

TEST_CASE("kstate daemon: 1,100 connections to the endpoints neither starve it nor lock a probe out",
          "[daemon][hostile]") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  // What systemd gives a service by default: 1,024 soft, a higher hard limit.
  daemon.start("prlimit --nofile=1024:4096");
  REQUIRE(daemon.wait_reconciled());
  const std::string limits = open_file_limits(daemon.process.pid());
  CHECK(limits == "4096/4096");  // raised to the hard limit at start

  const std::size_t log_lines_before = count_lines(daemon.log_text());
  const double cpu_before = daemon.cpu_seconds();
  const auto flood_start = SteadyClock::now();
  std::vector<int> flood;
  for (int i = 0; i < 1100; ++i) {
    if (int fd = connect_to(daemon.port); fd >= 0) {
      flood.push_back(fd);
    }
  }
  const double opened_in = seconds_since(flood_start);
  CHECK(flood.size() == 1100);

  // During the flood: a probe gets in, a file edit is applied.
  auto probe_start = SteadyClock::now();
  auto health = kstate::testing::http_get(daemon.port, "/healthz");
  const double probe_ms = seconds_since(probe_start) * 1000;
  CHECK(health.status == 200);
  const auto edit_start = SteadyClock::now();
  write_file(daemon.manifests / "app.yaml", config_map("app", "red"));
  CHECK(eventually([&] { return daemon.color("app") == "red"; }, 10s));
  const double edit_s = seconds_since(edit_start);
  const int fds_during = daemon.open_fds();
  CHECK(fds_during < 150);  // 64 endpoint connections at most, plus the daemon's own

  std::this_thread::sleep_for(2s);
  const double flood_s = seconds_since(flood_start);
  const double cpu_used = daemon.cpu_seconds() - cpu_before;
  const std::size_t log_lines = count_lines(daemon.log_text()) - log_lines_before;
  CHECK(cpu_used < 2.0);
  CHECK(log_lines < 20);
  for (int fd : flood) {
    ::close(fd);
  }
  CHECK(kstate::testing::http_get(daemon.port, "/healthz").status == 200);
  CHECK(kstate::testing::http_get(daemon.port, "/readyz").status == 200);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
  WARN("1,100 connections (opened in " << opened_in << " s) held for " << flood_s << " s: open-file limit " << limits
                                       << " (from 1024/4096), /healthz answered in " << probe_ms
                                       << " ms, file edit applied in " << edit_s << " s, daemon fds " << fds_during
                                       << ", CPU " << cpu_used << " s, " << log_lines << " log lines");
}

TEST_CASE("kstate daemon: an API server that accepts TCP and never answers TLS is reported within seconds",
          "[daemon][hostile][reachability]") {
  Emulator emulator;  // (the Daemon fixture's kubeconfig; replaced below)
  HostileServer silent(HostileBehaviour::silent_tcp);
  Daemon daemon(emulator, "1h", "connect-timeout: 500ms\n");
  const auto kubeconfig = daemon.work.path() / "silent-kubeconfig";
  write_file(kubeconfig,
             "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
             "    server: " +
                 silent.url() +
                 "\n    certificate-authority-data: " + kstate::encoding::base64_encode(silent.ca_pem()) +
                 "\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n"
                 "  context: {cluster: c, user: u}\n");
  std::string config = kstate::testing::read_file(daemon.config_path);
  config.replace(config.find(emulator.kubeconfig_path().string()), emulator.kubeconfig_path().string().size(),
                 kubeconfig.string());
  write_file(daemon.config_path, config);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));

  const auto start = SteadyClock::now();
  daemon.start();
  REQUIRE(daemon.wait_notification("STATUS=waiting for the API server", 10s));
  const double reported_after = seconds_since(start);
  auto readyz = kstate::testing::http_get(daemon.port, "/readyz");
  CHECK(readyz.status == 503);
  CHECK_THAT(readyz.body,
             Catch::Contains("TLS handshake with " + silent.url() + ": the server did not complete it within 0.5 s"));
  const std::string log = daemon.log_text();
  CHECK_THAT(log, Catch::Contains("API server " + silent.url() + " is unreachable: TLS handshake"));
  CHECK(reported_after < 4.0);  // 2 attempts of 0.5 s, plus start-up
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
  WARN("silent TLS server at start-up (connect-timeout 500 ms): /readyz and the log said so after "
       << reported_after << " s (with the default 10 s: ~20 s); /readyz: " << readyz.body);
}

TEST_CASE("kstate daemon: an API server that freezes is noticed within one request deadline",
          "[daemon][hostile][reachability]") {
  Emulator emulator;
  Daemon daemon(emulator, "1h", "request-timeout: 1s\nconnect-timeout: 500ms\n");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(kstate::testing::http_get(daemon.port, "/readyz").status == 200);

  emulator.set_faults(R"({"hangNext": 100000})");  // connections open, no answers
  const auto frozen_at = SteadyClock::now();
  write_file(daemon.manifests / "app.yaml", config_map("app", "red"));
  kstate::testing::HttpResult readyz;
  CHECK(eventually(
      [&] {
        readyz = kstate::testing::http_get(daemon.port, "/readyz");
        return readyz.status == 503;
      },
      10s));
  const double noticed_after = seconds_since(frozen_at);
  CHECK_THAT(readyz.body, Catch::Contains("API server unreachable: " + emulator.url()));
  CHECK(noticed_after < 4.0);  // the debounce, then one request deadline (1 s), and some slack
  CHECK_THAT(daemon.log_text(), Catch::Contains("API server " + emulator.url() + " is not answering"));

  emulator.clear_faults();
  CHECK(eventually([&] { return kstate::testing::http_get(daemon.port, "/readyz").status == 200; }, 30s));
  CHECK(eventually([&] { return daemon.color("app") == "red"; }, 30s));
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
  WARN("API server frozen (request-timeout 1 s): /readyz 503 "
       << noticed_after << " s after the file edit; back to 200 once it answers");
}

}  // namespace daemon_hostile_test
