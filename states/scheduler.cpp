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

std::size_t worker_count(std::size_t count, int concurrency) {
  return std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, concurrency)));
}

}  // namespace

asio::awaitable<void> for_each_bounded(std::size_t count, int concurrency,
                                       const std::function<asio::awaitable<void>(std::size_t)>& task) {
  auto executor = co_await asio::this_coro::executor;
  std::size_t next = 0;
  std::size_t running = 0;
  Signal all_done(executor);
  const std::size_t workers = worker_count(count, concurrency);
  for (std::size_t w = 0; w < workers; ++w) {
    ++running;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
          while (next < count) {
            co_await task(next++);
          }
        },
        [&](std::exception_ptr) {
          if (--running == 0) {
            all_done.notify();
          }
        });
  }
  while (running > 0) {
    co_await all_done.wait();
  }
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
  std::size_t running = 0;
  // Wakes every idle worker when a node completes (its dependents may be ready).
  Signal wakeup(executor);
  Signal all_done(executor);
  auto complete = [&](std::size_t node) {
    ++finished;
    for (std::size_t dependent : plan.dependents[node]) {
      if (--waiting_on[dependent] == 0) {
        ready.push_back(dependent);
      }
    }
    wakeup.notify();
  };
  const std::size_t workers = worker_count(count, concurrency);
  for (std::size_t w = 0; w < workers; ++w) {
    ++running;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
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
        },
        [&](std::exception_ptr failure) {
          if (failure) {
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

}  // namespace kstate::states
