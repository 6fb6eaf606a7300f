// The daemon's reconciler against the emulator, with an injected wall clock: a resync
// reads again only the manifests whose stat cannot prove them unchanged, and still
// applies every change made on disk.
#include "daemon/states_reconciler.hpp"

#include <fcntl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "core/json.hpp"
#include "daemon/logging.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace states_reconciler_test {

using kstate::daemon::ReconcileSummary;
using kstate::daemon::StatesReconciler;
using kstate::testing::Emulator;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using namespace std::chrono_literals;

namespace {

std::string config_map(const std::string& name, const std::string& value) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  value: \"" +
         value + "\"\n";
}

// The "value" of a ConfigMap as the emulator stores it.
std::string stored_value(Emulator& emulator, const std::string& name) {
  auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
  REQUIRE(reply.status == 200);
  auto object = kstate::json::parse(reply.body);
  REQUIRE(object.ok());
  const auto* value = kstate::json::find_path(*object, {"data", "value"});
  return value != nullptr && value->IsString() ? value->GetString() : "";
}

// The real clock with its wall time `ahead` of the machine's (file times are real ones).
class AheadClock final : public kstate::Clock {
 public:
  explicit AheadClock(const std::chrono::seconds& ahead) : ahead_(ahead) {}
  SteadyTime steady_now() const override { return kstate::real_clock()->steady_now(); }
  WallTime wall_now() const override { return kstate::real_clock()->wall_now() + ahead_; }
  std::unique_ptr<kstate::Timer> make_timer(const boost::asio::any_io_executor& executor) const override {
    return kstate::real_clock()->make_timer(executor);
  }

 private:
  const std::chrono::seconds& ahead_;  // the fixture's, which tests move
};

void set_modified(const std::filesystem::path& path, const timespec& modified) {
  const timespec times[2] = {{0, UTIME_OMIT}, modified};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

struct Fixture {
  Emulator emulator;
  TempDir dir;
  kstate::daemon::MetricsRegistry registry;
  kstate::daemon::DaemonMetrics metrics{registry};
  boost::asio::io_context io;
  // The wall clock the reconciler sees: the real one plus `ahead`.
  std::chrono::seconds ahead{0};
  kstate::Duration prune_delay = 2s;
  kstate::states::StateOutput state_output = kstate::states::StateOutput::concise;

  std::unique_ptr<StatesReconciler> make() {
    kstate::daemon::DaemonConfig config;
    config.manifests_dir = (dir.path() / "manifests").string();
    config.kubeconfig = emulator.kubeconfig_path().string();
    config.cache_dir = (dir.path() / "cache").string();
    config.check_manifest_permissions = false;
    config.prune_delay = prune_delay;
    config.state_output = state_output;
    // No watches: run_sync runs the io_context until no work is left, and a watch never
    // ends (drift through watches: drift_e2e_test.cpp).
    config.watch_drift = false;
    auto reconciler = std::make_unique<StatesReconciler>(io, config, metrics, std::make_shared<AheadClock>(ahead));
    // At once: run_sync runs the io_context until no work is left, the release's wait included.
    reconciler->set_memory_release(nullptr, 0ms);
    // Files written a moment ago are read at once (the tests of the window set it).
    reconciler->set_settle_window(std::chrono::system_clock::duration::zero());
    return reconciler;
  }
  // A full reconcile that prunes now (the runner's at the limit of its wait for quiet).
  ReconcileSummary resync(StatesReconciler& reconciler) {
    return kstate::run_sync(io, reconciler.full_reconcile(kstate::daemon::FullPrune::now));
  }
  // A resync, start-up or SIGHUP: prunes only once the folder has been quiet for prune-delay.
  ReconcileSummary resync_when_quiet(StatesReconciler& reconciler) {
    return kstate::run_sync(io, reconciler.full_reconcile(kstate::daemon::FullPrune::when_quiet));
  }
};

}  // namespace

TEST_CASE("a resync reads only the manifests whose stat may have changed since they were read") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  for (const char* name : {"one", "two", "three"}) {
    write_file(manifests / (std::string(name) + ".yaml"), config_map(name, "v1"));
  }
  auto reconciler = fixture.make();

  ReconcileSummary first = fixture.resync(*reconciler);
  REQUIRE(first.succeeded());
  CHECK(first.created == 3);
  CHECK(first.files_read == 3);

  // Just written: their ctime is within the racy window of the stat taken when they
  // were read, so each is read (and hashed) again.
  ReconcileSummary racy = fixture.resync(*reconciler);
  CHECK(racy.unchanged == 3);
  CHECK(racy.files_read == 3);

  // Seconds later the same stat proves them unchanged: nothing is read.
  fixture.ahead = 3s;
  CHECK(fixture.resync(*reconciler).files_read == 3);  // records stats taken 3 s after the ctime
  ReconcileSummary quiet = fixture.resync(*reconciler);
  CHECK(quiet.succeeded());
  CHECK(quiet.unchanged == 3);
  CHECK(quiet.files_read == 0);

  SECTION("a file rewritten with the same size and its old mtime put back is read and applied") {
    struct stat before {};
    REQUIRE(::stat((manifests / "two.yaml").c_str(), &before) == 0);
    write_file(manifests / "two.yaml", config_map("two", "v2"));
    set_modified(manifests / "two.yaml", before.st_mtim);
    ReconcileSummary changed = fixture.resync(*reconciler);
    CHECK(changed.files_read == 1);
    CHECK(changed.updated == 1);
    CHECK(stored_value(fixture.emulator, "two") == "v2");
  }
  SECTION("a file replaced by a rename is read and applied") {
    write_file(manifests / ".three.tmp", config_map("three", "v3"));
    std::filesystem::rename(manifests / ".three.tmp", manifests / "three.yaml");
    ReconcileSummary changed = fixture.resync(*reconciler);
    CHECK(changed.files_read == 1);
    CHECK(changed.updated == 1);
    CHECK(stored_value(fixture.emulator, "three") == "v3");
  }
  SECTION("a removed file's objects are pruned without reading the others") {
    std::filesystem::remove(manifests / "one.yaml");
    ReconcileSummary removed = fixture.resync(*reconciler);
    CHECK(removed.files_read == 0);
    CHECK(removed.deleted == 1);
    CHECK(fixture.emulator.request("GET", "/api/v1/namespaces/default/configmaps/one").status == 404);
  }
}

TEST_CASE("a file event reloads that file alone; a path not seen before is applied only if the folder lists it") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  for (const char* name : {"one", "two"}) {
    write_file(manifests / (std::string(name) + ".yaml"), config_map(name, "v1"));
  }
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).created == 2);
  auto files_changed = [&](std::vector<std::string> changed) {
    for (auto& path : changed) {
      path = (manifests / path).string();
    }
    return kstate::run_sync(fixture.io, reconciler->reconcile_files(std::move(changed), {}));
  };

  // A file the last listing found: read again and applied, the other file untouched.
  write_file(manifests / "one.yaml", config_map("one", "v2"));
  ReconcileSummary edited = files_changed({"one.yaml"});
  CHECK(edited.succeeded());
  CHECK(edited.files_read == 1);
  CHECK(edited.states == 1);
  CHECK(edited.updated == 1);
  CHECK(stored_value(fixture.emulator, "one") == "v2");

  // New paths: one in a hidden folder (never a manifest, whoever reports it) and one
  // the folder lists; in the same batch as a known file.
  write_file(manifests / ".drafts" / "three.yaml", config_map("three", "v1"));
  write_file(manifests / "four.yaml", config_map("four", "v1"));
  write_file(manifests / "two.yaml", config_map("two", "v2"));
  ReconcileSummary added = files_changed({".drafts/three.yaml", "four.yaml", "two.yaml"});
  CHECK(added.succeeded());
  CHECK(added.created == 1);
  CHECK(added.updated == 1);
  CHECK(fixture.emulator.request("GET", "/api/v1/namespaces/default/configmaps/three").status == 404);
  CHECK(stored_value(fixture.emulator, "four") == "v1");
  CHECK(stored_value(fixture.emulator, "two") == "v2");

  // A known path that is no longer a regular file is not read as one.
  std::filesystem::remove(manifests / "four.yaml");
  std::filesystem::create_directory(manifests / "four.yaml");
  ReconcileSummary replaced = files_changed({"four.yaml"});
  CHECK(replaced.failed == 0);
  CHECK(replaced.created + replaced.updated == 0);
}

TEST_CASE("a file change that takes an object out of the manifests leaves its prune to the next full reconcile") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  write_file(manifests / "two.yaml", config_map("two", "v1"));
  auto uid_of = [&](const std::string& name) {
    auto reply = fixture.emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
    if (reply.status != 200) {
      return std::string();
    }
    auto object = kstate::json::parse(reply.body);
    REQUIRE(object.ok());
    return std::string(kstate::json::string_or(kstate::json::find_path(*object, {"metadata", "uid"}), ""));
  };
  auto reconcile_files = [&](StatesReconciler& reconciler, std::vector<std::string> changed,
                             std::vector<std::string> removed) {
    for (auto* list : {&changed, &removed}) {
      for (auto& path : *list) {
        path = (manifests / path).string();
      }
    }
    return kstate::run_sync(fixture.io, reconciler.reconcile_files(std::move(changed), std::move(removed)));
  };

  SECTION("moved to another file by a second write: never deleted") {
    auto reconciler = fixture.make();
    REQUIRE(fixture.resync(*reconciler).created == 2);
    const std::string uid = uid_of("two");
    REQUIRE_FALSE(uid.empty());
    std::filesystem::remove(manifests / "two.yaml");
    ReconcileSummary removed = reconcile_files(*reconciler, {}, {"two.yaml"});
    CHECK(removed.succeeded());
    CHECK(removed.deleted == 0);
    CHECK(removed.prune_deferred == 1);
    CHECK(removed.describe().ends_with(", 1 to prune once the folder is quiet"));
    CHECK(uid_of("two") == uid);

    write_file(manifests / "three.yaml", config_map("two", "v1"));
    ReconcileSummary moved = reconcile_files(*reconciler, {"three.yaml"}, {});
    CHECK(moved.succeeded());
    CHECK(moved.prune_deferred == 0);
    ReconcileSummary full = fixture.resync(*reconciler);
    CHECK(full.succeeded());
    CHECK(full.deleted == 0);
    CHECK(uid_of("two") == uid);
  }
  SECTION("removed for good: the full reconcile prunes it") {
    auto reconciler = fixture.make();
    REQUIRE(fixture.resync(*reconciler).created == 2);
    std::filesystem::remove(manifests / "two.yaml");
    CHECK(reconcile_files(*reconciler, {}, {"two.yaml"}).prune_deferred == 1);
    // Still owed by a change to another file meanwhile (a prune held back by a
    // failed file must run once that file is fixed, whichever file that is).
    write_file(manifests / "one.yaml", config_map("one", "v2"));
    ReconcileSummary other = reconcile_files(*reconciler, {"one.yaml"}, {});
    CHECK(other.updated == 1);
    CHECK(other.prune_deferred == 1);
    CHECK_FALSE(uid_of("two").empty());
    ReconcileSummary full = fixture.resync(*reconciler);
    CHECK(full.deleted == 1);
    CHECK(full.prune_deferred == 0);
    CHECK(uid_of("two").empty());
    CHECK_FALSE(uid_of("one").empty());
  }
  SECTION("prune-delay 0: the change's own reconcile prunes it") {
    fixture.prune_delay = kstate::Duration::zero();
    auto reconciler = fixture.make();
    REQUIRE(fixture.resync(*reconciler).created == 2);
    std::filesystem::remove(manifests / "two.yaml");
    ReconcileSummary removed = reconcile_files(*reconciler, {}, {"two.yaml"});
    CHECK(removed.deleted == 1);
    CHECK(removed.prune_deferred == 0);
    CHECK(uid_of("two").empty());
  }
}

TEST_CASE("a file event's cycle runs that file's states and still sees what the other files declare") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  write_file(manifests / "two.yaml", config_map("two", "v1"));
  // The same object, identical, in two files (a state document and a plain object):
  // one state, no conflict.
  auto shared_state = [](const std::string& value) {
    return "shared-config:\n  object_present:\n    manifest:\n      apiVersion: v1\n      kind: ConfigMap\n"
           "      metadata: {name: shared, namespace: default}\n      data: {value: \"" +
           value + "\"}\n";
  };
  write_file(manifests / "shared-a.yaml", shared_state("v1"));
  write_file(manifests / "shared-b.yaml", config_map("shared", "v1"));
  write_file(manifests / "widgets.yaml",
             "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
             "  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n"
             "  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n"
             "    - name: v1\n      served: true\n      storage: true\n"
             "      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n");
  auto widget = [](const std::string& size) {
    return "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: gear\n  namespace: default\nspec:\n  size: " +
           size + "\n";
  };
  write_file(manifests / "gear.yaml", widget("1"));
  auto reconciler = fixture.make();
  ReconcileSummary first = fixture.resync(*reconciler);
  INFO(first.describe() << " " << first.error);
  REQUIRE(first.succeeded());
  REQUIRE(first.created == 5);
  auto files_changed = [&](std::vector<std::string> changed) {
    for (auto& path : changed) {
      path = (manifests / path).string();
    }
    return kstate::run_sync(fixture.io, reconciler->reconcile_files(std::move(changed), {}));
  };

  write_file(manifests / "one.yaml", config_map("one", "v2"));
  ReconcileSummary one = files_changed({"one.yaml"});
  CHECK(one.succeeded());
  CHECK(one.states == 1);
  CHECK(one.updated == 1);
  CHECK(stored_value(fixture.emulator, "one") == "v2");

  // A custom resource in the changed file, its CRD in another one.
  write_file(manifests / "gear.yaml", widget("2"));
  ReconcileSummary gear = files_changed({"gear.yaml"});
  CHECK(gear.succeeded());
  CHECK(gear.updated == 1);
  auto stored_gear = fixture.emulator.request("GET", "/apis/example.com/v1/namespaces/default/widgets/gear");
  REQUIRE(stored_gear.status == 200);
  CHECK_THAT(stored_gear.body, Catch::Contains("\"size\":2"));

  // One of the two identical declarations edited (a comment) but not its object:
  // its state runs, and still no conflict.
  write_file(manifests / "shared-a.yaml", "# reviewed\n" + shared_state("v1"));
  ReconcileSummary same = files_changed({"shared-a.yaml"});
  CHECK(same.succeeded());
  CHECK(same.states == 1);
  CHECK(same.unchanged == 1);

  // Rewritten differently: the conflict with the file that did not change is reported.
  write_file(manifests / "shared-a.yaml", shared_state("v2"));
  ReconcileSummary differs = files_changed({"shared-a.yaml"});
  CHECK_FALSE(differs.error.empty());
  CHECK_THAT(differs.error, Catch::Contains("shared-b.yaml"));

  // Put back; then a full reconcile finds every object declared: nothing pruned.
  write_file(manifests / "shared-a.yaml", shared_state("v1"));
  CHECK(files_changed({"shared-a.yaml"}).succeeded());
  ReconcileSummary full = fixture.resync(*reconciler);
  CHECK(full.succeeded());
  CHECK(full.deleted == 0);
  CHECK(stored_value(fixture.emulator, "two") == "v1");
}

TEST_CASE("free memory goes back to the system once no cycle has run for a while, not after each cycle of a burst") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  auto reconciler = fixture.make();
  int releases = 0;
  // (a second: each cycle, even under AddressSanitizer, takes far less)
  reconciler->set_memory_release([&releases] { ++releases; }, 1000ms);
  auto run_for = [&](std::chrono::milliseconds time) {
    fixture.io.restart();
    fixture.io.run_for(time);
  };
  auto cycle = [&](const std::string& value) {
    write_file(manifests / "one.yaml", config_map("one", value));
    return kstate::run_until_complete(
        fixture.io, reconciler->reconcile_files({(manifests / "one.yaml").string()}, std::vector<std::string>{}));
  };

  REQUIRE(kstate::run_until_complete(fixture.io, reconciler->full_reconcile(kstate::daemon::FullPrune::now)).created ==
          1);
  CHECK(releases == 0);
  run_for(100ms);
  REQUIRE(cycle("v2").updated == 1);  // within the wait: it starts again
  run_for(100ms);
  REQUIRE(cycle("v3").updated == 1);
  run_for(800ms);
  CHECK(releases == 0);  // 0.8 s after the last cycle, 1 s after the first
  run_for(1000ms);
  CHECK(releases == 1);  // once, for the whole burst
}

TEST_CASE("free memory goes back after a file cycle, and after a batch that runs none") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  auto reconciler = fixture.make();
  int releases = 0;
  reconciler->set_memory_release([&releases] { ++releases; }, 200ms);
  auto run_for = [&](std::chrono::milliseconds time) {
    fixture.io.restart();
    fixture.io.run_for(time);
  };
  REQUIRE(kstate::run_until_complete(fixture.io, reconciler->full_reconcile(kstate::daemon::FullPrune::now)).created ==
          1);
  run_for(400ms);
  REQUIRE(releases == 1);

  // The event, the cycle that follows, then quiet: given back once.
  reconciler->prepare_for_cycle();
  write_file(manifests / "one.yaml", config_map("one", "v2"));
  REQUIRE(kstate::run_until_complete(
              fixture.io, reconciler->reconcile_files({(manifests / "one.yaml").string()}, std::vector<std::string>{}))
              .updated == 1);
  run_for(400ms);
  CHECK(releases == 2);

  // An event that brings no cycle (a file that is not a manifest): given back all the same.
  reconciler->prepare_for_cycle();
  run_for(400ms);
  CHECK(releases == 3);
}

TEST_CASE("an object a full reconcile kept for a cause of its own does not make each later edit ask for another") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  write_file(manifests / "two.yaml", config_map("two", "v1"));
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).created == 2);
  auto files_cycle = [&](std::vector<std::string> changed, std::vector<std::string> removed) {
    return kstate::run_until_complete(fixture.io, reconciler->reconcile_files(std::move(changed), std::move(removed)));
  };

  // Someone marks "two" as not to be pruned, and its file goes.
  auto marked = fixture.emulator.request("PATCH", "/api/v1/namespaces/default/configmaps/two",
                                         R"({"metadata":{"annotations":{"kstate.io/prune":"disabled"}}})",
                                         "application/merge-patch+json");
  REQUIRE(marked.status == 200);
  std::filesystem::remove(manifests / "two.yaml");
  CHECK(files_cycle({}, {(manifests / "two.yaml").string()}).prune_deferred == 1);
  // The full reconcile that follows keeps it (and keeps it recorded).
  ReconcileSummary full = fixture.resync(*reconciler);
  CHECK(full.deleted == 0);
  CHECK(stored_value(fixture.emulator, "two") == "v1");

  // An edit of another file: nothing new to prune, so no full reconcile is asked for.
  write_file(manifests / "one.yaml", config_map("one", "v2"));
  ReconcileSummary edit = files_cycle({(manifests / "one.yaml").string()}, {});
  CHECK(edit.updated == 1);
  CHECK(edit.prune_deferred == 0);

  // An object newly left undeclared still is.
  std::filesystem::remove(manifests / "one.yaml");
  CHECK(files_cycle({}, {(manifests / "one.yaml").string()}).prune_deferred == 1);
}

TEST_CASE("state-output: changes and full log each change's diff after its line; concise its line alone") {
  const auto output = GENERATE(kstate::states::StateOutput::concise, kstate::states::StateOutput::changes,
                               kstate::states::StateOutput::full);
  INFO(kstate::states::to_string(output));
  Fixture fixture;
  fixture.state_output = output;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).succeeded());
  write_file(manifests / "one.yaml", config_map("one", "v2"));

  const auto saved = spdlog::default_logger();
  std::ostringstream log;
  REQUIRE(kstate::daemon::setup_logging("info", kstate::daemon::LogFormat::text,
                                        std::make_shared<spdlog::sinks::ostream_sink_mt>(log))
              .ok());
  const ReconcileSummary changed = fixture.resync(*reconciler);
  spdlog::default_logger()->flush();
  spdlog::set_default_logger(saved);
  INFO(log.str());
  CHECK(changed.updated == 1);
  CHECK(log.str().find("updated ConfigMap/default/one (" + (manifests / "one.yaml").string() + ":1:1)") !=
        std::string::npos);
  const bool diff_logged = log.str().find("diff of ConfigMap/default/one (") != std::string::npos &&
                           // (one log line: the text format escapes line breaks)
                           log.str().find("\\n-  value: v1\\n+  value: v2\\n") != std::string::npos;
  CHECK(diff_logged == (output != kstate::states::StateOutput::concise));
}

namespace {

std::string uid_in(Emulator& emulator, const std::string& name) {
  auto reply = emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name);
  if (reply.status != 200) {
    return std::string();
  }
  auto object = kstate::json::parse(reply.body);
  REQUIRE(object.ok());
  return std::string(kstate::json::string_or(kstate::json::find_path(*object, {"metadata", "uid"}), ""));
}

}  // namespace

TEST_CASE("a resync or start-up right after a change in the folder defers prune until it has been quiet") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1"));
  write_file(manifests / "two.yaml", config_map("two", "v1"));
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync_when_quiet(*reconciler).created == 2);
  std::filesystem::remove(manifests / "two.yaml");  // the folder's times say: just now
  ReconcileSummary busy = fixture.resync_when_quiet(*reconciler);
  CHECK(busy.succeeded());
  CHECK(busy.deleted == 0);
  CHECK(busy.prune_deferred == 1);
  CHECK_FALSE(uid_in(fixture.emulator, "two").empty());
  fixture.ahead = 3s;  // past prune-delay (2 s)
  ReconcileSummary quiet = fixture.resync_when_quiet(*reconciler);
  CHECK(quiet.deleted == 1);
  CHECK(quiet.prune_deferred == 0);
  CHECK(uid_in(fixture.emulator, "two").empty());
  CHECK_FALSE(uid_in(fixture.emulator, "one").empty());
}

TEST_CASE("a full reconcile gives files changed moments ago time to settle before it reads them") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "one.yaml", config_map("one", "v1") + "---\n" + config_map("two", "v1"));
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).created == 2);
  reconciler->set_settle_window(2s);
  write_file(manifests / "one.yaml", config_map("one", "v2"));  // "two" cut a moment ago
  write_file(manifests / "new.yaml", config_map("new", "v1"));
  const auto started = std::chrono::steady_clock::now();
  ReconcileSummary settled = fixture.resync(*reconciler);
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(settled.describe());
  CHECK(took >= 1900ms);  // the rest of the 2 s window, then read
  CHECK(took < 6s);
  CHECK(settled.files_settling == 0);
  CHECK(settled.created == 1);
  CHECK(settled.updated == 1);
  CHECK(settled.deleted == 1);
  CHECK(uid_in(fixture.emulator, "two").empty());
  // Nothing changed since: no wait.
  const auto again_started = std::chrono::steady_clock::now();
  CHECK(fixture.resync(*reconciler).unchanged == 2);
  CHECK(std::chrono::steady_clock::now() - again_started < 1500ms);
}

TEST_CASE("a manifest held open for writing is neither read nor used for prune until its writer closes it") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  const std::string whole = config_map("a", "v1") + "---\n" + config_map("b", "v1");
  write_file(manifests / "batch.yaml", whole);
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).created == 2);
  const std::string half = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: half\n";
  const int fd = ::open((manifests / "batch.yaml").c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, half.data(), half.size()) == static_cast<ssize_t>(half.size()));
  fixture.ahead = 10s;  // long unchanged as far as the clock goes: only the lease tells
  ReconcileSummary held = fixture.resync(*reconciler);
  ReconcileSummary by_event =
      kstate::run_sync(fixture.io, reconciler->reconcile_files({(manifests / "batch.yaml").string()}, {}));
  ::close(fd);
  CHECK(held.deleted == 0);
  CHECK(held.created == 0);
  CHECK(by_event.created == 0);
  CHECK(fixture.emulator.request("GET", "/api/v1/namespaces/default/configmaps/half").status == 404);
  CHECK_FALSE(uid_in(fixture.emulator, "a").empty());
  CHECK_FALSE(uid_in(fixture.emulator, "b").empty());
  // Closed (with the whole of a new content): read and applied.
  write_file(manifests / "batch.yaml", config_map("a", "v2"));
  ReconcileSummary closed = fixture.resync(*reconciler);
  CHECK(closed.updated == 1);
  CHECK(closed.deleted == 1);
}

TEST_CASE("a 0-byte file or a FIFO where a manifest was keeps its objects; removing it prunes them") {
  Fixture fixture;
  const auto manifests = fixture.dir.path() / "manifests";
  write_file(manifests / "emptied.yaml", config_map("emptied", "v1"));
  write_file(manifests / "piped.yaml", config_map("piped", "v1"));
  write_file(manifests / "keep.yaml", config_map("keep", "v1"));
  auto reconciler = fixture.make();
  REQUIRE(fixture.resync(*reconciler).created == 3);
  write_file(manifests / "emptied.yaml", "");
  std::filesystem::remove(manifests / "piped.yaml");
  REQUIRE(::mkfifo((manifests / "piped.yaml").c_str(), 0600) == 0);
  ReconcileSummary kept = fixture.resync(*reconciler);
  CHECK(kept.deleted == 0);
  CHECK(kept.succeeded());
  CHECK_FALSE(uid_in(fixture.emulator, "emptied").empty());
  CHECK_FALSE(uid_in(fixture.emulator, "piped").empty());
  std::filesystem::remove(manifests / "emptied.yaml");
  std::filesystem::remove(manifests / "piped.yaml");
  ReconcileSummary removed = fixture.resync(*reconciler);
  CHECK(removed.deleted == 2);
  CHECK_FALSE(uid_in(fixture.emulator, "keep").empty());
}

}  // namespace states_reconciler_test
