// What "never delete what kstate does not provably own" (issue 35, docs/ownership.md)
// means for `kstate daemon`, end to end against kstate-emulator: one writer per
// ApplySet (a second daemon holds back and says so; a leader that takes over prunes
// nothing it did not declare), files still being written or changed moments ago are
// not used for prune (at resync and at start-up as for file events; prune-delay counts
// from the last change in the folder), a 0-byte file or a FIFO where a manifest was
// keeps its objects, the folders above manifests-dir must be trusted, and discovery is
// revalidated at every full resync.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "core/json.hpp"
#include "states/writer.hpp"
#include "tests/daemon/daemon_process.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace ownership_e2e_test {

using kstate::testing::Emulator;
using kstate::testing::write_file;
namespace json = kstate::json;
using namespace std::chrono_literals;
using namespace kstate::testing::daemon_process;

namespace {

const std::string parent_path = "/api/v1/namespaces/default/secrets/kstate";

std::string uid_of(Emulator& emulator, const std::string& name) {
  auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
  if (reply.status != 200) {
    return "";
  }
  auto doc = json::parse(reply.body);
  return doc.ok() ? std::string(json::string_or(json::find_path(*doc, {"metadata", "uid"}), "")) : "";
}

std::string writer_of(Emulator& emulator) {
  auto reply = emulator.request("GET", parent_path);
  if (reply.status != 200) {
    return "";
  }
  auto doc = json::parse(reply.body);
  return doc.ok()
             ? std::string(json::string_or(json::find_path(*doc, {"metadata", "annotations", "kstate.io/writer"}), ""))
             : "";
}

// Requests of the log (since its last reset) with this method whose path starts with `prefix`.
int requests(Emulator& emulator, const std::string& method, const std::string& prefix) {
  return emulator.count_requests(method, prefix);
}

bool has_metric(Daemon& daemon, const std::string& line) {
  return daemon.metrics().find("\n" + line + "\n") != std::string::npos;
}

std::string many_config_maps(const std::string& prefix, int count) {
  std::string text;
  for (int i = 0; i < count; ++i) {
    text += (i == 0 ? "" : "---\n") + config_map(prefix + std::to_string(i), "blue");
  }
  return text;
}

// A writer holding a manifest open, as an editor or a generator paused half-way.
class HeldOpen {
 public:
  explicit HeldOpen(const fs::path& path, const std::string& first_part)
      : fd_(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::write(fd_, first_part.data(), first_part.size()) == static_cast<ssize_t>(first_part.size()));
  }
  ~HeldOpen() { close(); }
  void finish(const std::string& rest) {
    REQUIRE(::write(fd_, rest.data(), rest.size()) == static_cast<ssize_t>(rest.size()));
    close();
  }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_ = -1;
};

// The daemons' notifications are read while a test waits, as systemd does: with many
// reconciles, a NOTIFY_SOCKET nobody reads fills up and the daemon waits to send.
std::vector<Daemon*> running;

void drain() {
  for (Daemon* daemon : running) {
    while (auto message = daemon->notify.receive(1ms)) {
      daemon->notifications.push_back(*message);
    }
  }
}

void pass(std::chrono::milliseconds duration) {
  for (auto until = std::chrono::steady_clock::now() + duration; std::chrono::steady_clock::now() < until;) {
    drain();
    std::this_thread::sleep_for(20ms);
  }
}

bool within(std::chrono::milliseconds timeout, const std::function<bool()>& condition) {
  for (auto until = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < until;) {
    if (condition()) {
      return true;
    }
    pass(50ms);
  }
  return condition();
}

// Registers a started daemon for draining while it runs.
struct Draining {
  explicit Draining(std::initializer_list<Daemon*> daemons) : added(daemons) {
    running.insert(running.end(), added.begin(), added.end());
  }
  ~Draining() {
    for (Daemon* daemon : added) {
      running.erase(std::remove(running.begin(), running.end(), daemon), running.end());
    }
  }
  std::vector<Daemon*> added;
};

}  // namespace

TEST_CASE("two daemons on one ApplySet: the second writes nothing, says so, and takes over once told to") {
  Emulator emulator;
  Daemon first(emulator, "1s", "retry-interval: 1s\n");
  Draining draining_first{&first};
  write_file(first.manifests / "app.yaml", config_map("app", "blue"));
  write_file(first.manifests / "extra.yaml", config_map("extra", "green"));
  first.start();
  REQUIRE(first.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "extra").empty(); }));
  const std::string extra_uid = uid_of(emulator, "extra");
  const std::string first_writer = "daemon " + kstate::states::local_host_name() + ":" + first.manifests.string();
  CHECK(writer_of(emulator) == first_writer);

  // A second daemon whose folder lacks one file (another node with an older copy).
  Daemon second(emulator, "1s", "retry-interval: 1s\n");
  Draining draining_second{&second};
  write_file(second.manifests / "app.yaml", config_map("app", "blue"));
  emulator.reset_request_log();
  second.start();
  REQUIRE(second.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return has_metric(second, "kstate_applyset_writer_conflict 1"); }));
  auto ready = kstate::testing::http_get(second.port, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("reconciled by another writer (" + first_writer + ")") != std::string::npos);
  CHECK(second.log_text().find("ApplySet default/kstate is reconciled by " + first_writer) != std::string::npos);
  CHECK(has_metric(first, "kstate_applyset_writer_conflict 0"));

  // Several resyncs of both: no delete, no re-create, the first one's object intact.
  pass(4s);
  const int deletes = requests(emulator, "DELETE", "/");
  const int creates = requests(emulator, "POST", "/api/v1/namespaces/default/configmaps");
  const int second_writes = requests(emulator, "PATCH", "/api/v1/namespaces/default/configmaps");
  CHECK(deletes == 0);
  CHECK(creates == 0);
  std::cerr << "two daemons on one ApplySet, 4 s of 1 s resyncs: " << deletes << " deletes, " << creates
            << " re-creates, " << second_writes << " ConfigMap writes (the first's own, unchanged: 0 expected)\n";
  CHECK(uid_of(emulator, "extra") == extra_uid);
  CHECK(writer_of(emulator) == first_writer);

  // An operator resolves it: the first daemon goes, its record is removed; the second
  // claims the set at its next cycle, and keeps what only the first declared.
  CHECK(first.process.stop(SIGTERM, 20s) == 0);
  REQUIRE(emulator
              .request("PATCH", parent_path, R"({"metadata":{"annotations":{"kstate.io/writer":null}}})",
                       "application/merge-patch+json")
              .status == 200);
  const std::string second_writer = "daemon " + kstate::states::local_host_name() + ":" + second.manifests.string();
  REQUIRE(within(10s, [&] { return writer_of(emulator) == second_writer; }));
  REQUIRE(within(10s, [&] { return has_metric(second, "kstate_applyset_writer_conflict 0"); }));
  CHECK(within(10s, [&] { return kstate::testing::http_get(second.port, "/readyz").status == 200; }));
  pass(3s);  // resyncs, past prune-delay
  CHECK(uid_of(emulator, "extra") == extra_uid);
  CHECK(requests(emulator, "DELETE", "/") == 0);
  CHECK(second.log_text().find("recorded by an earlier writer: kept, and never pruned unless this writer declares "
                               "them") != std::string::npos);
  // What the second daemon declares itself it prunes as usual.
  write_file(second.manifests / "own.yaml", config_map("own", "red"));
  REQUIRE(within(10s, [&] { return second.color("own") == "red"; }));
  fs::remove(second.manifests / "own.yaml");
  CHECK(within(10s, [&] { return second.color("own").empty(); }));
  CHECK(uid_of(emulator, "extra") == extra_uid);
  const int stopped = second.process.stop(SIGTERM, 20s);
  INFO(second.log_text());
  CHECK(stopped == 0);
}

TEST_CASE("a leader that takes over with an older folder prunes nothing it did not declare itself") {
  Emulator emulator;
  const std::string election =
      "leader-election:\n  enabled: true\n  lease-name: kstate-takeover\n  lease-namespace: default\n"
      "  lease-duration: 2s\n  renew-deadline: 1s\n  retry-period: 200ms\nresync-interval: 1s\n";
  Daemon first(emulator, "1h", election);
  Draining draining_first{&first};
  write_file(first.manifests / "app.yaml", config_map("app", "blue"));
  write_file(first.manifests / "newer.yaml", many_config_maps("newer-", 10));
  first.start();
  REQUIRE(first.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "newer-9").empty(); }));
  std::map<std::string, std::string> uids;
  for (int i = 0; i < 10; ++i) {
    uids["newer-" + std::to_string(i)] = uid_of(emulator, "newer-" + std::to_string(i));
  }
  Daemon second(emulator, "1h", election);
  Draining draining_second{&second};
  write_file(second.manifests / "app.yaml", config_map("app", "blue"));  // the older folder
  second.start();
  REQUIRE(second.wait_notification("READY=1"));  // standby
  emulator.reset_request_log();

  CHECK(first.process.stop(SIGTERM, 20s) == 0);  // gives the lease up
  REQUIRE(within(10s, [&] { return has_metric(second, "kstate_leader 1"); }));
  const std::string second_writer = "daemon " + kstate::states::local_host_name() + ":" + second.manifests.string();
  REQUIRE(within(10s, [&] { return writer_of(emulator) == second_writer; }));
  pass(4s);  // resyncs, past prune-delay
  CHECK(requests(emulator, "DELETE", "/") == 0);
  int kept = 0;
  for (const auto& [name, uid] : uids) {
    INFO(name);
    CHECK(uid_of(emulator, name) == uid);
    kept += uid_of(emulator, name) == uid ? 1 : 0;
  }
  std::cerr << "leader takeover with an older folder: " << kept << " of 10 objects only the old leader declared kept, "
            << requests(emulator, "DELETE", "/") << " deletes\n";
  CHECK(second.log_text().find("10 recorded object(s) this writer does not declare were recorded by daemon ") !=
        std::string::npos);
  CHECK(second.log_text().find("taking over from daemon ") != std::string::npos);
  CHECK(second.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("a resync never prunes from a file held open half-written, nor applies its half document") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "keep.yaml", config_map("keep", "white"));
  const std::string whole = many_config_maps("batch-", 10);
  write_file(daemon.manifests / "batch.yaml", whole);
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "batch-9").empty(); }));
  std::map<std::string, std::string> uids;
  for (int i = 0; i < 10; ++i) {
    uids["batch-" + std::to_string(i)] = uid_of(emulator, "batch-" + std::to_string(i));
  }
  emulator.reset_request_log();
  {
    // Truncated and held open with half a document: a ConfigMap named "bat" so far.
    HeldOpen writer(daemon.manifests / "batch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bat");
    pass(5s);  // five resyncs, past prune-delay
    CHECK(requests(emulator, "DELETE", "/") == 0);
    CHECK(uid_of(emulator, "bat").empty());
    for (const auto& [name, uid] : uids) {
      INFO(name);
      CHECK(uid_of(emulator, name) == uid);
    }
    CHECK(daemon.log_text().find("batch.yaml: open for writing") != std::string::npos);
    writer.finish(whole.substr(std::string("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bat").size()));
  }
  pass(3s);
  CHECK(requests(emulator, "DELETE", "/") == 0);
  CHECK(requests(emulator, "POST", "/api/v1/namespaces/default/configmaps") == 0);
  for (const auto& [name, uid] : uids) {
    INFO(name);
    CHECK(uid_of(emulator, name) == uid);
  }
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("a daemon started while a manifest is being written waits for it") {
  Emulator emulator;
  const std::string whole = many_config_maps("batch-", 10);
  Daemon daemon(emulator, "1s");
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "batch.yaml", whole);
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "batch-9").empty(); }));
  std::map<std::string, std::string> uids;
  for (int i = 0; i < 10; ++i) {
    uids["batch-" + std::to_string(i)] = uid_of(emulator, "batch-" + std::to_string(i));
  }
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);

  // The same daemon (same host and folder: the set's writer) restarts while a writer
  // has the file truncated and open.
  emulator.reset_request_log();
  const std::string head = "apiVersion: v1\nkind: ConfigMap\n";
  HeldOpen writer(daemon.manifests / "batch.yaml", head);
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  pass(4s);
  CHECK(requests(emulator, "DELETE", "/") == 0);
  CHECK(daemon.log_text().find("batch.yaml: open for writing") != std::string::npos);
  writer.finish(whole.substr(head.size()));
  pass(3s);
  CHECK(requests(emulator, "DELETE", "/") == 0);
  for (const auto& [name, uid] : uids) {
    INFO(name);
    CHECK(uid_of(emulator, name) == uid);
  }
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("prune-delay counts from the last change in the folder at resync too: moved objects are never deleted") {
  Emulator emulator;
  Daemon daemon(emulator, "1s", "prune-delay: 2s\n");
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "a.yaml", config_map("a", "blue") + "---\n" + config_map("moving", "green"));
  write_file(daemon.manifests / "b.yaml", config_map("b", "blue"));
  write_file(daemon.manifests / "gone.yaml", config_map("gone", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "moving").empty(); }));
  const std::string moving_uid = uid_of(emulator, "moving");
  emulator.reset_request_log();
  // Ten moves of one object between two files, the paste 300 ms after the cut, with a
  // resync every second.
  for (int move = 0; move < 10; ++move) {
    const bool to_b = move % 2 == 0;
    write_file(daemon.manifests / (to_b ? "a.yaml" : "b.yaml"), config_map(to_b ? "a" : "b", "blue"));
    pass(300ms);
    write_file(daemon.manifests / (to_b ? "b.yaml" : "a.yaml"),
               config_map(to_b ? "b" : "a", "blue") + "---\n" + config_map("moving", "green"));
    pass(700ms);
  }
  pass(3s);
  CHECK(requests(emulator, "DELETE", "/") == 0);
  CHECK(uid_of(emulator, "moving") == moving_uid);

  // A removed file's object goes, but not before the folder has been quiet for
  // prune-delay (a resync 0.5 s after the removal used to prune it at once).
  const auto removed_at = std::chrono::steady_clock::now();
  fs::remove(daemon.manifests / "gone.yaml");
  const bool pruned = within(15s, [&] { return uid_of(emulator, "gone").empty(); });
  INFO(daemon.log_text());
  REQUIRE(pruned);
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - removed_at).count();
  INFO("pruned " << after << " s after the removal");
  CHECK(after >= 1.9);
  std::cerr << "resync and prune-delay: 10 moves 300 ms apart with a 1 s resync, 0 deletes; a removed file's "
               "object pruned "
            << after << " s after the removal (prune-delay 2 s)\n";
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("a 0-byte file or a FIFO where a manifest was keeps its objects; removing it removes them") {
  Emulator emulator;
  Daemon daemon(emulator, "1s");
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "emptied.yaml",
             config_map("emptied-1", "blue") + "---\n" + config_map("emptied-2", "blue"));
  write_file(daemon.manifests / "piped.yaml", config_map("piped", "blue"));
  write_file(daemon.manifests / "keep.yaml", config_map("keep", "blue"));
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] { return !uid_of(emulator, "piped").empty(); }));
  emulator.reset_request_log();

  write_file(daemon.manifests / "emptied.yaml", "");
  fs::remove(daemon.manifests / "piped.yaml");
  REQUIRE(::mkfifo((daemon.manifests / "piped.yaml").c_str(), 0600) == 0);
  pass(5s);  // resyncs, past the settle window and prune-delay
  CHECK(requests(emulator, "DELETE", "/") == 0);
  CHECK_FALSE(uid_of(emulator, "emptied-1").empty());
  CHECK_FALSE(uid_of(emulator, "piped").empty());
  const std::string log = daemon.log_text();
  CHECK(log.find("emptied.yaml: empty (0 bytes): its objects are kept; remove the file to remove them") !=
        std::string::npos);
  CHECK(log.find("piped.yaml: not a regular file") != std::string::npos);

  fs::remove(daemon.manifests / "emptied.yaml");
  fs::remove(daemon.manifests / "piped.yaml");
  CHECK(within(15s, [&] { return uid_of(emulator, "emptied-1").empty() && uid_of(emulator, "piped").empty(); }));
  CHECK_FALSE(uid_of(emulator, "keep").empty());
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("the daemon refuses a manifests-dir below a folder others may write or own, at start and at reload") {
  Emulator emulator;
  Daemon daemon(emulator);
  Draining draining_daemon{&daemon};
  const fs::path parent = daemon.work.path();
  fs::permissions(parent, fs::perms(0755));
  const auto start_once = [&] {
    return kstate::testing::run_process({KSTATE_BINARY, "daemon", "--config", daemon.config_path});
  };
  SECTION("a parent writable by others") {
    fs::permissions(parent, fs::perms(0777));
    auto run = start_once();
    CHECK(run.exit_code == 2);
    CHECK(run.err == "kstate daemon: manifests-dir " + daemon.manifests.string() + ": refused: the folder " +
                         parent.string() +
                         " on the way to the manifests is writable by group or others, who could replace what "
                         "kstate reads (fix: chmod go-w " +
                         parent.string() + ", or set check-manifest-permissions: false)\n");
    fs::permissions(parent, fs::perms(0755));
  }
  if (::geteuid() == 0) {
    SECTION("a parent owned by another user") {
      REQUIRE(::chown(parent.c_str(), 4321, 4321) == 0);
      auto run = start_once();
      CHECK(run.exit_code == 2);
      CHECK(run.err.find("refused: the folder " + parent.string() +
                         " on the way to the manifests is owned by uid "
                         "4321") != std::string::npos);
      CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
      REQUIRE(::chown(parent.c_str(), 0, 0) == 0);
    }
    SECTION("manifests-dir swapped for a symbolic link another user owns") {
      const fs::path elsewhere = parent / "elsewhere";
      fs::create_directories(elsewhere);
      write_file(elsewhere / "harmless.yaml", config_map("harmless", "blue"));
      fs::remove_all(daemon.manifests);
      fs::create_directory_symlink(elsewhere, daemon.manifests);
      REQUIRE(::lchown(daemon.manifests.c_str(), 4321, 4321) == 0);
      auto run = start_once();
      CHECK(run.exit_code == 2);
      CHECK(run.err.find("refused: the symbolic link " + daemon.manifests.string()) != std::string::npos);
      CHECK(emulator.request("GET", "/api/v1/namespaces/default/configmaps/harmless").status == 404);
    }
  }
  SECTION("a reload to such a folder is refused; the daemon keeps the one it has") {
    write_file(daemon.manifests / "app.yaml", config_map("app", "blue"));
    daemon.start();
    REQUIRE(daemon.wait_notification("READY=1"));
    const fs::path open_folder = parent / "open";
    fs::create_directories(open_folder / "manifests");
    fs::permissions(open_folder, fs::perms(0777));
    std::string config = kstate::testing::read_file(daemon.config_path);
    config.replace(config.find(daemon.manifests.string()), daemon.manifests.string().size(),
                   (open_folder / "manifests").string());
    write_file(daemon.config_path, config);
    REQUIRE(::kill(daemon.process.pid(), SIGHUP) == 0);
    CHECK(within(10s, [&] {
      return daemon.log_text().find("configuration reload failed, keeping the previous one: manifests-dir " +
                                    (open_folder / "manifests").string() + ": refused: the folder " +
                                    open_folder.string()) != std::string::npos;
    }));
    CHECK(daemon.color("app") == "blue");
    CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
  }
}

TEST_CASE(
    "every full resync revalidates discovery (two 304s), and a CRD's new plural and scope are picked up "
    "without a restart") {
  Emulator emulator;
  const auto crd = [](const std::string& plural, const std::string& scope) {
    return R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":")" +
           plural + R"(.example.com"},"spec":{"group":"example.com","scope":")" + scope + R"(","names":{"plural":")" +
           plural +
           R"(","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":)"
           R"({"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})";
  };
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  // Someone else's CRD; the daemon manages a custom resource of it.
  REQUIRE(emulator.request("POST", crds, crd("widgets", "Namespaced")).status == 201);
  REQUIRE(within(10s, [&] { return emulator.request("GET", "/apis/example.com/v1/widgets").status == 200; }));
  Daemon daemon(emulator, "1s");
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "widget.yaml",
             "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {size: 1}\n");
  daemon.start();
  REQUIRE(daemon.wait_notification("READY=1"));
  REQUIRE(within(10s, [&] {
    return emulator.request("GET", "/apis/example.com/v1/namespaces/default/widgets/w1").status == 200;
  }));
  emulator.reset_request_log();
  pass(2500ms);
  // Each resync asked with If-None-Match and got 304 (the emulator answers as the
  // recordings 04/05 of a real kube-apiserver do).
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  int not_modified = 0;
  for (const auto& entry : json::find(*log, "requests")->GetArray()) {
    const std::string path(json::string_or(json::find(entry, "path"), ""));
    const json::Value* code = json::find(entry, "code");
    if ((path == "/api" || path == "/apis") && code != nullptr && code->IsInt() && code->GetInt() == 304) {
      ++not_modified;
    }
  }
  CHECK(not_modified >= 4);  // two resyncs at least, two documents each

  // Its owner replaces the CRD with a cluster-scoped one of another plural (an
  // operator's upgrade), and the manifest follows: served without a restart.
  REQUIRE(emulator.request("DELETE", crds + "/widgets.example.com").status == 200);
  REQUIRE(within(10s, [&] { return emulator.request("GET", crds + "/widgets.example.com").status == 404; }));
  REQUIRE(emulator.request("POST", crds, crd("gizmos", "Cluster")).status == 201);
  write_file(daemon.manifests / "widget.yaml",
             "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 2}\n");
  const bool served =
      within(20s, [&] { return emulator.request("GET", "/apis/example.com/v1/gizmos/w1").status == 200; });
  INFO(daemon.log_text());
  CHECK(served);
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

TEST_CASE("the daemon reports adopted objects (STATUS, log, metric) and refuses one Helm manages, naming the release") {
  Emulator emulator;
  const std::string configmaps = "/api/v1/namespaces/default/configmaps";
  REQUIRE(emulator
              .request("POST", configmaps,
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain"},"data":{"color":"red"}})")
              .status == 201);
  REQUIRE(emulator
              .request("POST", configmaps,
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"helm","labels":)"
                       R"({"app.kubernetes.io/managed-by":"Helm"},"annotations":{"meta.helm.sh/release-name":"web",)"
                       R"("meta.helm.sh/release-namespace":"team"}},"data":{"color":"red"}})")
              .status == 201);
  Daemon daemon(emulator);
  Draining draining_daemon{&daemon};
  write_file(daemon.manifests / "plain.yaml", config_map("plain", "blue"));
  write_file(daemon.manifests / "helm.yaml", config_map("helm", "blue"));
  daemon.start();
  auto reconciled = daemon.wait_notification("2 states: ");  // the first reconcile's STATUS (READY=1 is before it)
  REQUIRE(reconciled);
  CHECK(reconciled->find("2 states: 0 created, 0 updated, 0 deleted, 0 unchanged, 1 failed, 1 adopted") !=
        std::string::npos);
  CHECK(daemon.color("plain") == "blue");
  CHECK(daemon.color("helm") == "red");
  const std::string log = daemon.log_text();
  CHECK(log.find("adopted ConfigMap/default/plain") != std::string::npos);
  CHECK(log.find("ConfigMap/default/helm is managed by Helm release team/web") != std::string::npos);
  CHECK(has_metric(daemon, "kstate_state_results_total{result=\"adopted\"} 1"));
  CHECK(daemon.process.stop(SIGTERM, 20s) == 0);
}

}  // namespace ownership_e2e_test
