// Where time comes from: one Clock gives the monotonic time (timeouts, back-off, how
// long something took), the wall time (what is written into objects and metrics) and
// timers that wait on the monotonic time. Product code takes a Clock instead of
// calling steady_clock::now(), system_clock::now() or constructing an
// asio::steady_timer, so that tests drive time with a simulated clock
// (tests/support/manual_clock.hpp) and never sleep. real_clock() is the machine's.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace kstate {

namespace asio = boost::asio;

// A timer on one executor, with asio::steady_timer's semantics: setting the expiry
// cancels the waits in progress; a wait completes with operation_aborted when the timer
// is cancelled or re-armed, and at once (success) when its expiry has already passed.
// Handlers run on the executor, never inside expires_at() or cancel().
class Timer {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Handler = std::function<void(const boost::system::error_code&)>;

  Timer() = default;
  virtual ~Timer() = default;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  virtual void expires_at(TimePoint when) = 0;
  void expires_after(std::chrono::steady_clock::duration delay);
  // Never expires until set again: a wait then ends only with cancel().
  void expires_never() { expires_at(TimePoint::max()); }
  virtual void cancel() = 0;
  virtual void async_wait(Handler handler) = 0;
  // The coroutine form: true when the expiry came, false when cancelled or re-armed.
  asio::awaitable<bool> wait();

 protected:
  // The clock's monotonic time, which expires_after() counts from.
  virtual TimePoint now() const = 0;
};

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time: for durations, deadlines and timers.
  virtual SteadyTime steady_now() const = 0;
  // Wall time: for what a user or another node reads (Lease renewTime, timestamps).
  virtual WallTime wall_now() const = 0;
  // A timer on `executor` that follows this clock.
  virtual std::unique_ptr<Timer> make_timer(const asio::any_io_executor& executor) const = 0;
};

// The machine's clock: steady_clock, system_clock and asio::steady_timer.
std::shared_ptr<const Clock> real_clock();

}  // namespace kstate
