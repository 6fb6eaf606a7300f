// Signal (core/signal.hpp): notify() wakes every coroutine waiting then, and only them;
// a coroutine that checks its condition before waiting never misses a notification.
// SharedResult: the first to ask computes, the others wait for that one result.
#include "core/signal.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <functional>
#include <vector>

namespace signal_test {

namespace asio = boost::asio;
using kstate::SharedResult;
using kstate::Signal;

TEST_CASE("notify wakes every waiting coroutine once; a later wait waits for the next notify", "[signal]") {
  asio::io_context io;
  Signal signal(io.get_executor());
  std::vector<int> woken;
  auto waiter = [&](int id) -> asio::awaitable<void> {
    co_await signal.wait();
    woken.push_back(id);
    co_await signal.wait();
    woken.push_back(id + 10);
  };
  asio::co_spawn(io, waiter(1), asio::detached);
  asio::co_spawn(io, waiter(2), asio::detached);
  io.poll();
  CHECK(woken.empty());  // nothing notified yet: both wait

  signal.notify();
  io.poll();
  CHECK(woken == std::vector<int>{1, 2});  // both woke, and wait again

  signal.notify();
  io.poll();
  CHECK(woken == std::vector<int>{1, 2, 11, 12});
}

TEST_CASE("a waiter that checks its condition first sees work done before it waited", "[signal]") {
  asio::io_context io;
  Signal signal(io.get_executor());
  int remaining = 3;
  bool all_done = false;
  auto worker = [&]() -> asio::awaitable<void> {
    if (--remaining == 0) {
      signal.notify();
    }
    co_return;
  };
  auto wait_all = [&]() -> asio::awaitable<void> {
    while (remaining > 0) {
      co_await signal.wait();
    }
    all_done = true;
  };
  asio::co_spawn(io, wait_all(), asio::detached);
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(io, worker(), asio::detached);
  }
  io.run();  // returns: nobody is left waiting
  CHECK(all_done);
  CHECK(remaining == 0);
}

TEST_CASE("SharedResult: the work runs once, for the first caller; callers meanwhile and later get its result",
          "[signal]") {
  asio::io_context io;
  SharedResult<int> shared;
  Signal release(io.get_executor());
  bool released = false;
  int runs = 0;
  std::vector<int> seen;
  // (a std::function: a lambda's own type has no linkage, which GCC refuses in the
  // header's coroutine frame)
  std::function<asio::awaitable<int>()> work = [&]() -> asio::awaitable<int> {
    ++runs;
    while (!released) {
      co_await release.wait();  // the work takes a while: the other callers arrive meanwhile
    }
    co_return 42 + runs;
  };
  auto caller = [&]() -> asio::awaitable<void> {
    const int* value = co_await shared.get(work);
    seen.push_back(*value);
  };
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(io, caller(), asio::detached);
  }
  io.poll();
  CHECK(runs == 1);
  CHECK(seen.empty());  // all three wait for the one computation

  released = true;
  release.notify();
  io.poll();
  CHECK(seen == std::vector<int>{43, 43, 43});

  io.restart();                                  // (it ran out of work: every caller had finished)
  asio::co_spawn(io, caller(), asio::detached);  // later: no new run
  io.poll();
  CHECK(runs == 1);
  CHECK(seen == std::vector<int>{43, 43, 43, 43});
}

}  // namespace signal_test
