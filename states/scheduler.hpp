// The engine's bounded parallelism on one executor: run_plan walks an ordering plan
// (states/ordering.hpp), starting a node once every node it waits for is done, at most
// `concurrency` at a time; for_each_bounded runs independent tasks (the engine's reads
// of live objects) the same way. Workers are coroutines on the caller's executor: no
// threads, no locks. What a node does is the caller's, and must not throw (the
// engine's state functions return errors as values): a node that throws is logged and
// ends its worker without completing the node, and run_plan then does not return.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <functional>

#include "states/ordering.hpp"

namespace kstate::states {

namespace asio = boost::asio;

// Runs task(0) .. task(count - 1), at most `concurrency` (at least 1) at a time, in
// index order of start; returns once all have ended.
asio::awaitable<void> for_each_bounded(std::size_t count, int concurrency,
                                       const std::function<asio::awaitable<void>(std::size_t)>& task);

// Runs run_node(node) for every node of `plan` once the nodes it requires or runs after
// are done (barrier nodes included: the caller skips what has no state), at most
// `concurrency` (at least 1) at a time; returns once no node can start any more.
asio::awaitable<void> run_plan(const Plan& plan, int concurrency,
                               const std::function<asio::awaitable<void>(std::size_t node)>& run_node);

}  // namespace kstate::states
