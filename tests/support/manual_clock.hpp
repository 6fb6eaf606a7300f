// A Clock whose time moves only when a test says so (core/clock.hpp): advance() fires
// every timer that falls due, in due order, and lets what each one starts run before
// time moves on. So a test of a 30 s back-off or a 1 h resync takes microseconds and
// never depends on how loaded the machine is.
//
// Two ways to drive it:
//   - the test runs the io_context on its own thread: advance() runs the ready handlers
//     itself (io_context::poll);
//   - the io_context runs on another thread (the daemon loop in runner tests):
//     run_elsewhere() once, then advance() waits for that thread to run them.
// As with asio's timers, a wait in progress keeps io_context::run() from returning;
// unlike them, destroying a timer drops its waits without running them.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "core/clock.hpp"

namespace kstate::testing {

class ManualClock final : public Clock {
 public:
  // 2026-01-01T00:00:00Z: where the wall time starts unless a test says otherwise.
  static constexpr std::chrono::seconds default_wall_start{1767225600};

  // Starts at a fixed monotonic time and at `wall_start`. Timers post their handlers to
  // `io`; the waits still pending when `io` is destroyed are dropped then, as asio
  // drops its own, so either may outlive the other.
  explicit ManualClock(asio::io_context& io, WallTime wall_start = WallTime(default_wall_start));
  ~ManualClock() override;
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  SteadyTime steady_now() const override;
  WallTime wall_now() const override;
  std::unique_ptr<Timer> make_timer(const asio::any_io_executor& executor) const override;

  // Moves both times forward by `duration`. Each timer that falls due meanwhile fires at
  // its own time, earliest first (ties in the order they were set), and its handlers,
  // and whatever they post in turn, run before time moves on: a timer they set within
  // the window fires within it too.
  void advance(std::chrono::steady_clock::duration duration);

  // The io_context runs on another thread from now on: advance() waits for it, calling
  // `while_waiting` meanwhile (e.g. to read what the loop sends, so it never blocks).
  void run_elsewhere(std::function<void()> while_waiting = {});

  // When the earliest timer with a wait in progress falls due; nullopt when none waits.
  std::optional<SteadyTime> next_due() const;

  // Returns once the handlers posted so far, and what they post in turn, have run: with
  // the io_context on another thread, what that thread was doing is done and its timers
  // are set, so an advance() that follows counts from them.
  void settle();

  struct State;

 private:
  asio::io_context& io_;
  std::shared_ptr<State> state_;
  bool elsewhere_ = false;
  std::function<void()> while_waiting_;
};

}  // namespace kstate::testing
