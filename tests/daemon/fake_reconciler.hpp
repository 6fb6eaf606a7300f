// A Reconciler for runner tests: records every call (thread-safe, the test thread reads
// while the daemon loop runs), answers scripted summaries, and can take time like a
// real reconcile so shutdown and overlap can be observed.
#pragma once

#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <deque>
#include <mutex>

#include "daemon/reconciler.hpp"

namespace kstate::testing {

class FakeReconciler final : public daemon::Reconciler {
 public:
  struct Call {
    std::string kind;  // full | files
    std::vector<std::string> changed;
    std::vector<std::string> removed;
    bool finished = false;
  };

  // The first `n` full reconciles find the API server unreachable.
  void fail_api_first(int n) {
    std::lock_guard lock(mutex_);
    api_failures_left_ = n;
  }
  void set_duration(std::chrono::milliseconds duration) {
    std::lock_guard lock(mutex_);
    duration_ = duration;
  }

  boost::asio::awaitable<daemon::ReconcileSummary> full_reconcile() override {
    co_return co_await work("full", {}, {});
  }
  boost::asio::awaitable<daemon::ReconcileSummary> reconcile_files(std::vector<std::string> changed,
                                                                   std::vector<std::string> removed) override {
    co_return co_await work("files", std::move(changed), std::move(removed));
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
  std::vector<daemon::Duration> reconfigured_debounce() const {
    std::lock_guard lock(mutex_);
    return reconfigured_debounce_;
  }

 private:
  boost::asio::awaitable<daemon::ReconcileSummary> work(std::string kind, std::vector<std::string> changed,
                                                        std::vector<std::string> removed) {
    std::size_t index = 0;
    std::chrono::milliseconds duration{};
    bool api_down = false;
    {
      std::lock_guard lock(mutex_);
      index = calls_.size();
      calls_.push_back({kind, changed, removed, false});
      duration = duration_;
      if (kind == "full" && api_failures_left_ > 0) {
        --api_failures_left_;
        api_down = true;
      }
    }
    if (duration.count() > 0) {
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, duration);
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    daemon::ReconcileSummary summary;
    if (api_down) {
      summary.api_reachable = false;
      summary.error = "dial tcp 127.0.0.1:6443: connection refused";
    } else {
      summary.states = changed.size() + removed.size() + (kind == "full" ? 5 : 0);
      summary.unchanged = summary.states;
      summary.managed_objects = 5;
    }
    {
      std::lock_guard lock(mutex_);
      calls_[index].finished = true;
    }
    co_return summary;
  }

  mutable std::mutex mutex_;
  std::vector<Call> calls_;
  int api_failures_left_ = 0;
  std::chrono::milliseconds duration_{0};
  bool stop_requested_ = false;
  std::vector<daemon::Duration> reconfigured_debounce_;
};

}  // namespace kstate::testing
