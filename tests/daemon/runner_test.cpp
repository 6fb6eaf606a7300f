// The daemon runner end to end with a fake Reconciler: a real NOTIFY_SOCKET (READY,
// STATUS, RELOADING with MONOTONIC_USEC, STOPPING, WATCHDOG), real signals (SIGHUP,
// SIGTERM), real files in a watched folder, and /readyz and /metrics over HTTP. Time is
// simulated (tests/support/manual_clock.hpp): a test advances the daemon's clock, so a
// debounce, back-off, resync, prune-delay or lease expiry takes no real time and is
// checked to the millisecond; only real I/O (inotify, signals, the notify socket,
// HTTP) is waited for, on a condition with a bound.
#include "daemon/runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <deque>
#include <fstream>
#include <random>
#include <thread>

#include "tests/daemon/fake_reconciler.hpp"
#include "tests/daemon/http_client.hpp"
#include "tests/daemon/notify_socket.hpp"
#include "tests/support/manual_clock.hpp"

namespace runner_test {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using kstate::daemon::ChangeBatch;
using kstate::daemon::DaemonConfig;
using kstate::daemon::DaemonRunner;
using kstate::daemon::PendingWork;
using kstate::testing::FakeReconciler;
using kstate::testing::ManualClock;
using kstate::testing::NotifySocket;

TEST_CASE("the start-up and retry backoff doubles up to its cap") {
  using kstate::daemon::doubling_backoff;
  CHECK(doubling_backoff(1, 1s, 60s) == 1s);
  CHECK(doubling_backoff(2, 1s, 60s) == 2s);
  CHECK(doubling_backoff(4, 1s, 60s) == 8s);
  CHECK(doubling_backoff(7, 1s, 60s) == 60s);
  CHECK(doubling_backoff(100, 1s, 60s) == 60s);
  CHECK(doubling_backoff(3, 10s, 300s) == 40s);
}

TEST_CASE("resync jitter spreads the interval by the fraction, driven by the injected randomness") {
  using kstate::daemon::jittered;
  CHECK(jittered(300s, 0.1, 0.0) == 270s);
  CHECK(jittered(300s, 0.1, 0.5) == 300s);
  CHECK(jittered(300s, 0.1, 0.999999) > 329s);
  CHECK(jittered(300s, 0.0, 0.9) == 300s);
}

TEST_CASE("a prune waits for a quiet folder at most 15 prune-delays: 30 s by default, at once with 0s") {
  using kstate::daemon::prune_wait_limit;
  CHECK(prune_wait_limit(kstate::daemon::DaemonConfig{}.prune_delay) == 30s);
  CHECK(prune_wait_limit(500ms) == 7500ms);
  CHECK(prune_wait_limit(0s) == 0s);
}

TEST_CASE("pending work merges file batches and a full request covers them") {
  PendingWork pending;
  pending.add(ChangeBatch{{"/m/a.yaml", "/m/b.yaml"}, {}, false, ""});
  pending.add(ChangeBatch{{}, {"/m/a.yaml", "/m/c.yaml"}, false, ""});
  pending.add(ChangeBatch{{"/m/c.yaml"}, {}, false, ""});
  REQUIRE(pending.has_files());
  auto [changed, removed] = pending.take_files();
  CHECK(changed == std::vector<std::string>{"/m/b.yaml", "/m/c.yaml"});
  CHECK(removed == std::vector<std::string>{"/m/a.yaml"});
  CHECK_FALSE(pending.has_files());

  pending.add(ChangeBatch{{"/m/d.yaml"}, {}, false, ""});
  pending.add(ChangeBatch{{}, {}, true, "inotify queue overflow"});
  CHECK(pending.full_requested());
  CHECK(pending.take_full() == "inotify queue overflow");
  CHECK_FALSE(pending.has_files());
}

namespace {

struct RunningDaemon {
  fs::path base;
  fs::path manifests;
  fs::path staging;  // where put_manifest writes a file before renaming it into the folder
  NotifySocket notify;
  boost::asio::io_context io;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(io);
  FakeReconciler reconciler;
  kstate::daemon::SystemdNotifier notifier;
  kstate::daemon::MetricsRegistry registry;
  kstate::daemon::DaemonMetrics metrics{registry};
  DaemonConfig config;
  kstate::daemon::RunnerOptions options;
  std::function<kstate::Result<DaemonConfig>()> reloader;
  std::unique_ptr<DaemonRunner> runner;
  std::thread loop;
  int exit_code = -1;
  std::atomic<bool> loop_ended{false};
  std::vector<std::string> messages;  // every message received, in order
  std::deque<std::string> unread;     // received while time was advanced, not yet read by the test

  RunningDaemon() {
    std::random_device random;
    base = fs::temp_directory_path() / ("kstate-runner-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    manifests = base / "manifests";
    staging = base / "staging";
    fs::create_directories(manifests);
    fs::create_directories(staging);
    config.manifests_dir = manifests.string();
    config.listen_address = "127.0.0.1:0";
    config.debounce = 20ms;
    config.resync_interval = 1h;
    options.startup_backoff_initial = 10ms;
    options.startup_backoff_max = 40ms;
    options.shutdown_grace = 2s;
    options.random = [] { return 0.5; };
    options.clock = clock;
    reconciler.clock = clock;
  }
  ~RunningDaemon() {
    if (loop.joinable()) {
      runner->request_shutdown();
      // Its messages are read meanwhile: a test that failed early leaves them unread, and
      // a daemon whose notify socket is full (10 datagrams here) waits to send the next.
      // Time passes too, in case a reconcile is in flight (the shutdown bound ends it).
      while (!loop_ended) {
        next_message(10ms);
        if (!loop_ended) {
          clock->advance(1s);
        }
      }
      loop.join();
    }
    std::error_code ignored;
    fs::remove_all(base, ignored);
  }

  void start() {
    runner = std::make_unique<DaemonRunner>(io, config, reconciler, notifier, registry, metrics, reloader, options);
    // While the test advances time, the loop's messages are collected (so it never
    // blocks on a full socket) for next_message() to return in order.
    clock->run_elsewhere([this] {
      while (auto message = notify.receive(0ms)) {
        messages.push_back(*message);
        unread.push_back(*message);
      }
    });
    loop = std::thread([this] {
      exit_code = runner->run();
      loop_ended = true;
    });
    // READY=1 as soon as the daemon runs and watches, before any reconcile; signals
    // are handled from then on.
    auto first = next_message();
    REQUIRE(first);
    CHECK_THAT(*first, Catch::StartsWith("READY=1\nSTATUS=watching " + manifests.string() + "; "));
  }

  // Lets simulated time pass, once the loop has finished what it was doing (so the
  // timers it sets count from now).
  void advance(kstate::Clock::SteadyTime::duration duration) {
    clock->settle();
    clock->advance(duration);
  }

  // Writes a manifest the way deployment tools do (written aside, renamed into the
  // folder: one inotify event), waits for the watcher to read the event and lets the
  // folder stay quiet for the debounce: its batch is then handed to the loop.
  void put_manifest(const std::string& name, const std::string& content = "kind: ConfigMap\n") {
    const std::size_t prepared = reconciler.prepared();
    std::ofstream(staging / name) << content;
    fs::rename(staging / name, manifests / name);
    see_file_event(prepared);
  }
  void delete_manifest(const std::string& name) {
    const std::size_t prepared = reconciler.prepared();
    fs::remove(manifests / name);
    see_file_event(prepared);
  }
  void see_file_event(std::size_t prepared_before) {
    // A batch starting prepares the reconciler (on_batch_start): the event was read.
    REQUIRE(wait_until([&] { return reconciler.prepared() > prepared_before; }));
    advance(config.debounce);
  }

  // Advances time a debounce at a time until `condition` holds: for file events that
  // come as several inotify reads (a file written in place), bounded in real time.
  bool advance_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      advance(config.debounce);
      wait_until(condition, 2ms);
    }
    return true;
  }

  // The STATUS of the first full reconcile (the fake reconciler's cycles have 5 states).
  std::optional<std::string> wait_reconciled(std::chrono::milliseconds timeout = 3000ms) {
    return wait_for("STATUS=5 states", timeout);
  }

  std::optional<std::string> next_message(std::chrono::milliseconds timeout = 3000ms) {
    if (!unread.empty()) {
      std::string message = std::move(unread.front());
      unread.pop_front();
      return message;
    }
    auto message = notify.receive(timeout);
    if (message) {
      messages.push_back(*message);
    }
    return message;
  }

  // Reads the messages already sent.
  void drain() {
    while (next_message(0ms)) {
    }
  }

  std::size_t count_messages(const std::string& text) const {
    return static_cast<std::size_t>(std::count(messages.begin(), messages.end(), text));
  }

  // Reads messages until one starts with `prefix`; skips WATCHDOG=1 pings.
  std::optional<std::string> wait_for(const std::string& prefix, std::chrono::milliseconds timeout = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto message = next_message(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now() + 1ms));
      if (message && message->starts_with(prefix)) {
        return message;
      }
    }
    return std::nullopt;
  }

  // Polls `condition` (what the loop thread or real I/O does) until it holds, bounded.
  bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 3000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }

  // A stop takes no simulated time unless a reconcile is in flight (the tests of that
  // advance time themselves).
  int stop_with(int signal) {
    ::kill(::getpid(), signal);
    REQUIRE(wait_until([&] {
      drain();  // (a full notify socket would block the loop)
      return loop_ended.load();
    }));
    loop.join();
    drain();
    return exit_code;
  }
};

}  // namespace

TEST_CASE("runner: READY before the first reconcile, file changes reconciled, SIGHUP reloads, SIGTERM stops") {
  RunningDaemon daemon;
  std::atomic<int> reloads{0};
  daemon.reloader = [&]() -> kstate::Result<DaemonConfig> {
    ++reloads;
    DaemonConfig fresh = daemon.config;
    fresh.debounce = 30ms;
    return fresh;
  };
  daemon.start();

  CHECK(daemon.messages.front() == "READY=1\nSTATUS=watching " + daemon.manifests.string() + "; first reconcile of " +
                                       daemon.manifests.string() + " in progress");
  auto reconciled = daemon.wait_reconciled();
  REQUIRE(reconciled);
  CHECK(*reconciled == "STATUS=5 states: 0 created, 0 updated, 0 deleted, 5 unchanged, 0 failed");
  CHECK(daemon.reconciler.count("full") == 1);

  const auto port = daemon.runner->http_port();
  REQUIRE(port != 0);
  CHECK(kstate::testing::http_get(port, "/healthz").status == 200);
  CHECK(kstate::testing::http_get(port, "/readyz").status == 200);
  auto metrics = kstate::testing::http_get(port, "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("kstate_reconciles_total{kind=\"full\",result=\"success\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("kstate_managed_objects 5\n"));
  CHECK_THAT(metrics, Catch::Contains("kstate_ready 1\n"));
  CHECK_THAT(metrics, Catch::Contains("kstate_leader 1\n"));

  // A dropped file is reconciled alone.
  daemon.put_manifest("app.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  auto status = daemon.wait_for("STATUS=");
  REQUIRE(status);
  CHECK(*status == "STATUS=1 states: 0 created, 0 updated, 0 deleted, 1 unchanged, 0 failed");
  auto calls = daemon.reconciler.calls();
  CHECK(calls.back().changed == std::vector<std::string>{(daemon.manifests / "app.yaml").string()});

  daemon.delete_manifest("app.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 2; }));
  CHECK(daemon.reconciler.calls().back().removed == std::vector<std::string>{(daemon.manifests / "app.yaml").string()});

  // SIGHUP: RELOADING=1 with MONOTONIC_USEC, config reloaded, full reconcile, READY=1.
  ::kill(::getpid(), SIGHUP);
  auto reloading = daemon.wait_for("RELOADING=1");
  REQUIRE(reloading);
  CHECK_THAT(*reloading, Catch::Contains("\nMONOTONIC_USEC="));
  auto ready_again = daemon.wait_for("READY=1");
  REQUIRE(ready_again);
  CHECK(reloads == 1);
  CHECK(daemon.reconciler.count("full") == 2);
  CHECK(daemon.reconciler.reconfigured_debounce() == std::vector<kstate::Duration>{30ms});

  CHECK(daemon.stop_with(SIGTERM) == 0);
  CHECK(std::any_of(daemon.messages.begin(), daemon.messages.end(),
                    [](const std::string& m) { return m.starts_with("STOPPING=1"); }));
  CHECK(daemon.reconciler.stop_requested());
}

TEST_CASE("runner: a file event prepares the reconciler while the folder settles, once per batch") {
  RunningDaemon daemon;
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  CHECK(daemon.reconciler.prepared() == 0);  // the start-up reconcile follows no file event

  // A file written in place: several events (create, write, close), one batch, prepared
  // once, before its reconcile started.
  for (const char* name : {"a.yaml", "b.yaml"}) {
    const std::size_t batch = daemon.reconciler.count("files") + 1;
    std::ofstream(daemon.manifests / name) << "kind: ConfigMap\n";
    REQUIRE(daemon.wait_until([&] { return daemon.reconciler.prepared() == batch; }));
    REQUIRE(daemon.advance_until([&] {
      auto calls = daemon.reconciler.calls();
      return daemon.reconciler.count("files") == batch && calls.back().finished;
    }));
    CHECK(daemon.reconciler.calls().back().prepared_before == batch);
    CHECK(daemon.reconciler.prepared() == batch);
  }
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: objects a file change took out are pruned by a full reconcile once the folder is quiet") {
  RunningDaemon daemon;
  daemon.config.prune_delay = 1s;
  daemon.reconciler.defer_prune_of_removed_files();
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.put_manifest("a.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  auto added = daemon.wait_for("STATUS=");
  REQUIRE(added);
  CHECK(*added == "STATUS=1 states: 0 created, 0 updated, 0 deleted, 1 unchanged, 0 failed");
  // Nothing taken out: no full reconcile follows.
  daemon.advance(1200ms);
  CHECK(daemon.reconciler.count("full") == 1);

  daemon.delete_manifest("a.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 2; }));
  auto status = daemon.wait_for("STATUS=");
  REQUIRE(status);
  CHECK(*status ==
        "STATUS=1 states: 0 created, 0 updated, 0 deleted, 1 unchanged, 0 failed, 1 to prune once the "
        "folder is quiet");
  // A write 300 ms later (the object declared again elsewhere, say) starts the wait again.
  daemon.advance(300ms);
  CHECK(daemon.reconciler.count("full") == 1);
  daemon.put_manifest("b.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 3; }));
  daemon.advance(999ms);
  CHECK(daemon.reconciler.count("full") == 1);  // the folder not yet quiet for prune-delay
  daemon.advance(1ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 2; }));
  auto calls = daemon.reconciler.calls();
  const auto& removal = calls[2];
  const auto& last_write = calls[3];
  const auto& prune = calls[4];
  REQUIRE(prune.kind == "full");
  CHECK(prune.started - last_write.started == 1s);
  CHECK(prune.started - removal.started >= 1300ms);
  // One full reconcile: the wait ends with it.
  daemon.advance(1200ms);
  CHECK(daemon.reconciler.count("full") == 2);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a folder that is never quiet holds a prune back for 15 prune-delays at most") {
  RunningDaemon daemon;
  daemon.config.prune_delay = 500ms;  // the limit: 7.5 s
  daemon.reconciler.defer_prune_of_removed_files();
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.put_manifest("a.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  daemon.delete_manifest("a.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 2; }));

  // Another file rewritten every 250 ms (a generator, say): never 500 ms of quiet.
  for (int i = 0; i < 60 && daemon.reconciler.count("full") == 1; ++i) {
    daemon.put_manifest("busy.yaml", "kind: ConfigMap\n# " + std::to_string(i) + "\n");
    daemon.advance(250ms - daemon.config.debounce);
  }
  // The prune ran while the writes went on, at the limit.
  REQUIRE(daemon.reconciler.count("full") == 2);
  auto calls = daemon.reconciler.calls();
  const auto& removal = calls[2];
  const auto prune = std::find_if(calls.begin() + 3, calls.end(), [](const auto& call) { return call.kind == "full"; });
  REQUIRE(prune != calls.end());
  CHECK(prune->prune_now);
  CHECK(prune->started - removal.started == 7500ms);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a full reconcile that finds the folder changed within prune-delay waits like a file change") {
  RunningDaemon daemon;
  daemon.config.prune_delay = 200ms;                      // the limit: 3 s
  daemon.reconciler.find_folder_busy_in_next_full(1000);  // every full asked to wait for quiet finds it busy
  daemon.start();
  REQUIRE(daemon.wait_reconciled());  // (start() read READY=1)
  // Full reconciles a prune-delay apart, then one told to prune now at the limit.
  const auto prunes_now = [&] {
    const auto calls = daemon.reconciler.calls();
    return std::find_if(calls.begin(), calls.end(), [](const auto& call) { return call.prune_now; }) != calls.end();
  };
  daemon.advance(2999ms);
  CHECK_FALSE(prunes_now());
  daemon.advance(1ms);
  REQUIRE(prunes_now());
  const auto calls = daemon.reconciler.calls();
  const auto now_call = std::find_if(calls.begin(), calls.end(), [](const auto& call) { return call.prune_now; });
  CHECK(now_call - calls.begin() >= 3);  // start-up, then waits for quiet
  CHECK(now_call->started - calls.front().started == 3s);
  for (auto call = calls.begin(); call != now_call; ++call) {
    CHECK(call->kind == "full");
    CHECK_FALSE(call->prune_now);
    CHECK((call + 1)->started - call->started == 200ms);
  }
  // Pruned: no more full reconciles (the resync is an hour away).
  const std::size_t after = daemon.reconciler.count("full");
  daemon.advance(600ms);
  CHECK(daemon.reconciler.count("full") == after);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: another writer of the ApplySet turns /readyz 503 with the reason and the metric 1, until resolved") {
  RunningDaemon daemon;
  daemon.config.retry_interval = 300ms;
  daemon.reconciler.find_other_writer_in_next(2);  // the start-up reconcile and the first retry
  daemon.start();
  REQUIRE(daemon.wait_for("STATUS="));  // the first reconcile's (start() read READY=1)
  auto readyz = kstate::testing::http_get(daemon.runner->http_port(), "/readyz");
  CHECK(readyz.status == 503);
  CHECK(readyz.body.find("ApplySet kube-system/kstate is reconciled by another writer (daemon "
                         "other-host:/etc/kstate/manifests): nothing applied, nothing pruned until that is resolved") !=
        std::string::npos);
  CHECK(daemon.metrics.applyset_writer_conflict.value() == 1);
  CHECK(daemon.metrics.ready.value() == 0);
  // Resolved (the fake stops answering the conflict): the retries (300 ms, then 600 ms
  // later) find the set its own.
  daemon.advance(900ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 3; }));
  REQUIRE(daemon.wait_until([&] { return daemon.metrics.applyset_writer_conflict.value() == 0; }));
  CHECK(daemon.wait_until(
      [&] { return kstate::testing::http_get(daemon.runner->http_port(), "/readyz").status == 200; }));
  CHECK(daemon.metrics.ready.value() == 1);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a manifest file changed moments ago is read again by a full reconcile once it has settled") {
  RunningDaemon daemon;
  daemon.config.prune_delay = 100ms;
  daemon.reconciler.find_settling_file_in_next_full(1);
  daemon.start();
  REQUIRE(daemon.wait_reconciled());  // (start() read READY=1)
  daemon.advance(1999ms);             // max(prune-delay, the 2 s settle window)
  CHECK(daemon.reconciler.count("full") == 1);
  daemon.advance(1ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 2; }));
  const auto calls = daemon.reconciler.calls();
  CHECK(calls[1].started - calls[0].started == 2s);
  daemon.advance(300ms);
  CHECK(daemon.reconciler.count("full") == 2);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: an unreachable API server is retried with backoff, reported in STATUS and /readyz") {
  RunningDaemon daemon;
  daemon.reconciler.fail_api_first(3);
  daemon.options.startup_backoff_initial = 150ms;
  daemon.options.startup_backoff_max = 150ms;
  daemon.start();

  auto waiting = daemon.wait_for("STATUS=waiting for the API server");
  REQUIRE(waiting);
  CHECK(*waiting ==
        "STATUS=waiting for the API server (attempt 1): dial tcp 127.0.0.1:6443: connection refused; retrying in "
        "150ms");
  auto readyz = kstate::testing::http_get(daemon.runner->http_port(), "/readyz");
  CHECK(readyz.status == 503);
  CHECK_THAT(readyz.body, Catch::Contains("waiting for the API server"));
  CHECK_THAT(readyz.body, Catch::Contains("connection refused"));

  daemon.advance(449ms);  // attempts at 150 and 300 ms fail too
  CHECK(daemon.reconciler.count("full") == 3);
  daemon.advance(1ms);
  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK(daemon.reconciler.count("full") == 4);
  CHECK(std::count_if(daemon.messages.begin(), daemon.messages.end(),
                      [](const std::string& m) { return m.starts_with("STATUS=waiting for the API server"); }) == 3);
  CHECK(kstate::testing::http_get(daemon.runner->http_port(), "/readyz").status == 200);
  auto metrics = kstate::testing::http_get(daemon.runner->http_port(), "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("kstate_reconciles_total{kind=\"full\",result=\"failure\"} 3\n"));
  CHECK(daemon.stop_with(SIGINT) == 0);
}

TEST_CASE("runner: SIGTERM lets the reconcile in flight finish, then exits 0") {
  RunningDaemon daemon;
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.reconciler.set_duration(400ms);
  daemon.put_manifest("big.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  ::kill(::getpid(), SIGTERM);
  auto stopping = daemon.wait_for("STOPPING=1");
  REQUIRE(stopping);
  CHECK(*stopping == "STOPPING=1\nSTATUS=stopping: finishing the reconcile in progress");
  daemon.advance(399ms);
  CHECK_FALSE(daemon.reconciler.calls().back().finished);
  CHECK_FALSE(daemon.loop_ended);
  daemon.advance(1ms);
  daemon.loop.join();
  CHECK(daemon.exit_code == 0);
  auto calls = daemon.reconciler.calls();
  CHECK(calls.back().finished);  // not abandoned half-way
  CHECK(daemon.reconciler.count("files") == 1);
}

TEST_CASE("runner: a reconcile longer than the shutdown bound does not hold up the exit") {
  RunningDaemon daemon;
  daemon.options.shutdown_grace = 100ms;
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.reconciler.set_duration(10s);
  daemon.put_manifest("huge.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  ::kill(::getpid(), SIGTERM);
  REQUIRE(daemon.wait_for("STOPPING=1"));
  daemon.advance(99ms);
  CHECK_FALSE(daemon.loop_ended);
  daemon.advance(1ms);  // the bound: exits though the reconcile would take 10 s
  daemon.loop.join();
  daemon.drain();
  CHECK(daemon.exit_code == 0);
  CHECK_FALSE(daemon.reconciler.calls().back().finished);
}

TEST_CASE("runner: periodic resync runs full reconciles at the jittered interval") {
  RunningDaemon daemon;
  daemon.config.resync_interval = 100ms;
  daemon.options.resync_jitter = 0.5;
  daemon.options.random = [] { return 0.0; };  // always the shortest: 50 ms
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.advance(149ms);
  CHECK(daemon.reconciler.count("full") == 3);  // resyncs at 50 and 100 ms, not sooner
  daemon.advance(1ms);
  CHECK(daemon.reconciler.count("full") == 4);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: WATCHDOG=1 is sent at half of WATCHDOG_USEC from the loop") {
  ::setenv("WATCHDOG_USEC", "200000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  RunningDaemon daemon;
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.drain();
  CHECK(daemon.count_messages("WATCHDOG=1") == 0);
  daemon.advance(299ms);  // 100 ms apart
  daemon.drain();
  CHECK(daemon.count_messages("WATCHDOG=1") == 2);
  daemon.advance(1ms);
  daemon.drain();
  CHECK(daemon.count_messages("WATCHDOG=1") == 3);
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a reconcile with a failed state is retried at retry-interval, doubling, until one succeeds") {
  RunningDaemon daemon;
  daemon.config.retry_interval = 100ms;
  daemon.reconciler.fail_a_state_in_next(3);  // the start-up reconcile and the first two retries
  daemon.start();
  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK_THAT(*ready, Catch::EndsWith("1 failed; retrying in 100ms"));
  daemon.advance(699ms);  // retries at 100 and 300 ms
  CHECK(daemon.reconciler.count("full") == 3);
  daemon.advance(1ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 4; }));
  CHECK(daemon.wait_for("STATUS=5 states: 0 created, 0 updated, 0 deleted, 5 unchanged, 0 failed"));
  // Succeeded: no more retries (the resync is an hour away).
  daemon.advance(30min);
  CHECK(daemon.reconciler.count("full") == 4);
  const auto calls = daemon.reconciler.calls();
  REQUIRE(calls.size() == 4);
  auto gap = [&](std::size_t i) { return calls[i].started - calls[i - 1].started; };
  CHECK(gap(1) == 100ms);
  CHECK(gap(2) == 200ms);
  CHECK(gap(3) == 400ms);
  CHECK(std::find(daemon.messages.begin(), daemon.messages.end(),
                  "STATUS=5 states: 0 created, 0 updated, 0 deleted, 4 unchanged, 1 failed; retrying in 400ms") !=
        daemon.messages.end());
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a file reconcile with a failed state is followed by a full one at retry-interval") {
  RunningDaemon daemon;
  daemon.config.retry_interval = 100ms;
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  daemon.reconciler.fail_a_state_in_next(1);
  daemon.put_manifest("webhook-down.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  daemon.advance(99ms);
  CHECK(daemon.reconciler.count("full") == 1);
  daemon.advance(1ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 2; }));
  const auto calls = daemon.reconciler.calls();
  CHECK(calls.back().started - calls[1].started == 100ms);
  daemon.advance(400ms);
  CHECK(daemon.reconciler.count("full") == 2);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: retry-interval 0s leaves failures to the next resync") {
  RunningDaemon daemon;
  daemon.config.retry_interval = 0ms;
  daemon.reconciler.fail_a_state_in_next(1);
  daemon.start();
  auto ready = daemon.wait_reconciled();
  REQUIRE(ready);
  CHECK_THAT(*ready, Catch::EndsWith("1 failed"));
  daemon.advance(30min);  // the resync is an hour away
  CHECK(daemon.reconciler.count("full") == 1);
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

TEST_CASE("runner: a bad config on SIGHUP keeps the old one and still answers READY") {
  RunningDaemon daemon;
  daemon.reloader = []() -> kstate::Result<DaemonConfig> {
    return kstate::Error(kstate::ErrorKind::invalid_input, "config.yaml:3: debounce: invalid duration");
  };
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  ::kill(::getpid(), SIGHUP);
  REQUIRE(daemon.wait_for("RELOADING=1"));
  auto ready = daemon.wait_for("READY=1");
  REQUIRE(ready);
  CHECK_THAT(*ready, Catch::Contains("configuration reload failed, kept the previous one"));
  CHECK(daemon.reconciler.reconfigured_debounce().empty());
  // The watcher still runs with the old settings.
  daemon.put_manifest("after.yaml");
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
  CHECK(daemon.stop_with(SIGTERM) == 0);
}

namespace {

// Leader election with 1 s leases (the Lease API counts whole seconds), renewed every 50 ms.
void enable_election(RunningDaemon& daemon) {
  daemon.reconciler.leases = std::make_shared<kstate::testing::MemoryLeases>();
  daemon.config.leader_election.enabled = true;
  daemon.config.leader_election.lease_duration = 1s;
  daemon.config.leader_election.renew_deadline = 400ms;
  daemon.config.leader_election.retry_period = 50ms;
  daemon.options.identity = "node-a";
}

std::string metrics_of(RunningDaemon& daemon) {
  return kstate::testing::http_get(daemon.runner->http_port(), "/metrics").body;
}

}  // namespace

TEST_CASE("runner: leader election keeps a standby from reconciling until the other holder's lease expires") {
  RunningDaemon daemon;
  enable_election(daemon);
  daemon.reconciler.leases->write_as("node-b", 1s);
  daemon.start();
  const auto first_seen = daemon.clock->steady_now();  // the first attempt, as the loop starts

  // A standby says so, serves the endpoints, exports leader 0.
  CHECK(daemon.messages.front() ==
        "READY=1\nSTATUS=watching " + daemon.manifests.string() + "; waiting for the lease kube-system/kstate");
  auto ready = daemon.wait_for("STATUS=standby");
  REQUIRE(ready);
  CHECK(*ready == "STATUS=standby: not the leader (lease kube-system/kstate held by node-b)");
  CHECK(daemon.reconciler.count("full") == 0);
  CHECK(kstate::testing::http_get(daemon.runner->http_port(), "/healthz").status == 200);
  CHECK(kstate::testing::http_get(daemon.runner->http_port(), "/readyz").status == 200);
  CHECK_THAT(metrics_of(daemon), Catch::Contains("kstate_leader 0\n"));
  // File changes wait for leadership.
  daemon.put_manifest("app.yaml");

  // node-b stops renewing: node-a takes over one lease duration after it last saw a
  // change, at its next attempt (every 50 ms plus jitter).
  daemon.advance(first_seen + 999ms - daemon.clock->steady_now());
  CHECK(daemon.reconciler.count("full") == 0);
  daemon.advance(150ms);
  REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("full") == 1; }));
  auto lease = daemon.reconciler.leases->lease();
  REQUIRE(lease);
  CHECK(lease->holder_identity == "node-a");
  CHECK(lease->lease_transitions == 1);
  REQUIRE(daemon.wait_reconciled());
  CHECK(daemon.reconciler.calls().front().may_write);
  CHECK(daemon.reconciler.count("files") == 0);  // covered by the full reconcile
  CHECK_THAT(metrics_of(daemon), Catch::Contains("kstate_leader 1\n"));

  // SIGTERM gives the lease up so that a standby does not wait for it to expire.
  CHECK(daemon.stop_with(SIGTERM) == 0);
  lease = daemon.reconciler.leases->lease();
  REQUIRE(lease);
  CHECK(lease->holder_identity.empty());
}

TEST_CASE("runner: losing the lease closes the write gate of the reconcile in flight and stops reconciling") {
  RunningDaemon daemon;
  enable_election(daemon);
  daemon.start();
  REQUIRE(daemon.wait_reconciled());
  CHECK(daemon.reconciler.calls().front().may_write);
  CHECK_THAT(metrics_of(daemon), Catch::Contains("kstate_leader 1\n"));

  SECTION("the API server stops answering: leadership ends at renew-deadline") {
    daemon.reconciler.set_duration(1000ms);
    daemon.put_manifest("slow.yaml");
    REQUIRE(daemon.wait_until([&] { return daemon.reconciler.count("files") == 1; }));
    daemon.reconciler.leases->set_unreachable(true);
    // Renewed less than 50 ms ago: not before renew-deadline (400 ms after the last renewal).
    daemon.advance(300ms);
    CHECK(daemon.metrics.leader.value() == 1);
    daemon.advance(100ms);
    auto standby = daemon.wait_for("STATUS=standby");
    REQUIRE(standby);
    CHECK_THAT(metrics_of(daemon), Catch::Contains("kstate_leader 0\n"));
    CHECK_FALSE(daemon.reconciler.calls().back().finished);
    daemon.advance(1000ms);
    REQUIRE(daemon.wait_until([&] { return daemon.reconciler.calls().back().finished; }));
    auto call = daemon.reconciler.calls().back();
    CHECK(call.may_write);
    CHECK_FALSE(call.may_write_at_end);  // writes stopped before the reconcile ended
  }

  SECTION("another candidate takes the lease: no more reconciles here") {
    daemon.reconciler.leases->write_as("node-b", 10s);
    daemon.advance(50ms);  // the next renewal finds it
    REQUIRE(daemon.wait_for("STATUS=standby: not the leader (lease kube-system/kstate held by node-b)"));
    CHECK_THAT(metrics_of(daemon), Catch::Contains("kstate_leader 0\n"));
    const auto calls_before = daemon.reconciler.calls().size();
    daemon.put_manifest("ignored.yaml");
    daemon.advance(200ms);  // several debounce periods: a leader would have reconciled
    CHECK(daemon.reconciler.calls().size() == calls_before);
  }

  CHECK(daemon.stop_with(SIGTERM) == 0);
}

}  // namespace runner_test
