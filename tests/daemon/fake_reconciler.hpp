// A Reconciler for runner tests: records every call (thread-safe, the test thread reads
// while the daemon loop runs), answers scripted summaries, and can take time like a
// real reconcile (on the injected clock) so shutdown and overlap can be observed. MemoryLeases is a Lease
// store shared with the test (which can play another candidate or a failing API).
#pragma once

#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "core/clock.hpp"
#include "daemon/reconciler.hpp"

namespace kstate::testing {

// An in-memory Lease with the API server's resourceVersion check; thread-safe.
class MemoryLeases {
 public:
  std::optional<daemon::LeaseRecord> lease() const {
    std::lock_guard lock(mutex_);
    return lease_;
  }
  // Another candidate writes the lease.
  void write_as(const std::string& holder, std::chrono::seconds duration) {
    std::lock_guard lock(mutex_);
    daemon::LeaseRecord record;
    record.holder_identity = holder;
    record.lease_duration = duration;
    record.renew_time = std::chrono::system_clock::now();
    record.resource_version = std::to_string(++version_);
    lease_ = record;
  }
  void set_unreachable(bool unreachable) {
    std::lock_guard lock(mutex_);
    unreachable_ = unreachable;
  }

  Result<std::optional<daemon::LeaseRecord>> get() {
    std::lock_guard lock(mutex_);
    if (unreachable_) {
      return Error(ErrorKind::connection, "connection refused");
    }
    return lease_;
  }
  Result<daemon::LeaseRecord> write(daemon::LeaseRecord record, bool create) {
    std::lock_guard lock(mutex_);
    if (unreachable_) {
      return Error(ErrorKind::connection, "connection refused");
    }
    if (create ? lease_.has_value() : (!lease_ || lease_->resource_version != record.resource_version)) {
      return Error(create ? ErrorKind::already_exists : ErrorKind::conflict, "the object has been modified");
    }
    record.resource_version = std::to_string(++version_);
    lease_ = record;
    return record;
  }

 private:
  mutable std::mutex mutex_;
  std::optional<daemon::LeaseRecord> lease_;
  bool unreachable_ = false;
  int version_ = 0;
};

class MemoryLeaseStore final : public daemon::AsyncLeaseStore {
 public:
  explicit MemoryLeaseStore(std::shared_ptr<MemoryLeases> leases) : leases_(std::move(leases)) {}
  boost::asio::awaitable<Result<std::optional<daemon::LeaseRecord>>> get() override { co_return leases_->get(); }
  boost::asio::awaitable<Result<daemon::LeaseRecord>> create(daemon::LeaseRecord record) override {
    co_return leases_->write(std::move(record), true);
  }
  boost::asio::awaitable<Result<daemon::LeaseRecord>> update(daemon::LeaseRecord record) override {
    co_return leases_->write(std::move(record), false);
  }

 private:
  std::shared_ptr<MemoryLeases> leases_;
};

class FakeReconciler final : public daemon::Reconciler {
 public:
  struct Call {
    std::string kind;  // full | files
    std::vector<std::string> changed;
    std::vector<std::string> removed;
    bool finished = false;
    bool may_write = true;            // the write gate when the reconcile started
    bool may_write_at_end = true;     // and when it finished
    Clock::SteadyTime started{};      // on `clock`
    std::size_t prepared_before = 0;  // prepare_for_cycle calls before this one started
    bool prune_now = false;           // full: FullPrune::now (the runner's wait reached its limit)
  };

  // What a reconcile's start is timed with and its duration waits on (set before start).
  std::shared_ptr<const Clock> clock = real_clock();
  // Leader election: the Lease store this reconciler hands out (none: unsupported).
  std::shared_ptr<MemoryLeases> leases;
  Result<std::unique_ptr<daemon::AsyncLeaseStore>> lease_store(const daemon::LeaderElectionConfig& config) override {
    if (!leases) {
      return daemon::Reconciler::lease_store(config);
    }
    return std::unique_ptr<daemon::AsyncLeaseStore>(std::make_unique<MemoryLeaseStore>(leases));
  }
  void set_write_gate(std::function<bool()> may_write) override { gate_ = std::move(may_write); }

  // The first `n` full reconciles find the API server unreachable.
  void fail_api_first(int n) {
    std::lock_guard lock(mutex_);
    api_failures_left_ = n;
  }
  // The next `n` reconciles (of either kind) reach the API server but one state fails.
  void fail_a_state_in_next(int n) {
    std::lock_guard lock(mutex_);
    state_failures_left_ = n;
  }
  void set_duration(std::chrono::milliseconds duration) {
    std::lock_guard lock(mutex_);
    duration_ = duration;
  }
  // A files reconcile with removed files answers that it left one object per removed
  // file to prune (as the real one does with prune-delay).
  void defer_prune_of_removed_files() {
    std::lock_guard lock(mutex_);
    defer_prune_ = true;
  }

  // The next `n` full reconciles asked to prune only when quiet answer that the folder
  // is not quiet yet (one object left to prune), as the real one does.
  void find_folder_busy_in_next_full(int n) {
    std::lock_guard lock(mutex_);
    busy_fulls_left_ = n;
  }
  // The next `n` reconciles find the ApplySet reconciled by another writer.
  void find_other_writer_in_next(int n) {
    std::lock_guard lock(mutex_);
    other_writer_left_ = n;
  }
  // The next `n` full reconciles find a manifest file changed moments ago.
  void find_settling_file_in_next_full(int n) {
    std::lock_guard lock(mutex_);
    settling_fulls_left_ = n;
  }

  boost::asio::awaitable<daemon::ReconcileSummary> full_reconcile(daemon::FullPrune prune) override {
    co_return co_await work("full", {}, {}, prune == daemon::FullPrune::now);
  }
  boost::asio::awaitable<daemon::ReconcileSummary> reconcile_files(std::vector<std::string> changed,
                                                                   std::vector<std::string> removed) override {
    co_return co_await work("files", std::move(changed), std::move(removed), false);
  }
  Status reconfigure(const daemon::DaemonConfig& config) override {
    std::lock_guard lock(mutex_);
    reconfigured_debounce_.push_back(config.debounce);
    return ok_status();
  }
  void request_stop() override {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  void prepare_for_cycle() override {
    std::lock_guard lock(mutex_);
    ++prepared_;
  }
  std::size_t prepared() const {
    std::lock_guard lock(mutex_);
    return prepared_;
  }

  std::vector<Call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::size_t count(const std::string& kind) const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(
        std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) { return c.kind == kind; }));
  }
  bool stop_requested() const {
    std::lock_guard lock(mutex_);
    return stop_requested_;
  }
  std::vector<Duration> reconfigured_debounce() const {
    std::lock_guard lock(mutex_);
    return reconfigured_debounce_;
  }

 private:
  boost::asio::awaitable<daemon::ReconcileSummary> work(std::string kind, std::vector<std::string> changed,
                                                        std::vector<std::string> removed, bool prune_now) {
    std::size_t index = 0;
    std::chrono::milliseconds duration{};
    bool api_down = false;
    bool defer_prune = false;
    bool state_fails = false;
    bool folder_busy = false;
    bool other_writer = false;
    bool settling = false;
    {
      std::lock_guard lock(mutex_);
      index = calls_.size();
      calls_.push_back(
          {kind, changed, removed, false, !gate_ || gate_(), true, clock->steady_now(), prepared_, prune_now});
      duration = duration_;
      defer_prune = defer_prune_ && kind == "files";
      if (kind == "full" && !prune_now && busy_fulls_left_ > 0) {
        --busy_fulls_left_;
        folder_busy = true;
      }
      if (other_writer_left_ > 0) {
        --other_writer_left_;
        other_writer = true;
      }
      if (kind == "full" && settling_fulls_left_ > 0) {
        --settling_fulls_left_;
        settling = true;
      }
      if (kind == "full" && api_failures_left_ > 0) {
        --api_failures_left_;
        api_down = true;
      } else if (state_failures_left_ > 0) {
        --state_failures_left_;
        state_fails = true;
      }
    }
    if (duration.count() > 0) {
      auto timer = clock->make_timer(co_await boost::asio::this_coro::executor);
      timer->expires_after(duration);
      co_await timer->wait();
    }
    daemon::ReconcileSummary summary;
    if (api_down) {
      summary.api_reachable = false;
      summary.error = "dial tcp 127.0.0.1:6443: connection refused";
    } else {
      summary.states = changed.size() + removed.size() + (kind == "full" ? 5 : 0);
      summary.unchanged = summary.states - (state_fails ? 1 : 0);
      summary.failed = state_fails ? 1 : 0;
      summary.managed_objects = 5;
      summary.prune_deferred = defer_prune ? removed.size() : folder_busy ? 1 : 0;
      summary.files_settling = settling ? 1 : 0;
      if (other_writer) {
        summary.states = 0;
        summary.unchanged = 0;
        summary.writer_conflict = "daemon other-host:/etc/kstate/manifests";
        summary.error = "ApplySet kube-system/kstate is reconciled by " + summary.writer_conflict;
      }
    }
    {
      std::lock_guard lock(mutex_);
      calls_[index].finished = true;
      calls_[index].may_write_at_end = !gate_ || gate_();
    }
    co_return summary;
  }

  std::size_t prepared_ = 0;
  mutable std::mutex mutex_;
  std::function<bool()> gate_;  // called on the loop thread only
  std::vector<Call> calls_;
  int api_failures_left_ = 0;
  int state_failures_left_ = 0;
  std::chrono::milliseconds duration_{0};
  bool stop_requested_ = false;
  bool defer_prune_ = false;
  int busy_fulls_left_ = 0;
  int other_writer_left_ = 0;
  int settling_fulls_left_ = 0;
  std::vector<Duration> reconfigured_debounce_;
};

}  // namespace kstate::testing
