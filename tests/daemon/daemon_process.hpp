// A `kstate daemon` process for end-to-end tests (daemon_e2e_test.cpp, the soak
// test): its own temporary manifests folder and config, its log in a file, its
// systemd notifications on a NOTIFY_SOCKET of the test, and helpers to read the
// cluster (kstate-emulator) and the daemon's /metrics and /proc entries.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/json.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/daemon/notify_socket.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace kstate::testing::daemon_process {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline unsigned short free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    ::close(fd);
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

inline std::string config_map(const std::string& name, const std::string& color) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
         "\n  namespace: default\ndata:\n  color: " + color + "\n";
}

// One daemon on a temporary manifests folder, its log in a file, its notifications
// on a socket of the test.
struct Daemon {
  Emulator& emulator;
  TempDir work{"kstate-daemon-e2e"};
  NotifySocket notify;
  unsigned short port = free_port();
  fs::path manifests = work.path() / "manifests";
  fs::path log = work.path() / "daemon.log";
  BackgroundProcess process;
  std::vector<std::string> notifications;

  explicit Daemon(Emulator& cluster, const std::string& resync = "1h", const std::string& extra = "")
      : emulator(cluster) {
    fs::create_directories(manifests);
    const fs::path config = work.path() / "config.yaml";
    write_file(config, "manifests-dir: " + manifests.string() + "\nkubeconfig: " + emulator.kubeconfig_path().string() +
                           "\nresync-interval: " + resync + "\ndebounce: 50ms\nlisten-address: 127.0.0.1:" +
                           std::to_string(port) + "\ncache-dir: " + (work.path() / "cache").string() +
                           "\nstate-dir: " + (work.path() / "state").string() +
                           "\napplyset:\n  namespace: default\nqps: 1000\nburst: 1000\n" + extra);
    config_path = config.string();
  }
  std::string config_path;

  // `wrapper`: a command that runs the daemon in the same process (e.g. "prlimit --nofile=1024:4096").
  void start(const std::string& wrapper = "") {
    process = BackgroundProcess({"/bin/sh", "-c", "exec " + wrapper + " \"$0\" daemon --config \"$1\" 2>\"$2\"",
                                 KSTATE_BINARY, config_path, log.string()});
  }

  // Waits for a notification containing `needle`; every one received is kept.
  std::optional<std::string> wait_notification(const std::string& needle, std::chrono::milliseconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto message = notify.receive(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration(1ms))));
      if (!message) {
        break;
      }
      notifications.push_back(*message);
      if (message->find(needle) != std::string::npos) {
        return message;
      }
    }
    return std::nullopt;
  }

  // The STATUS= of a finished reconcile ("STATUS=1 states: 1 created, ..."). READY=1
  // comes before it, as soon as the daemon watches the folder.
  std::optional<std::string> wait_reconciled(std::chrono::milliseconds timeout = 15s) {
    return wait_notification(" states: ", timeout);
  }

  std::string log_text() { return kstate::testing::read_file(log); }

  // data.color of a ConfigMap in "default", "" when it does not exist.
  std::string color(const std::string& name) {
    auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
    if (reply.status != 200) {
      return "";
    }
    auto doc = json::parse(reply.body);
    if (!doc.ok() || !doc->HasMember("data") || !(*doc)["data"].HasMember("color")) {
      return "?";
    }
    return (*doc)["data"]["color"].GetString();
  }

  std::string metrics() { return kstate::testing::http_get(port, "/metrics").body; }

  // A field of /proc/PID/status in kB (VmRSS, VmHWM), -1 when unreadable.
  long status_kb(const std::string& field) {
    std::ifstream status("/proc/" + std::to_string(process.pid()) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind(field + ":", 0) == 0) {
        return std::stol(line.substr(field.size() + 1));
      }
    }
    return -1;
  }
  // CPU time the daemon used so far (user + system), in seconds.
  double cpu_seconds() {
    std::ifstream stat("/proc/" + std::to_string(process.pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int index = 3; fields >> field; ++index) {
      if (index == 14 || index == 15) {  // utime, stime
        ticks += std::stod(field);
      }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  // Open file descriptors (entries of /proc/PID/fd).
  int open_fds() {
    std::error_code error;
    int count = 0;
    for (fs::directory_iterator it("/proc/" + std::to_string(process.pid()) + "/fd", error), end; !error && it != end;
         it.increment(error)) {
      ++count;
    }
    return error ? -1 : count;
  }
};

}  // namespace kstate::testing::daemon_process
