// End-to-end runs of `kstate daemon` against kstate-emulator, with a real
// NOTIFY_SOCKET: what an operator sees (systemd notifications, objects in the
// cluster, /readyz and /metrics, the log) when files are added, edited the ways
// editors do it, broken, removed, when the cluster drifts, and on SIGHUP/SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "core/json.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/daemon/notify_socket.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

using kstate::testing::BackgroundProcess;
using kstate::testing::Emulator;
using kstate::testing::EmulatorOptions;
using kstate::testing::NotifySocket;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace fs = std::filesystem;
namespace json = kstate::json;
using namespace std::chrono_literals;

namespace {

unsigned short free_port() {
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

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

std::string config_map(const std::string& name, const std::string& color) {
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

  void start() {
    process = BackgroundProcess(
        {"/bin/sh", "-c", "exec \"$0\" daemon --config \"$1\" 2>\"$2\"", KSTATE_BINARY, config_path, log.string()});
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
};

}  // namespace

TEST_CASE("kstate daemon applies, updates and prunes as files are added, edited, broken and removed") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();

  auto ready = daemon.wait_notification("READY=1");
  REQUIRE(ready);
  CHECK(ready->find("STATUS=1 states: 1 created") != std::string::npos);
  CHECK(daemon.color("app") == "blue");
  CHECK(kstate::testing::http_get(daemon.port, "/readyz").status == 200);

  SECTION("a new file is applied; edits by rename and by sed -i update the object") {
    write_file(daemon.manifests / "extra.yaml", config_map("extra", "green"));
    CHECK(eventually([&] { return daemon.color("extra") == "green"; }));

    // Editors that write a temporary file and rename it over the original (vim, emacs, kubectl edit).
    write_file(daemon.manifests / ".extra.yaml.tmp", config_map("extra", "yellow"));
    fs::rename(daemon.manifests / ".extra.yaml.tmp", daemon.manifests / "extra.yaml");
    CHECK(eventually([&] { return daemon.color("extra") == "yellow"; }));

    auto sed =
        kstate::testing::run_process({"sed", "-i", "s/yellow/purple/", (daemon.manifests / "extra.yaml").string()});
    REQUIRE(sed.exit_code == 0);
    CHECK(eventually([&] { return daemon.color("extra") == "purple"; }));

    // Removing the file prunes its object, and only its object.
    fs::remove(daemon.manifests / "extra.yaml");
    CHECK(eventually([&] { return daemon.color("extra").empty(); }));
    CHECK(daemon.color("app") == "blue");
    CHECK(daemon.log_text().find("pruned ConfigMap/default/extra") != std::string::npos);

    const std::string metrics = daemon.metrics();
    CHECK(metrics.find("kstate_api_requests_total{verb=\"PATCH\",code=\"200\"}") != std::string::npos);
    CHECK(metrics.find("kstate_managed_objects 1") != std::string::npos);
    if (fs::exists("/usr/bin/promtool")) {
      kstate::testing::RunOptions with_input;
      with_input.stdin_data = metrics;
      auto check = kstate::testing::run_process({"/usr/bin/promtool", "check", "metrics"}, with_input);
      CHECK(check.exit_code == 0);
    }
  }

  SECTION("a broken file is reported and holds prune back; nothing already applied is deleted") {
    write_file(daemon.manifests / "keep.yaml", config_map("keep", "white"));
    REQUIRE(eventually([&] { return daemon.color("keep") == "white"; }));
    write_file(daemon.manifests / "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [half\n");
    CHECK(
        eventually([&] { return daemon.log_text().find("broken.yaml:5:1: YAML syntax error") != std::string::npos; }));
    // With a file that does not load, removing another manifest must not delete its object.
    fs::remove(daemon.manifests / "app.yaml");
    CHECK(eventually([&] {
      const std::string log = daemon.log_text();
      const auto removed = log.find("manifest removed: ");
      return removed != std::string::npos &&
             log.find("prune held back: a manifest file failed to load", removed) != std::string::npos;
    }));
    CHECK(daemon.color("app") == "blue");
    CHECK(daemon.metrics().find("kstate_reconciles_total{kind=\"files\",result=\"failure\"}") != std::string::npos);

    // Once the broken file is gone, the folder is consistent again and the object is pruned.
    fs::remove(daemon.manifests / "broken.yaml");
    const bool pruned = eventually([&] { return daemon.color("app").empty(); });
    INFO(daemon.log_text());
    CHECK(pruned);
    CHECK(daemon.color("keep") == "white");
  }

  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
  CHECK(daemon.wait_notification("STOPPING=1", 2s));
}

TEST_CASE("kstate daemon corrects drift at resync and reconciles everything on SIGHUP") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(daemon.color("app") == "blue");

  auto edited = emulator.request("PATCH", "/api/v1/namespaces/default/configmaps/app", R"({"data":{"color":"red"}})",
                                 "application/merge-patch+json");
  REQUIRE(edited.status == 200);
  REQUIRE(daemon.color("app") == "red");
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 5s));

  REQUIRE(emulator.request("DELETE", "/api/v1/namespaces/default/configmaps/app").status == 200);
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }, 5s));

  ::kill(daemon.process.pid(), SIGHUP);
  CHECK(daemon.wait_notification("RELOADING=1", 5s));
  auto ready = daemon.wait_notification("READY=1", 5s);
  REQUIRE(ready);
  CHECK(ready->find("1 unchanged") != std::string::npos);

  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("SIGTERM during a large apply exits 0 with STOPPING=1 and leaves only whole objects") {
  EmulatorOptions slow;
  slow.extra_args = {"--fault-latency-ms", "40"};
  Emulator emulator(slow);
  Daemon daemon(emulator);
  std::string many;
  for (int i = 0; i < 300; ++i) {
    many += "---\n" + config_map("item-" + std::to_string(i), "blue");
  }
  write_file(daemon.manifests / "many.yaml", many);
  daemon.start();

  auto count_items = [&] {
    auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps");
    auto doc = json::parse(reply.body);
    if (reply.status != 200 || !doc.ok()) {
      return -1;
    }
    int items = 0;
    for (const auto& item : (*doc)["items"].GetArray()) {
      items += std::string(item["metadata"]["name"].GetString()).rfind("item-", 0) == 0 ? 1 : 0;
      // A whole object or none: every one that exists has its data.
      if (std::string(item["metadata"]["name"].GetString()).rfind("item-", 0) == 0) {
        REQUIRE(item.HasMember("data"));
        CHECK(std::string(item["data"]["color"].GetString()) == "blue");
      }
    }
    return items;
  };
  REQUIRE(eventually([&] { return count_items() > 0; }, 20s));
  const int before_stop = count_items();
  // The signal must arrive while the first reconcile is still applying.
  CHECK(before_stop < 300);
  const auto stop_started = std::chrono::steady_clock::now();
  CHECK(daemon.process.stop(SIGTERM, 40s) == 0);
  INFO("stopped in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_started).count() << " s");
  CHECK(daemon.wait_notification("STOPPING=1", 2s));
  const int created = count_items();
  INFO("objects at SIGTERM: " << before_stop << ", after exit: " << created);
  CHECK(created >= before_stop);
  CHECK(created <= 300);
}

TEST_CASE("kstate daemon waits for an unreachable API server, then reconciles and says READY") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  emulator.stop();
  daemon.start();

  auto waiting = daemon.wait_notification("STATUS=waiting for the API server", 10s);
  REQUIRE(waiting);
  CHECK(waiting->find("READY=1") == std::string::npos);
  CHECK(kstate::testing::http_get(daemon.port, "/readyz").status == 503);

  emulator.restart();
  auto ready = daemon.wait_notification("READY=1", 15s);
  REQUIRE(ready);
  CHECK(ready->find("1 created") != std::string::npos);
  CHECK(daemon.color("app") == "blue");
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}
