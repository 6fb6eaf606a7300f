// Clock and Timer (core/clock.hpp) on the simulated clock tests use
// (tests/support/manual_clock.hpp): timers fire at their own time and in due order as
// time is advanced, never before; cancel and re-arm end a wait; the coroutine form says
// which; the io_context may run on another thread. And the real clock's timer, where no
// time has to pass (an expiry already past, a cancel).
#include "core/clock.hpp"

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/manual_clock.hpp"

namespace clock_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using kstate::Timer;
using kstate::testing::ManualClock;

// Runs the handlers ready now (poll() stops an io_context it finds out of work).
void run_ready(asio::io_context& io) {
  io.restart();
  io.poll();
}

TEST_CASE("timers fire at their own time, earliest first, and none before it", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  const auto start = clock.steady_now();
  std::vector<std::string> fired;  // name@milliseconds since start, as the handler saw the clock
  auto make = [&](const std::string& name, std::chrono::milliseconds after) {
    auto timer = clock.make_timer(io.get_executor());
    timer->expires_after(after);
    timer->async_wait([&, name](const boost::system::error_code& ec) {
      const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(clock.steady_now() - start);
      fired.push_back(name + (ec ? "!" : "") + "@" + std::to_string(at.count()));
    });
    return timer;
  };
  auto late = make("late", 30ms);
  auto early = make("early", 10ms);
  auto middle = make("middle", 20ms);
  auto tie = make("tie", 20ms);  // the same time as middle, set after it

  run_ready(io);
  clock.advance(9ms);
  CHECK(fired.empty());
  CHECK(clock.next_due() == start + 10ms);
  clock.advance(1ms);
  CHECK(fired == std::vector<std::string>{"early@10"});
  clock.advance(100ms);
  CHECK(fired == std::vector<std::string>{"early@10", "middle@20", "tie@20", "late@30"});
  CHECK(clock.steady_now() - start == 110ms);
  CHECK_FALSE(clock.next_due());
}

TEST_CASE("the wall clock moves with the monotonic one", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  const auto wall = clock.wall_now();
  CHECK(std::chrono::system_clock::to_time_t(wall) == 1767225600);  // 2026-01-01T00:00:00Z
  clock.advance(90s);
  CHECK(clock.wall_now() - wall == 90s);
}

TEST_CASE("a timer a handler sets within the advanced time fires within it", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  const auto start = clock.steady_now();
  auto timer = clock.make_timer(io.get_executor());
  std::vector<std::chrono::milliseconds> ticks;
  std::function<void()> arm = [&] {
    timer->expires_after(100ms);
    timer->async_wait([&](const boost::system::error_code& ec) {
      if (!ec) {
        ticks.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(clock.steady_now() - start));
        arm();
      }
    });
  };
  arm();
  clock.advance(350ms);
  CHECK(ticks == std::vector<std::chrono::milliseconds>{100ms, 200ms, 300ms});
  CHECK(clock.next_due() == start + 400ms);
}

TEST_CASE("cancel and re-arm end a wait with operation_aborted; the cancelled wait never fires", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  auto timer = clock.make_timer(io.get_executor());
  std::vector<std::string> results;
  auto record = [&](const std::string& name) {
    return [&, name](const boost::system::error_code& ec) {
      results.push_back(name + ": " + (ec == asio::error::operation_aborted ? "aborted" : ec ? "error" : "expired"));
    };
  };

  timer->expires_after(10ms);
  timer->async_wait(record("first"));
  timer->cancel();
  CHECK(results.empty());  // handlers run on the executor, never inside cancel()
  run_ready(io);
  CHECK(results == std::vector<std::string>{"first: aborted"});
  clock.advance(1s);
  CHECK(results.size() == 1);

  timer->expires_after(10ms);
  timer->async_wait(record("second"));
  timer->expires_after(50ms);  // re-armed: the wait in progress ends
  timer->async_wait(record("third"));
  run_ready(io);
  CHECK(results == std::vector<std::string>{"first: aborted", "second: aborted"});
  clock.advance(49ms);
  CHECK(results.size() == 2);
  clock.advance(1ms);
  CHECK(results == std::vector<std::string>{"first: aborted", "second: aborted", "third: expired"});

  // An expiry already past completes at once; one never set to expire only by cancel().
  timer->async_wait(record("past"));
  run_ready(io);
  CHECK(results.back() == "past: expired");
  timer->expires_never();
  timer->async_wait(record("never"));
  clock.advance(24h * 365);
  CHECK(results.back() == "past: expired");
  timer->cancel();
  run_ready(io);
  CHECK(results.back() == "never: aborted");
}

TEST_CASE("the coroutine form says whether the time came or the wait was cancelled", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  auto timer = clock.make_timer(io.get_executor());
  std::vector<bool> outcomes;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        timer->expires_after(1s);
        outcomes.push_back(co_await timer->wait());
        timer->expires_after(1s);
        outcomes.push_back(co_await timer->wait());
      },
      asio::detached);
  run_ready(io);
  clock.advance(999ms);
  CHECK(outcomes.empty());
  clock.advance(1ms);
  CHECK(outcomes == std::vector<bool>{true});
  timer->cancel();
  run_ready(io);
  CHECK(outcomes == std::vector<bool>{true, false});
}

TEST_CASE("with the io_context on another thread, advance returns once what the timers started has run", "[clock]") {
  asio::io_context io;
  ManualClock clock(io);
  auto guard = asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  clock.run_elsewhere();
  auto first = clock.make_timer(io.get_executor());
  auto second = clock.make_timer(io.get_executor());
  std::atomic<int> stage{0};
  std::atomic<bool> armed{false};
  asio::post(io, [&] {
    first->expires_after(10ms);
    first->async_wait([&](const boost::system::error_code& ec) {
      if (!ec) {
        stage = 1;
        // Set by the first timer's handler, within the advanced time.
        second->expires_after(5ms);
        second->async_wait([&](const boost::system::error_code& second_ec) { stage = second_ec ? -1 : 2; });
      }
    });
    armed = true;
  });
  while (!armed) {
    std::this_thread::yield();  // the post above runs on the loop thread: no time has to pass
  }
  clock.advance(20ms);
  CHECK(stage == 2);
  guard.reset();
  io.stop();
  loop.join();
}

TEST_CASE("waits still pending when the io_context is destroyed are dropped with it", "[clock]") {
  std::weak_ptr<int> owned_by_waiter;
  {
    asio::io_context io;
    ManualClock clock(io);
    auto timer = clock.make_timer(io.get_executor());
    auto resource = std::make_shared<int>(1);
    owned_by_waiter = resource;
    asio::co_spawn(
        io,
        [&timer, resource = std::move(resource)]() -> asio::awaitable<void> {
          timer->expires_after(1h);
          co_await timer->wait();
        },
        asio::detached);
    run_ready(io);
    CHECK_FALSE(owned_by_waiter.expired());  // the coroutine waits
  }
  CHECK(owned_by_waiter.expired());  // and was destroyed, not leaked
}

TEST_CASE("the real clock's timer: an expiry already past completes at once, a cancel ends the wait", "[clock]") {
  asio::io_context io;
  const auto clock = kstate::real_clock();
  auto timer = clock->make_timer(io.get_executor());
  std::vector<bool> outcomes;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        timer->expires_at(clock->steady_now() - 1s);
        outcomes.push_back(co_await timer->wait());
        timer->expires_never();
        outcomes.push_back(co_await timer->wait());
      },
      asio::detached);
  run_ready(io);
  CHECK(outcomes == std::vector<bool>{true});
  timer->cancel();
  io.run();
  CHECK(outcomes == std::vector<bool>{true, false});
}

}  // namespace clock_test
