// The engine's bounded parallelism (see scheduler.hpp).
#include "states/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <deque>
#include <vector>

#include "core/signal.hpp"

namespace kstate::states {
namespace {

using Worker = std::function<asio::awaitable<void>()>;

// Runs min(count, concurrency) copies of `worker` on the caller's executor and returns
// once every one has ended. `log_failure`: a worker that threw is logged.
asio::awaitable<void> run_workers(std::size_t count, int concurrency, const Worker& worker, bool log_failure) {
  auto executor = co_await asio::this_coro::executor;
  std::size_t running = 0;
  Signal all_done(executor);
  const std::size_t workers = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, concurrency)));
  for (std::size_t w = 0; w < workers; ++w) {
    ++running;
    asio::co_spawn(executor, worker, [&](std::exception_ptr failure) {
      if (failure && log_failure) {
        spdlog::error("internal error in the states engine");
      }
      if (--running == 0) {
        all_done.notify();
      }
    });
  }
  while (running > 0) {
    co_await all_done.wait();
  }
}

}  // namespace

asio::awaitable<void> for_each_bounded(std::size_t count, int concurrency,
                                       const std::function<asio::awaitable<void>(std::size_t)>& task) {
  std::size_t next = 0;
  const Worker worker = [&]() -> asio::awaitable<void> {
    while (next < count) {
      co_await task(next++);
    }
  };
  const bool log_failure = false;
  co_await run_workers(count, concurrency, worker, log_failure);
}

asio::awaitable<void> run_plan(const Plan& plan, int concurrency,
                               const std::function<asio::awaitable<void>(std::size_t node)>& run_node) {
  auto executor = co_await asio::this_coro::executor;
  std::size_t count = plan.nodes.size();
  std::vector<std::size_t> waiting_on(count, 0);
  std::deque<std::size_t> ready;
  for (std::size_t node = 0; node < count; ++node) {
    waiting_on[node] = plan.nodes[node].requires_nodes.size() + plan.nodes[node].after_nodes.size();
    if (waiting_on[node] == 0) {
      ready.push_back(node);
    }
  }
  std::size_t finished = 0;
  // Wakes every idle worker when a node completes (its dependents may be ready).
  Signal wakeup(executor);
  auto complete = [&](std::size_t node) {
    ++finished;
    for (std::size_t dependent : plan.dependents[node]) {
      if (--waiting_on[dependent] == 0) {
        ready.push_back(dependent);
      }
    }
    wakeup.notify();
  };
  const Worker worker = [&]() -> asio::awaitable<void> {
    while (finished < count) {
      if (ready.empty()) {
        co_await wakeup.wait();
        continue;
      }
      std::size_t node = ready.front();
      ready.pop_front();
      co_await run_node(node);
      complete(node);
    }
  };
  const bool log_failure = true;
  co_await run_workers(count, concurrency, worker, log_failure);
}

}  // namespace kstate::states
