// End-to-end runs of `kstate daemon` against kstate-emulator, with a real
// NOTIFY_SOCKET: what an operator sees (systemd notifications, objects in the
// cluster, /readyz and /metrics, the log) when files are added, edited the ways
// editors do it, broken, removed, when the cluster drifts, and on SIGHUP/SIGTERM.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "core/json.hpp"
#include "tests/daemon/daemon_process.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/daemon/notify_socket.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace daemon_e2e_test {

using kstate::testing::BackgroundProcess;
using kstate::testing::Emulator;
using kstate::testing::EmulatorOptions;
using kstate::testing::NotifySocket;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
using namespace std::chrono_literals;

using namespace kstate::testing::daemon_process;

TEST_CASE("kstate daemon applies, updates and prunes as files are added, edited, broken and removed") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();

  auto ready = daemon.wait_reconciled();
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

TEST_CASE(
    "kstate daemon: an object moved to another file by two writes keeps its UID; a removed one goes after "
    "prune-delay") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "a.yaml", config_map("moved", "blue"));
  write_file(daemon.manifests / "b.yaml", config_map("gone", "red"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  auto uid_of = [&](const std::string& name) {
    auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
    auto doc = json::parse(reply.body);
    return reply.status == 200 && doc.ok()
               ? std::string(json::string_or(json::find_path(*doc, {"metadata", "uid"}), ""))
               : std::string();
  };
  const std::string uid = uid_of("moved");
  REQUIRE_FALSE(uid.empty());

  // Cut from one file and pasted into another 300 ms later: two file events, each
  // reconciled at once; the object is never deleted in between.
  fs::remove(daemon.manifests / "a.yaml");
  std::this_thread::sleep_for(300ms);
  write_file(daemon.manifests / "c.yaml", config_map("moved", "green"));
  CHECK(eventually([&] { return daemon.color("moved") == "green"; }));
  CHECK(uid_of("moved") == uid);

  // Removed for good: pruned once the folder has been quiet for prune-delay (2 s).
  const auto removed_at = std::chrono::steady_clock::now();
  fs::remove(daemon.manifests / "b.yaml");
  CHECK(eventually([&] { return daemon.color("gone").empty(); }));
  CHECK(std::chrono::steady_clock::now() - removed_at >= 1900ms);
  CHECK(uid_of("moved") == uid);
  const std::string log = daemon.log_text();
  INFO(log);
  CHECK(log.find("pruned ConfigMap/default/gone") != std::string::npos);
  CHECK(log.find("pruned ConfigMap/default/moved") == std::string::npos);
  CHECK(log.find("pruned once the folder has been quiet for 2s") != std::string::npos);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("kstate daemon retries a failed state at retry-interval: an object still being deleted is created again") {
  Emulator emulator;
  // Another controller's finalizer holds the old object while it is being deleted.
  const std::string path = "/api/v1/namespaces/default/configmaps/app";
  REQUIRE(emulator
              .request("POST", "/api/v1/namespaces/default/configmaps",
                       R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "finalizers": )"
                       R"(["example.com/hold"]}, "data": {"color": "old"}})")
              .status == 201);
  REQUIRE(emulator.request("DELETE", path).status == 200);
  Daemon daemon(emulator, "1h", "retry-interval: 300ms\n");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();

  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK(ready->find("1 failed; retrying in 300ms") != std::string::npos);
  CHECK(daemon.color("app") == "old");
  // Retried (300 ms, 600 ms, ...) while it is still there, with no file change and the resync an hour away.
  CHECK(daemon.wait_notification("1 failed; retrying in 600ms"));
  CHECK(daemon.color("app") == "old");

  REQUIRE(
      emulator.request("PATCH", path, R"({"metadata": {"finalizers": null}})", "application/merge-patch+json").status ==
      200);
  CHECK(eventually([&] { return daemon.color("app") == "blue"; }));
  CHECK(daemon.wait_notification("1 created, 0 updated, 0 deleted, 0 unchanged, 0 failed"));
  const std::string log = daemon.log_text();
  INFO(log);
  CHECK(log.find("ConfigMap/default/app is being deleted (since ") != std::string::npos);
  CHECK(log.find("reconciling everything again in 300ms") != std::string::npos);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("kstate daemon corrects drift at resync and reconciles everything on SIGHUP") {
  Emulator emulator;
  Daemon daemon(emulator, "1s", "watch-drift: false\n");  // the resync alone (the watches: drift_e2e_test.cpp)
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
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

TEST_CASE("kstate daemon is READY at once with the API server down; STATUS and /readyz say what it waits for") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  emulator.stop();
  const auto started = std::chrono::steady_clock::now();
  daemon.start();

  // What `systemctl start kstate` waits for: running and watching, not the API server.
  auto ready = daemon.wait_notification("READY=1", 10s);
  REQUIRE(ready);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(*ready == "READY=1\nSTATUS=watching " + daemon.manifests.string() + "; first reconcile of " +
                      daemon.manifests.string() + " in progress");
  auto waiting = daemon.wait_notification("STATUS=waiting for the API server", 30s);
  REQUIRE(waiting);
  CHECK(waiting->find("READY=1") == std::string::npos);
  auto readyz = kstate::testing::http_get(daemon.port, "/readyz");
  CHECK(readyz.status == 503);
  CHECK(readyz.body.find("not ready: waiting for the API server (attempt ") != std::string::npos);
  // The failed requests are counted by what failed, not as HTTP code 0.
  const std::string metrics = daemon.metrics();
  CHECK(metrics.find("kstate_api_request_failures_total{verb=\"GET\",failure=\"connect\"} ") != std::string::npos);
  CHECK(metrics.find("code=\"0\"") == std::string::npos);

  emulator.restart();
  auto reconciled = daemon.wait_reconciled(15s);
  REQUIRE(reconciled);
  CHECK(reconciled->find("1 created") != std::string::npos);
  CHECK(daemon.color("app") == "blue");
  CHECK(kstate::testing::http_get(daemon.port, "/readyz").status == 200);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("a config error exits 2 with one line, which the unit does not restart (RestartPreventExitStatus=2)") {
  TempDir work{"kstate-config-error"};
  write_file(work.path() / "config.yaml", "manifests-dir: /etc/kstate/manifests\nresync-intervall: 5m\n");
  auto run =
      kstate::testing::run_process({KSTATE_BINARY, "daemon", "--config", (work.path() / "config.yaml").string()});
  CHECK(run.exit_code == 2);
  CHECK(run.err == "kstate daemon: " + (work.path() / "config.yaml").string() +
                       ":2: resync-intervall: unknown key (did you mean \"resync-interval\"?)\n");
}

TEST_CASE("/readyz turns 503 when the API server goes away after start-up, and 200 again when it is back") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(kstate::testing::http_get(daemon.port, "/readyz").status == 200);

  emulator.stop();
  // The next resync finds it gone: its reads are retried first (5 retries, backoff from
  // 200 ms: 3-6 s), then one GET /version, not retried, tells "unreachable".
  kstate::testing::HttpResult readyz;
  CHECK(eventually(
      [&] {
        readyz = kstate::testing::http_get(daemon.port, "/readyz");
        return readyz.status == 503;
      },
      30s));
  CHECK_THAT(readyz.body, Catch::Contains("API server unreachable"));
  CHECK(daemon.metrics().find("kstate_ready 0\n") != std::string::npos);
  CHECK(kstate::testing::http_get(daemon.port, "/healthz").status == 200);  // alive, only not ready

  emulator.restart();
  CHECK(eventually([&] { return kstate::testing::http_get(daemon.port, "/readyz").status == 200; }, 15s));
  CHECK(daemon.color("app") == "blue");
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

namespace {

std::string lease_holder(Emulator& emulator) {
  auto reply = emulator.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/kstate-e2e");
  auto doc = json::parse(reply.body);
  if (reply.status != 200 || !doc.ok()) {
    return "";
  }
  return std::string(json::string_or(json::find_path(*doc, {"spec", "holderIdentity"}), ""));
}

// The field managers that wrote a ConfigMap in "default".
std::vector<std::string> managers_of(Emulator& emulator, const std::string& name) {
  std::vector<std::string> managers;
  auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
  auto doc = json::parse(reply.body);
  if (reply.status == 200 && doc.ok()) {
    if (const auto* fields = json::find_path(*doc, {"metadata", "managedFields"}); fields && fields->IsArray()) {
      for (const auto& entry : fields->GetArray()) {
        managers.emplace_back(json::string_or(json::find(entry, "manager"), ""));
      }
    }
  }
  return managers;
}

bool has_metric(Daemon& daemon, const std::string& line) {
  return daemon.metrics().find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("with adopt: false the daemon leaves an object it did not create alone and never prunes it") {
  Emulator emulator;
  // Someone else's ConfigMap, without kstate's labels.
  auto created = emulator.request("POST", "/api/v1/namespaces/default/configmaps",
                                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"theirs"},)"
                                  R"("data":{"color":"red"}})");
  REQUIRE(created.status == 201);
  Daemon daemon(emulator, "1h", "adopt: false\n");
  write_file(daemon.manifests / "theirs.yaml", config_map("theirs", "blue"));
  write_file(daemon.manifests / "ours.yaml", config_map("ours", "green"));
  daemon.start();

  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK(ready->find("1 created") != std::string::npos);
  CHECK(ready->find("1 failed") != std::string::npos);
  CHECK(daemon.color("ours") == "green");
  CHECK(daemon.color("theirs") == "red");  // untouched
  CHECK(eventually([&] {
    return daemon.log_text().find("ConfigMap/default/theirs already exists and is not managed by kstate") !=
           std::string::npos;
  }));
  CHECK(daemon.log_text().find("adopt: true") != std::string::npos);  // says how to opt in

  // Its manifest removed: kstate never owned it, so it is not pruned.
  fs::remove(daemon.manifests / "theirs.yaml");
  CHECK(eventually([&] { return daemon.log_text().find("manifest removed: ") != std::string::npos; }));
  CHECK(eventually([&] { return has_metric(daemon, "kstate_reconciles_total{kind=\"files\",result=\"success\"} 1"); }));
  CHECK(daemon.color("theirs") == "red");
  CHECK(daemon.log_text().find("pruned ConfigMap/default/theirs") == std::string::npos);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("leader election: of two daemons on one cluster only the leader writes, the other takes over when it dies") {
  Emulator emulator;
  const std::string election =
      "leader-election:\n  enabled: true\n  lease-name: kstate-e2e\n  lease-namespace: default\n"
      "  lease-duration: 2s\n  renew-deadline: 1s\n  retry-period: 200ms\n";
  Daemon first(emulator, "1h", election + "field-manager: kstate-first\n");
  write_file(first.manifests / "app.yaml", config_map("app", "blue"));
  first.start();
  auto first_ready = first.wait_reconciled();
  REQUIRE(first_ready);
  REQUIRE(first_ready->find("1 created") != std::string::npos);
  CHECK(has_metric(first, "kstate_leader 1"));

  Daemon second(emulator, "1h", election + "field-manager: kstate-second\n");
  write_file(second.manifests / "app.yaml", config_map("app", "blue"));
  write_file(second.manifests / "extra.yaml", config_map("extra", "green"));
  second.start();
  auto standby = second.wait_notification("STATUS=standby");
  REQUIRE(standby);
  CHECK(standby->find("STATUS=standby: not the leader (lease default/kstate-e2e held by ") != std::string::npos);
  CHECK(kstate::testing::http_get(second.port, "/healthz").status == 200);
  CHECK(has_metric(second, "kstate_leader 0"));
  // The standby wrote nothing: its file is not applied, the object has one manager.
  CHECK(second.color("extra").empty());
  CHECK(managers_of(emulator, "app") == std::vector<std::string>{"kstate-first"});
  const std::string leader = lease_holder(emulator);
  CHECK_FALSE(leader.empty());
  CHECK(second.log_text().find("held by " + leader) != std::string::npos);

  // The leader dies without giving the lease up: the standby takes over within the lease duration.
  const auto killed = std::chrono::steady_clock::now();
  CHECK(first.process.stop(SIGKILL, 5s) != 0);
  REQUIRE(eventually([&] { return has_metric(second, "kstate_leader 1"); }, 6s));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  INFO("takeover after " << took << " s");
  // 2 s of lease from the standby's last observation, which is at most a retry period
  // (200 ms, jitter up to 240 ms) old, plus one attempt.
  CHECK(took < 3.0);
  CHECK(eventually([&] { return second.color("extra") == "green"; }));
  CHECK(lease_holder(emulator) != leader);
  CHECK(second.process.stop(SIGTERM, 10s) == 0);
  // A clean stop gives the lease up.
  CHECK(lease_holder(emulator).empty());
}

TEST_CASE(
    "a resync with nothing changed costs one read per (kind, namespace) pair, the ApplySet parent and two 304s of "
    "discovery") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  // examples/ as shipped, copied so that its permissions are the test's own.
  fs::copy(fs::path(KSTATE_SOURCE_DIR) / "examples", daemon.manifests, fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(daemon.manifests)) {
    fs::permissions(entry.path(), fs::perms(entry.is_directory() ? 0755 : 0644));
  }
  daemon.start();
  auto ready = daemon.wait_reconciled(30s);
  REQUIRE(ready);
  INFO(*ready);
  REQUIRE(ready->find(" 0 failed") != std::string::npos);
  REQUIRE(eventually([&] { return has_metric(daemon, "kstate_reconciles_total{kind=\"full\",result=\"success\"} 2"); },
                     5s));
  // The next periodic resync, alone in the log.
  emulator.reset_request_log();
  REQUIRE(eventually([&] { return has_metric(daemon, "kstate_reconciles_total{kind=\"full\",result=\"success\"} 3"); },
                     5s));
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  std::vector<std::string> requests;
  for (const auto& request : (*log)["requests"].GetArray()) {
    requests.push_back(std::string(request["method"].GetString()) + " " + request["path"].GetString());
  }
  INFO("requests of one resync:\n"
       << [&] {
            std::string all;
            for (const auto& r : requests)
              all += r + "\n";
            return all;
          }());
  // examples/: Namespace kstate-demo; in kstate-demo: ConfigMap, Deployment, Secret,
  // Service (two: web present, web-legacy absent -> one LIST), ResourceQuota.
  // Discovery is revalidated at every resync (issue 35): /api and /apis with
  // If-None-Match, answered 304 without a body.
  const std::size_t kind_namespace_pairs = 6;
  CHECK(requests.size() <= kind_namespace_pairs + 1 + 2);
  for (const auto& request : requests) {
    CHECK(request.rfind("GET ", 0) == 0);  // nothing changed: nothing written
    CHECK(request != "GET /version");
  }
  CHECK(std::count(requests.begin(), requests.end(), "GET /api") == 1);
  CHECK(std::count(requests.begin(), requests.end(), "GET /apis") == 1);
  int not_modified = 0;
  for (const auto& request : (*log)["requests"].GetArray()) {
    const std::string path = request["path"].GetString();
    not_modified += (path == "/api" || path == "/apis") && request["code"].GetInt() == 304 ? 1 : 0;
  }
  CHECK(not_modified == 2);
  CHECK(std::count(requests.begin(), requests.end(), "GET /api/v1/namespaces/default/secrets/kstate") == 1);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("a manifest writable by others is refused with its name until fixed, and cache files are private") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  write_file(daemon.manifests / "open.yaml", config_map("open", "red"));
  fs::permissions(daemon.manifests / "open.yaml", fs::perms(0666));
  daemon.start();
  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK(daemon.color("app") == "blue");
  CHECK(daemon.color("open").empty());
  const std::string open_path = (daemon.manifests / "open.yaml").string();
  CHECK(daemon.log_text().find("refused: the file " + open_path + " is writable by group or others") !=
        std::string::npos);
  CHECK(daemon.log_text().find("prune held back") != std::string::npos);

  // Fixed: applied at the next resync.
  fs::permissions(daemon.manifests / "open.yaml", fs::perms(0644));
  CHECK(eventually([&] { return daemon.color("open") == "red"; }, 5s));

  // The discovery cache the daemon wrote: folders 0700, files 0600.
  const fs::path cache = daemon.work.path() / "cache";
  REQUIRE(fs::exists(cache));
  CHECK((fs::status(cache).permissions() & fs::perms::all) == fs::perms(0700));
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(cache)) {
    const auto mode = entry.status().permissions() & fs::perms::all;
    CHECK(mode == fs::perms(entry.is_directory() ? 0700 : 0600));
    files += entry.is_regular_file() ? 1 : 0;
  }
  CHECK(files > 0);
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
}

TEST_CASE("under systemd (JOURNAL_STREAM names stderr) each log line starts with its priority and has no time") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  write_file(daemon.manifests / "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [half\n");
  // systemd sets JOURNAL_STREAM to the device and inode of the stream it gave stderr.
  write_file(daemon.log, "");
  struct stat log_file {};
  REQUIRE(::stat(daemon.log.c_str(), &log_file) == 0);
  daemon.start("env JOURNAL_STREAM=" + std::to_string(log_file.st_dev) + ":" + std::to_string(log_file.st_ino));
  REQUIRE(daemon.wait_reconciled());
  REQUIRE(eventually([&] { return daemon.color("app") == "blue"; }));
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);

  std::vector<std::string> lines;
  std::istringstream log(daemon.log_text());
  for (std::string line; std::getline(log, line);) {
    lines.push_back(line);
  }
  INFO(daemon.log_text());
  REQUIRE_FALSE(lines.empty());
  auto has_line = [&lines](const std::string& prefix, const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.rfind(prefix, 0) == 0 && line.find(text) != std::string::npos;
    });
  };
  for (const std::string& line : lines) {
    CHECK(std::regex_match(line, std::regex("<[2-7]>[^0-9].*")));  // a priority, then no timestamp
  }
  CHECK(has_line("<6>", "kstate daemon starting"));
  CHECK(has_line("<6>", "created ConfigMap/default/app"));
  CHECK(has_line("<3>", "broken.yaml:5:1: YAML syntax error"));
}

TEST_CASE("a JOURNAL_STREAM that is not stderr (inherited, then redirected) keeps the text format") {
  Emulator emulator;
  Daemon daemon(emulator);
  write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
  daemon.start("env JOURNAL_STREAM=1:2");
  REQUIRE(daemon.wait_reconciled());
  CHECK(daemon.process.stop(SIGTERM, 10s) == 0);
  const std::string text = daemon.log_text();
  INFO(text);
  CHECK(std::regex_search(text, std::regex(R"(^\d{4}-\d\d-\d\dT[0-9:.]+[+-]\d\d:\d\d info kstate daemon starting)")));
  CHECK(text.find("<6>") == std::string::npos);
}

}  // namespace daemon_e2e_test
