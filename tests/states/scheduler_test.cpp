// The engine's bounded parallelism (states/scheduler.hpp) on one io_context: no node
// starts before the nodes it requires or runs after are done, no more than
// `concurrency` run at once, and every node and task runs exactly once.
#include "states/scheduler.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <stdexcept>

#include "core/dynamic_client.hpp"

namespace scheduler_test {

using namespace kstate;
using states::Plan;
using states::PlanNode;

namespace {

// A plan of `count` nodes with the given hard and ordering edges (node <- waited for).
Plan plan_of(std::size_t count, const std::vector<std::pair<std::size_t, std::size_t>>& requires_edges,
             const std::vector<std::pair<std::size_t, std::size_t>>& after_edges = {}) {
  Plan plan;
  plan.item_count = count;
  plan.nodes.resize(count);
  plan.dependents.resize(count);
  for (const auto& [node, required] : requires_edges) {
    plan.nodes[node].requires_nodes.push_back(required);
    plan.dependents[required].push_back(node);
  }
  for (const auto& [node, after] : after_edges) {
    plan.nodes[node].after_nodes.push_back(after);
    plan.dependents[after].push_back(node);
  }
  return plan;
}

// Records who ran when, and how many ran at once; each task yields twice to the
// executor so that the others get to run in between.
struct Recorder {
  std::vector<std::string> events;
  std::size_t running = 0;
  std::size_t most_at_once = 0;

  asio::awaitable<void> task(std::size_t index) {
    events.push_back("start " + std::to_string(index));
    most_at_once = std::max(most_at_once, ++running);
    auto executor = co_await asio::this_coro::executor;
    co_await asio::post(executor, asio::use_awaitable);
    co_await asio::post(executor, asio::use_awaitable);
    --running;
    events.push_back("end " + std::to_string(index));
  }

  std::size_t position(const std::string& event) const {
    return static_cast<std::size_t>(std::find(events.begin(), events.end(), event) - events.begin());
  }
};

}  // namespace

TEST_CASE("a plan node starts only once every node it requires or runs after has ended") {
  // 0 <- 1 <- 3, 0 <- 2, 2 <- 3 (ordering only), 4 alone.
  Plan plan = plan_of(5, {{1, 0}, {2, 0}, {3, 1}}, {{3, 2}});
  Recorder recorder;
  const std::function<asio::awaitable<void>(std::size_t)> run_node = [&](std::size_t node) {
    return recorder.task(node);
  };
  boost::asio::io_context io;
  run_sync(io, states::run_plan(plan, 4, run_node));
  REQUIRE(recorder.events.size() == 10);
  CHECK(recorder.position("end 0") < recorder.position("start 1"));
  CHECK(recorder.position("end 0") < recorder.position("start 2"));
  CHECK(recorder.position("end 1") < recorder.position("start 3"));
  CHECK(recorder.position("end 2") < recorder.position("start 3"));
  CHECK(recorder.position("start 4") < recorder.position("end 0"));  // nothing to wait for: at once
}

TEST_CASE("no more plan nodes or tasks run at once than the concurrency") {
  for (int concurrency : {1, 3, 16}) {
    INFO("concurrency " << concurrency);
    Plan plan = plan_of(10, {});
    Recorder nodes;
    const std::function<asio::awaitable<void>(std::size_t)> run_node = [&](std::size_t node) {
      return nodes.task(node);
    };
    boost::asio::io_context io;
    run_sync(io, states::run_plan(plan, concurrency, run_node));
    CHECK(nodes.events.size() == 20);
    CHECK(nodes.most_at_once == std::min<std::size_t>(10, static_cast<std::size_t>(concurrency)));

    Recorder tasks;
    const std::function<asio::awaitable<void>(std::size_t)> task = [&](std::size_t index) { return tasks.task(index); };
    run_sync(io, states::for_each_bounded(10, concurrency, task));
    CHECK(tasks.events.size() == 20);
    CHECK(tasks.most_at_once == std::min<std::size_t>(10, static_cast<std::size_t>(concurrency)));
    CHECK(tasks.position("start 0") < tasks.position("start 9"));  // started in index order
  }
}

TEST_CASE("a concurrency below one runs one at a time, and nothing to run returns at once") {
  Recorder tasks;
  const std::function<asio::awaitable<void>(std::size_t)> task = [&](std::size_t index) { return tasks.task(index); };
  boost::asio::io_context io;
  run_sync(io, states::for_each_bounded(3, 0, task));
  CHECK(tasks.most_at_once == 1);
  CHECK(tasks.events.size() == 6);
  run_sync(io, states::for_each_bounded(0, 4, task));
  const Plan empty = plan_of(0, {});
  run_sync(io, states::run_plan(empty, 4, task));
  CHECK(tasks.events.size() == 6);
}

}  // namespace scheduler_test
