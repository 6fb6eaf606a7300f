// The runner is a single coroutine (main_loop) that takes one piece of work at a time,
// plus small handlers (signals, watcher, resync timer, watchdog timer) that only record
// work and wake it. So reconciles never overlap, and shutdown only has to wait for the
// one in flight.
#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <random>
#include <set>

#include "core/log_fields.hpp"
#include "daemon/http_endpoints.hpp"
#include "daemon/leader_election.hpp"
#include "daemon/manifest_settle.hpp"
#include "daemon/runner.hpp"

namespace kstate::daemon {
namespace asio = boost::asio;

Duration doubling_backoff(int attempt, Duration initial, Duration maximum) {
  Duration delay = initial;
  for (int i = 1; i < attempt && delay < maximum; ++i) {
    delay *= 2;
  }
  return std::min(delay, maximum);
}

std::string default_identity() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "kstate");
  }
  std::random_device random;
  char suffix[20];
  std::snprintf(suffix, sizeof suffix, "_%08x%04x", random(), random() & 0xffffu);
  return std::string(host) + suffix;
}

Duration jittered(Duration interval, double fraction, double random01) {
  const double factor = 1.0 + fraction * (2.0 * random01 - 1.0);
  return Duration(static_cast<Duration::rep>(static_cast<double>(interval.count()) * factor));
}

Duration prune_wait_limit(Duration prune_delay) {
  return prune_delay * 15;
}

void PendingWork::add(const ChangeBatch& batch) {
  if (batch.full_rescan) {
    request_full(batch.rescan_reason);
    return;
  }
  auto drop = [](std::vector<std::string>& list, const std::string& path) {
    list.erase(std::remove(list.begin(), list.end(), path), list.end());
  };
  for (const auto& path : batch.changed) {
    drop(removed_, path);
    if (std::find(changed_.begin(), changed_.end(), path) == changed_.end()) {
      changed_.push_back(path);
    }
  }
  for (const auto& path : batch.removed) {
    drop(changed_, path);
    if (std::find(removed_.begin(), removed_.end(), path) == removed_.end()) {
      removed_.push_back(path);
    }
  }
}

void PendingWork::request_full(std::string reason) {
  if (!full_) {
    reason_ = std::move(reason);
  }
  full_ = true;
}

std::pair<std::vector<std::string>, std::vector<std::string>> PendingWork::take_files() {
  auto files = std::make_pair(std::move(changed_), std::move(removed_));
  changed_.clear();
  removed_.clear();
  std::sort(files.first.begin(), files.first.end());
  std::sort(files.second.begin(), files.second.end());
  return files;
}

std::string PendingWork::take_full() {
  changed_.clear();
  removed_.clear();
  full_ = false;
  return std::exchange(reason_, std::string());
}

struct DaemonRunner::Impl : std::enable_shared_from_this<DaemonRunner::Impl> {
  Impl(asio::io_context& io_context, DaemonConfig daemon_config, Reconciler& reconciler_, Notifier& notifier_,
       MetricsRegistry& registry_, DaemonMetrics& metrics_, ConfigReloader reload_, RunnerOptions runner_options)
      : io(io_context),
        config(std::move(daemon_config)),
        reconciler(reconciler_),
        notifier(notifier_),
        registry(registry_),
        metrics(metrics_),
        reload(std::move(reload_)),
        options(std::move(runner_options)),
        clock(options.clock ? options.clock : real_clock()),
        signals(io_context),
        wake(clock->make_timer(io_context.get_executor())),
        resync_timer(clock->make_timer(io_context.get_executor())),
        retry_timer(clock->make_timer(io_context.get_executor())),
        prune_timer(clock->make_timer(io_context.get_executor())),
        settle_timer(clock->make_timer(io_context.get_executor())),
        watchdog_timer(clock->make_timer(io_context.get_executor())),
        shutdown_timer(clock->make_timer(io_context.get_executor())),
        election_timer(clock->make_timer(io_context.get_executor())),
        leadership_deadline(clock->make_timer(io_context.get_executor())) {
    if (!options.random) {
      auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
      options.random = [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
    }
  }

  asio::io_context& io;
  DaemonConfig config;
  Reconciler& reconciler;
  Notifier& notifier;
  MetricsRegistry& registry;
  DaemonMetrics& metrics;
  ConfigReloader reload;
  RunnerOptions options;
  std::function<void(const DaemonConfig&)> config_applied;

  std::shared_ptr<const Clock> clock;  // every time and timer below
  asio::signal_set signals;
  // The main loop waits on it for work, or until a drift correction is due: cancelled to wake it.
  std::unique_ptr<Timer> wake;
  std::unique_ptr<Timer> resync_timer;
  std::unique_ptr<Timer> retry_timer;  // a full reconcile after one with failures (retry-interval)
  bool retry_armed = false;
  int failed_full_cycles = 0;          // full reconciles in a row with failures: the retry backoff
  std::unique_ptr<Timer> prune_timer;  // prune-delay of quiet after a file change that left objects to prune
  bool prune_waiting = false;
  Clock::SteadyTime prune_due_by{};     // while prune_waiting: when it runs even if the folder is still busy
  std::unique_ptr<Timer> settle_timer;  // a full reconcile once files changed moments ago have settled
  std::unique_ptr<Timer> watchdog_timer;
  std::unique_ptr<Timer> shutdown_timer;
  std::unique_ptr<Timer> election_timer;       // the next acquire/renew attempt
  std::unique_ptr<Timer> leadership_deadline;  // renew-deadline after the last renewal
  std::unique_ptr<DirectoryWatcher> watcher;
  std::uint64_t overflows_reported = 0;
  std::unique_ptr<HttpServer> http;
  std::atomic<unsigned short> bound_port{0};

  PendingWork pending;
  ProbeState probes;
  bool started = false;  // first reconcile done
  bool reload_requested = false;
  bool stopping = false;
  bool busy = false;
  bool finished = false;
  bool releasing = false;
  int exit_code = 0;

  // Leader election (null when off: then this instance always writes).
  std::unique_ptr<AsyncLeaseStore> lease_store;
  std::unique_ptr<LeaderElector> elector;
  bool leading = false;            // leader as of the last attempt, and renewed within renew-deadline
  bool election_answered = false;  // a lease attempt got an answer (standby READY=1 sent)
  std::string election_error;      // last failure, logged once per change

  void wake_up() { wake->cancel(); }

  // /readyz between cycles: what the last cycle found, unless the requests since found
  // the API server gone (a frozen server is noticed within one request deadline).
  ProbeState live_probes() const {
    ProbeState live = probes;
    if (live.ready) {
      if (std::string problem = reconciler.api_server_problem(); !problem.empty()) {
        live.ready = false;
        live.not_ready_reason = "API server unreachable: " + problem;
      }
    }
    return live;
  }

  // --- set-up -------------------------------------------------------------------------

  Status start_http() {
    auto address = parse_host_port(config.listen_address);
    if (!address) {
      return address.error();
    }
    HttpServerOptions server_options;
    server_options.clock = clock;
    http = std::make_unique<HttpServer>(
        io.get_executor(),
        [this](std::string_view method, std::string_view target) {
          const ProbeState live = live_probes();
          metrics.ready.set({}, live.ready ? 1 : 0);  // kstate_ready says what /readyz says
          if (target.starts_with("/metrics")) {
            metrics.sample_process();
          }
          return route_endpoint(method, target, live, registry);
        },
        server_options);
    auto port = http->listen(address->host, address->port);
    if (!port) {
      return port.error();
    }
    bound_port = *port;
    spdlog::info("serving /healthz, /readyz and /metrics on {}:{}", address->host, *port);
    if (!is_loopback_host(address->host)) {
      spdlog::warn(
          "listen-address {} is not a loopback address: /metrics and the probes answer anyone who can reach "
          "it, without authentication",
          config.listen_address);
    }
    return ok_status();
  }

  Status start_watcher() {
    WatchOptions watch;
    watch.debounce = config.debounce;
    watch.max_delay = std::max<Duration>(options.watch_max_delay, config.debounce);
    watch.write_hold = options.watch_write_hold;
    watch.clock = clock;
    watch.on_batch_start = [weak = std::weak_ptr<Impl>(shared_from_this())] {
      if (auto self = weak.lock(); self && !self->stopping) {
        self->reconciler.prepare_for_cycle();
      }
    };
    std::weak_ptr<Impl> weak = shared_from_this();
    watcher =
        std::make_unique<DirectoryWatcher>(io.get_executor(), config.manifests_dir, watch, [weak](ChangeBatch batch) {
          if (auto self = weak.lock()) {
            self->on_changes(std::move(batch));
          }
        });
    return watcher->start();
  }

  void on_changes(ChangeBatch batch) {
    if (stopping) {
      return;
    }
    const auto overflows = watcher ? watcher->overflow_count() : 0;
    if (overflows > overflows_reported) {
      metrics.inotify_overflows.add({}, static_cast<double>(overflows - overflows_reported));
      overflows_reported = overflows;
    }
    if (batch.full_rescan) {
      spdlog::info("full rescan of {}: {}", config.manifests_dir, batch.rescan_reason);
    } else {
      spdlog::debug("file changes: {} changed, {} removed", batch.changed.size(), batch.removed.size());
    }
    pending.add(batch);
    if (prune_waiting) {
      arm_prune();  // the folder is not quiet yet: the wait starts again
    }
    wake_up();
  }

  // A file change took objects out of the manifests: a full reconcile prunes them once
  // the folder has been quiet for prune-delay, so that a second write that declares
  // them elsewhere (an object moved to another file) comes first. Any full reconcile
  // (resync, SIGHUP, rescan) prunes them too, and ends the wait. A folder that is never
  // quiet (a generator rewriting a file every second) does not hold the prune back until
  // the next resync: it runs at the latest prune_wait_limit after the first change.
  void arm_prune() {
    const auto now = clock->steady_now();
    if (!prune_waiting) {
      prune_due_by = now + prune_wait_limit(config.prune_delay);
    }
    prune_waiting = true;
    const bool at_limit = now + config.prune_delay >= prune_due_by;
    // (cancels the wait in progress, if any)
    prune_timer->expires_at(at_limit ? prune_due_by : now + config.prune_delay);
    prune_timer->async_wait([self = shared_from_this(), at_limit](const boost::system::error_code& ec) {
      if (ec || self->stopping || !self->prune_waiting) {
        return;
      }
      self->pending.request_full(at_limit ? "prune: objects removed from the manifests " +
                                                format_duration(prune_wait_limit(self->config.prune_delay)) +
                                                " ago, the folder never quiet for " +
                                                format_duration(self->config.prune_delay)
                                          : "prune: objects removed from the manifests, the folder quiet for " +
                                                format_duration(self->config.prune_delay));
      self->wake_up();
    });
  }

  void wait_signals() {
    signals.async_wait([self = shared_from_this()](const boost::system::error_code& ec, int signal) {
      if (ec) {
        return;
      }
      if (signal == SIGHUP) {
        spdlog::info("SIGHUP: reloading the configuration");
        self->reload_requested = true;
        self->wake_up();
      } else {
        spdlog::info("{}: shutting down", signal == SIGTERM ? "SIGTERM" : "SIGINT");
        self->begin_shutdown();
      }
      // Re-arming after finish() would park a handler holding `self` in a signal_set
      // with no signals: a reference cycle that outlives the io_context (LeakSanitizer).
      if (!self->finished) {
        self->wait_signals();
      }
    });
  }

  void schedule_watchdog() {
    auto interval = notifier.watchdog_interval();
    if (!interval) {
      return;
    }
    watchdog_timer->expires_after(*interval);
    watchdog_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished) {
        return;
      }
      self->notifier.watchdog();
      self->schedule_watchdog();
    });
  }

  void schedule_resync() {
    const Duration delay = jittered(config.resync_interval, options.resync_jitter, options.random());
    resync_timer->expires_after(delay);
    resync_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopping) {
        return;
      }
      self->pending.request_full("periodic resync");
      self->wake_up();
    });
  }

  void cancel_retry() {
    retry_armed = false;
    failed_full_cycles = 0;
    retry_timer->cancel();
  }

  // After each reconcile. A failed state may heal by itself (a namespace that was still
  // terminating, an admission webhook or the API server back up): a full reconcile runs
  // retry-interval later rather than at the next resync, then at twice that while full
  // reconciles keep failing, up to resync-interval. Only a successful full reconcile
  // ends it: a successful file reconcile says nothing about the other files' states.
  // Returns what STATUS adds ("; retrying in 10s"), empty when nothing is planned.
  std::string plan_retry(const ReconcileSummary& summary, bool full) {
    if (summary.succeeded()) {
      if (full) {
        cancel_retry();
      }
      return {};
    }
    if (config.retry_interval == Duration::zero() || stopping || !leading_now()) {
      return {};
    }
    if (full) {
      ++failed_full_cycles;
    } else if (retry_armed) {
      return {};  // a failed file reconcile does not push the planned retry back
    }
    const Duration delay = doubling_backoff(failed_full_cycles + (full ? 0 : 1), config.retry_interval,
                                            std::max(config.retry_interval, config.resync_interval));
    retry_armed = true;
    retry_timer->expires_after(delay);  // (cancels the wait in progress, if any)
    retry_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopping || !self->retry_armed) {
        return;
      }
      self->retry_armed = false;
      self->pending.request_full("retry after a reconcile with failures");
      self->wake_up();
    });
    spdlog::info("reconciling everything again in {} (retry-interval {}, doubling while failures persist)",
                 format_duration(delay), format_duration(config.retry_interval));
    return "; retrying in " + format_duration(delay);
  }

  // --- shutdown -----------------------------------------------------------------------

  void begin_shutdown() {
    if (stopping) {
      spdlog::warn("second stop signal: exiting now");
      finish();
      return;
    }
    stopping = true;
    notifier.stopping(busy ? "stopping: finishing the reconcile in progress" : "stopping");
    reconciler.request_stop();
    if (watcher) {
      watcher->stop();
    }
    resync_timer->cancel();
    cancel_retry();
    prune_timer->cancel();
    settle_timer->cancel();
    if (!busy) {
      finish_after_release();
      return;
    }
    shutdown_timer->expires_after(options.shutdown_grace);
    shutdown_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished) {
        return;
      }
      spdlog::warn("the reconcile in progress did not finish within {}; exiting",
                   format_duration(self->options.shutdown_grace));
      self->finish();
    });
    wake_up();
  }

  void finish() {
    if (finished) {
      return;
    }
    finished = true;
    boost::system::error_code ignored;
    signals.cancel(ignored);
    signals.clear(ignored);
    if (http) {
      http->stop();
    }
    if (watcher) {
      watcher->stop();
    }
    wake->cancel();
    resync_timer->cancel();
    cancel_retry();
    prune_timer->cancel();
    settle_timer->cancel();
    watchdog_timer->cancel();
    shutdown_timer->cancel();
    election_timer->cancel();
    leadership_deadline->cancel();
    // Anything the reconciler still has pending (connection pools, timers) must not keep
    // the process alive past the bound.
    io.stop();
  }

  // Gives the Lease up (when we hold it) so that a standby takes over at its next
  // attempt instead of after lease-duration, then exits; bounded by release_timeout.
  void finish_after_release() {
    if (finished || releasing) {
      return;
    }
    if (!elector || !elector->is_leader(clock->steady_now())) {
      finish();
      return;
    }
    releasing = true;
    election_timer->cancel();
    shutdown_timer->expires_after(options.release_timeout);
    shutdown_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && !self->finished) {
        spdlog::warn("the lease was not released within {}; exiting", format_duration(self->options.release_timeout));
        self->finish();
      }
    });
    asio::co_spawn(
        io,
        [self = shared_from_this()]() -> asio::awaitable<void> {
          co_await self->release_lease();
          self->finish();
        },
        asio::detached);
  }

  asio::awaitable<void> release_lease() {
    auto record = elector->release_record(clock->steady_now(), clock->wall_now());
    set_leading(false, "shutting down");
    if (!record) {
      co_return;
    }
    LeaseRecord released = *record;
    auto updated = co_await lease_store->update(released);
    if (updated) {
      spdlog::info("released the lease {}/{}", config.leader_election.lease_namespace,
                   config.leader_election.lease_name);
    } else {
      spdlog::warn("could not release the lease (it expires after {}): {}",
                   format_duration(config.leader_election.lease_duration), updated.error().describe());
    }
  }

  // --- leader election ----------------------------------------------------------------

  bool may_write() const { return !elector || elector->is_leader(clock->steady_now()); }
  bool leading_now() const { return !elector || leading; }

  std::string lease_name() const {
    return config.leader_election.lease_namespace + "/" + config.leader_election.lease_name;
  }

  std::string standby_status() const {
    const std::string& holder = elector->observed_holder();
    return "standby: not the leader (lease " + lease_name() + " held by " + (holder.empty() ? "nobody" : holder) + ")";
  }

  void set_leading(bool now_leading, const std::string& why) {
    if (now_leading == leading) {
      return;
    }
    leading = now_leading;
    metrics.leader.set({}, leading ? 1 : 0);
    if (leading) {
      spdlog::info("became the leader (lease {}, identity {})", lease_name(), elector->identity());
      pending.request_full("became the leader");
    } else {
      spdlog::warn("not the leader any more ({}): writes stopped", why);
      resync_timer->cancel();
      cancel_retry();
      leadership_deadline->cancel();
      if (!stopping) {
        notifier.status(standby_status());
      }
    }
    wake_up();
  }

  // Leadership ends at renew-deadline after the last renewal even while an attempt hangs.
  void arm_leadership_deadline() {
    leadership_deadline->expires_after(config.leader_election.renew_deadline);
    leadership_deadline->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && self->leading && !self->elector->is_leader(self->clock->steady_now())) {
        self->set_leading(false, "the lease could not be renewed within renew-deadline");
      }
    });
  }

  asio::awaitable<void> election_loop() {
    auto self = shared_from_this();
    while (!finished && !releasing) {
      const auto started_at = clock->steady_now();
      elector->begin_attempt(started_at);
      std::optional<LeaseRecord> written;
      std::string error;
      auto current = co_await lease_store->get();
      if (finished || releasing) {
        co_return;
      }
      if (!current) {
        error = "get lease " + lease_name() + ": " + current.error().describe();
      } else if (auto write = elector->plan(*current, started_at, clock->wall_now())) {
        LeaseRecord record = write->record;
        Result<LeaseRecord> result = Error(ErrorKind::internal, "not written");
        if (write->create) {
          result = co_await lease_store->create(record);
        } else {
          result = co_await lease_store->update(record);
        }
        if (finished || releasing) {
          co_return;
        }
        if (result) {
          written = std::move(*result);
        } else {
          error = std::string(write->create ? "create" : "update") + " lease " + lease_name() + ": " +
                  result.error().describe();
        }
      }
      // A renewal counts from when the attempt started (conservative); a failure is
      // judged at its end.
      auto step = elector->conclude(written ? started_at : clock->steady_now(), written, error);
      if (error != election_error) {
        if (!error.empty()) {
          spdlog::warn("leader election: {}", error);
        }
        election_error = error;
      }
      if (step.leader) {
        arm_leadership_deadline();
      }
      set_leading(step.leader, error.empty() ? "the lease is held by " + elector->observed_holder() : error);
      if (!step.leader && !election_answered && error.empty()) {
        // A standby is up and doing its job.
        election_answered = true;
        probes.ready = true;
        probes.not_ready_reason.clear();
        metrics.ready.set({}, 1);
        notifier.status(standby_status());
        spdlog::info("{}", standby_status());
      }
      election_answered = election_answered || error.empty();
      election_timer->expires_after(step.next_attempt);
      co_await election_timer->wait();
    }
  }

  // Waits (handling SIGHUP) until this instance leads or shuts down.
  asio::awaitable<void> standby() {
    while (!stopping && !leading_now()) {
      if (reload_requested) {
        notifier.reloading("reloading configuration");
        reload_config();
        notifier.ready(standby_status());
      }
      co_await wait_for_work();
    }
  }

  // --- work ---------------------------------------------------------------------------

  void record(const std::string& kind, const ReconcileSummary& summary, Clock::SteadyTime::duration took) {
    const double seconds = std::chrono::duration<double>(took).count();
    metrics.reconciles.add({kind, summary.succeeded() ? "success" : "failure"});
    metrics.reconcile_duration.observe({kind}, seconds);
    metrics.state_results.add({"unchanged"}, static_cast<double>(summary.unchanged));
    metrics.state_results.add({"created"}, static_cast<double>(summary.created));
    metrics.state_results.add({"updated"}, static_cast<double>(summary.updated));
    metrics.state_results.add({"adopted"}, static_cast<double>(summary.adopted));
    metrics.state_results.add({"deleted"}, static_cast<double>(summary.deleted));
    metrics.state_results.add({"failed"}, static_cast<double>(summary.failed));
    if (summary.api_reachable) {
      metrics.managed_objects.set({}, static_cast<double>(summary.managed_objects));
    }
    if (summary.succeeded()) {
      const auto now = clock->wall_now().time_since_epoch();
      metrics.last_success_timestamp.set({}, std::chrono::duration<double>(now).count());
    }
    metrics.applyset_writer_conflict.set({}, summary.writer_conflict.empty() ? 0 : 1);
    if (!summary.api_reachable) {
      probes.ready = false;
      probes.not_ready_reason = "API server unreachable: " + summary.error;
    } else if (!summary.writer_conflict.empty()) {
      // Not doing its job, and an operator has to act (docs/ownership.md).
      probes.ready = false;
      probes.not_ready_reason = "ApplySet " + config.applyset_namespace + "/" + config.applyset_name +
                                " is reconciled by another writer (" + summary.writer_conflict +
                                "): nothing applied, nothing pruned until that is resolved";
    } else if (started) {
      probes.ready = true;
    }
    metrics.ready.set({}, probes.ready ? 1 : 0);
    const auto level = summary.succeeded() ? spdlog::level::info : spdlog::level::warn;
    LogFields fields;
    fields.action = "reconcile";
    fields.duration_ms = seconds * 1000;
    log_with(fields, level, "{} reconcile in {:.3f}s: {}", kind, seconds, summary.describe());
  }

  asio::awaitable<ReconcileSummary> guarded(asio::awaitable<ReconcileSummary> work) {
    try {
      co_return co_await std::move(work);
    } catch (const std::exception& e) {
      // Errors are values; an exception here is a bug, reported rather than fatal.
      ReconcileSummary failed;
      failed.error = std::string("internal error: ") + e.what();
      co_return failed;
    }
  }

  asio::awaitable<ReconcileSummary> run_full(const std::string& reason) {
    pending.take_full();  // the full reconcile covers every file event received so far
    prune_timer->cancel();
    // It prunes what they removed once the folder is quiet; at the wait's limit, now.
    const bool overdue = prune_waiting && clock->steady_now() >= prune_due_by;
    spdlog::debug("full reconcile: {}", reason);
    busy = true;
    const auto start = clock->steady_now();
    ReconcileSummary summary =
        co_await guarded(reconciler.full_reconcile(overdue ? FullPrune::now : FullPrune::when_quiet));
    busy = false;
    record("full", summary, clock->steady_now() - start);
    if (summary.prune_deferred > 0 && !stopping) {
      // The folder changed within prune-delay (a resync right after an edit, a start-up
      // during a write): the same wait as after a file change, its limit kept.
      spdlog::info("{} object(s) no longer in the manifests: the folder changed less than {} ago, pruned once quiet",
                   summary.prune_deferred, format_duration(config.prune_delay));
      arm_prune();
    } else {
      prune_waiting = false;
    }
    if (summary.files_settling > 0 && !stopping) {
      arm_settle();
    }
    co_return summary;
  }

  // A manifest file changed moments ago was not used (daemon/manifest_settle.hpp): a
  // full reconcile reads it again once it has had time to settle. (A file still open
  // for writing is read again when its writer closes it: the watcher reports that.)
  void arm_settle() {
    settle_timer->expires_after(std::max<Duration>(config.prune_delay, settle_window));
    settle_timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopping) {
        return;
      }
      self->pending.request_full("manifest files changed moments ago have settled");
      self->wake_up();
    });
  }

  asio::awaitable<ReconcileSummary> run_files() {
    auto [changed, removed] = pending.take_files();
    busy = true;
    const auto start = clock->steady_now();
    ReconcileSummary summary = co_await guarded(reconciler.reconcile_files(std::move(changed), std::move(removed)));
    busy = false;
    record("files", summary, clock->steady_now() - start);
    if (summary.prune_deferred > 0 && !stopping) {
      spdlog::info("{} object(s) no longer in the manifests: pruned once the folder has been quiet for {}",
                   summary.prune_deferred, format_duration(config.prune_delay));
      arm_prune();
    }
    if (summary.files_settling > 0 && !stopping) {
      arm_settle();
    }
    co_return summary;
  }

  // The states of objects edited or deleted through the API (daemon/drift_watch.hpp).
  asio::awaitable<void> run_drift() {
    busy = true;
    const auto start = clock->steady_now();
    ReconcileSummary summary = co_await guarded(reconciler.correct_drift());
    busy = false;
    if (summary.states > 0) {
      record("drift", summary, clock->steady_now() - start);
      notifier.status(summary.describe() + plan_retry(summary, false));
    }
  }

  asio::awaitable<void> wait_for_work(std::optional<Duration> at_most = std::nullopt) {
    if (at_most) {
      wake->expires_after(*at_most);
    } else {
      wake->expires_never();
    }
    co_await wake->wait();
  }

  void apply_config(DaemonConfig fresh) {
    const auto& before = config.leader_election;
    const auto& after = fresh.leader_election;
    if (before.enabled != after.enabled || before.lease_name != after.lease_name ||
        before.lease_namespace != after.lease_namespace || before.lease_duration != after.lease_duration ||
        before.renew_deadline != after.renew_deadline || before.retry_period != after.retry_period) {
      spdlog::warn("leader-election settings take effect at the next restart; keeping the current ones");
      fresh.leader_election = config.leader_election;
    }
    const bool watch_changed = fresh.manifests_dir != config.manifests_dir || fresh.debounce != config.debounce;
    const bool listen_changed = fresh.listen_address != config.listen_address;
    const bool resync_changed = fresh.resync_interval != config.resync_interval;
    config = std::move(fresh);
    if (watch_changed) {
      watcher.reset();
      if (auto status = start_watcher(); !status) {
        spdlog::error("cannot watch {}: {}", config.manifests_dir, status.error().message);
      }
    }
    if (listen_changed) {
      http.reset();
      if (auto status = start_http(); !status) {
        spdlog::error("endpoints: {}", status.error().message);
      }
    }
    if (resync_changed && started) {
      schedule_resync();
    }
    if (auto status = reconciler.reconfigure(config); !status) {
      spdlog::error("reconfigure: {}", status.error().message);
    }
    if (config_applied) {
      config_applied(config);
    }
  }

  // Returns false when the new configuration was refused (the old one stays).
  bool reload_config() {
    reload_requested = false;
    auto fresh = reload ? reload() : Result<DaemonConfig>(config);
    if (!fresh) {
      spdlog::error("configuration reload failed, keeping the previous one: {}", fresh.error().message);
      return false;
    }
    apply_config(std::move(*fresh));
    return true;
  }

  asio::awaitable<void> main_loop() {
    auto self = shared_from_this();
    std::string reason = "start-up";
    while (!stopping) {
      co_await standby();
      if (stopping) {
        break;
      }
      // First reconcile (at start-up, or on becoming the leader): keep trying until
      // the API server answers (the control plane may still be starting).
      bool reconciled = false;
      for (int attempt = 1; !stopping && leading_now(); ++attempt) {
        if (reload_requested) {
          reload_config();
        }
        ReconcileSummary summary = co_await run_full(reason);
        if (summary.api_reachable) {
          started = true;
          reconciled = true;
          probes.ready = summary.writer_conflict.empty();
          metrics.ready.set({}, probes.ready ? 1 : 0);
          if (!stopping) {
            notifier.status(summary.describe() + plan_retry(summary, true));
          }
          break;
        }
        const Duration delay = doubling_backoff(attempt, options.startup_backoff_initial, options.startup_backoff_max);
        const std::string status = "waiting for the API server (attempt " + std::to_string(attempt) +
                                   "): " + summary.error + "; retrying in " + format_duration(delay);
        probes.not_ready_reason = status;
        notifier.status(status);
        spdlog::warn("{}", status);
        co_await wait_for_work(delay);
      }
      reason = "became the leader";
      if (!reconciled) {
        continue;  // stopping, or the lease was lost before the API server answered
      }
      if (!stopping) {
        schedule_resync();
      }
      while (!stopping && leading_now()) {
        if (reload_requested) {
          notifier.reloading("reloading configuration");
          const bool applied = reload_config();
          ReconcileSummary summary = co_await run_full("configuration reload");
          if (stopping) {
            break;
          }
          const std::string retry = plan_retry(summary, true);
          notifier.ready(applied ? summary.describe() + retry
                                 : "configuration reload failed, kept the previous one; " + summary.describe() + retry);
          schedule_resync();
          continue;
        }
        if (pending.full_requested()) {
          ReconcileSummary summary = co_await run_full(pending.take_full());
          notifier.status(summary.describe() + plan_retry(summary, true));
          if (!stopping && leading_now()) {
            schedule_resync();
          }
          continue;
        }
        if (pending.has_files()) {
          ReconcileSummary summary = co_await run_files();
          notifier.status(summary.describe() + plan_retry(summary, false));
          continue;
        }
        // Drift found by the watches (issue 41): after file work, never during it.
        const auto drift_due = reconciler.drift_due();
        if (drift_due && *drift_due <= clock->steady_now()) {
          co_await run_drift();
          continue;
        }
        co_await wait_for_work(
            drift_due ? std::optional<Duration>(std::chrono::duration_cast<Duration>(*drift_due - clock->steady_now()))
                      : std::nullopt);
      }
    }
    finish_after_release();
  }
};

DaemonRunner::DaemonRunner(asio::io_context& io, DaemonConfig config, Reconciler& reconciler, Notifier& notifier,
                           MetricsRegistry& registry, DaemonMetrics& metrics, ConfigReloader reload,
                           RunnerOptions options)
    : impl_(std::make_shared<Impl>(io, std::move(config), reconciler, notifier, registry, metrics, std::move(reload),
                                   std::move(options))) {}

DaemonRunner::~DaemonRunner() = default;

int DaemonRunner::run() {
  auto& impl = *impl_;
  if (impl.config.leader_election.enabled) {
    auto store = impl.reconciler.lease_store(impl.config.leader_election);
    if (!store) {
      spdlog::error("leader election: {}", store.error().message);
      return 2;
    }
    impl.lease_store = std::move(*store);
    const std::string identity = impl.options.identity.empty() ? default_identity() : impl.options.identity;
    impl.elector = std::make_unique<LeaderElector>(impl.config.leader_election, identity, impl.options.random);
    std::weak_ptr<Impl> weak = impl_;
    impl.reconciler.set_write_gate([weak] {
      auto self = weak.lock();
      return self && self->may_write();
    });
    impl.metrics.leader.set({}, 0);
    spdlog::info("leader election on: lease {}, identity {}", impl.lease_name(), identity);
  } else {
    impl.metrics.leader.set({}, 1);  // without leader election every instance writes
  }
  if (auto status = impl.start_http(); !status) {
    spdlog::error("{}", status.error().message);
    return 2;
  }
  if (auto status = impl.start_watcher(); !status) {
    spdlog::error("cannot watch {}: {}", impl.config.manifests_dir, status.error().message);
    return 2;
  }
  boost::system::error_code ec;
  for (int signal : {SIGHUP, SIGTERM, SIGINT}) {
    impl.signals.add(signal, ec);
    if (ec) {
      spdlog::error("cannot handle signal {}: {}", signal, ec.message());
      return 2;
    }
  }
  impl.wait_signals();
  impl.schedule_watchdog();
  impl.reconciler.set_drift_wakeup([weak = std::weak_ptr<Impl>(impl_)] {
    if (auto self = weak.lock()) {
      self->wake_up();
    }
  });
  // Running and watching: READY=1 now, so that `systemctl start` returns whether or not
  // the API server answers (the control plane may take minutes to come up, or be down).
  // /readyz and STATUS say what the daemon waits for until the first reconcile is done.
  impl.probes.not_ready_reason = impl.elector ? "waiting for the lease " + impl.lease_name()
                                              : "first reconcile of " + impl.config.manifests_dir + " in progress";
  impl.notifier.ready("watching " + impl.config.manifests_dir + "; " + impl.probes.not_ready_reason);
  if (impl.elector) {
    asio::co_spawn(impl.io, impl.election_loop(), asio::detached);
  }
  asio::co_spawn(impl.io, impl.main_loop(), asio::detached);
  impl.io.run();
  return impl.exit_code;
}

void DaemonRunner::request_shutdown() {
  asio::post(impl_->io, [self = impl_] { self->begin_shutdown(); });
}

void DaemonRunner::request_reload() {
  asio::post(impl_->io, [self = impl_] {
    self->reload_requested = true;
    self->wake_up();
  });
}

unsigned short DaemonRunner::http_port() const {
  return impl_->bound_port;
}

void DaemonRunner::on_config_applied(std::function<void(const DaemonConfig&)> callback) {
  impl_->config_applied = std::move(callback);
}

}  // namespace kstate::daemon
