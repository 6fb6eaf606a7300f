// Waking coroutines that wait for something other coroutines on the same executor do:
// a shared read answered, the last worker finished, a slot freed. notify() wakes every
// coroutine waiting at that moment (a condition variable's notify_all); each then
// checks its condition again:
//
//   while (!answered) co_await answered_signal.wait();
//
// One executor (one thread) runs both sides, so nothing runs between the check and the
// wait and no wake-up is lost. (Under it: a steady_timer that never expires, cancelled
// to wake its waiters, the idiom this type names once.)
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <memory>
#include <optional>

namespace kstate {

namespace asio = boost::asio;

class Signal {
 public:
  explicit Signal(const asio::any_io_executor& executor);
  // Wakes every coroutine in wait() now; later waits wait for the next notify().
  void notify();
  // Returns at the next notify() (or when the executor's io_context is destroyed).
  asio::awaitable<void> wait();

 private:
  asio::steady_timer timer_;
};

// A result that the first coroutine to ask computes and every other one waits for: one
// CRD list per run, one discovery refresh however many states find a path not served.
// The work must not throw (an exception would leave the waiters waiting): it turns a
// failure into a T.
template <class T>
class SharedResult {
 public:
  // The result, computing it with `work` (an awaitable<T> factory) on the first call.
  template <class Work>
  asio::awaitable<const T*> get(Work work) {
    if (!started_) {
      started_ = true;
      value_ = co_await work();
      if (done_) {
        done_->notify();
      }
    }
    while (!value_) {
      if (!done_) {
        done_ = std::make_unique<Signal>(co_await asio::this_coro::executor);
      }
      co_await done_->wait();
    }
    co_return &*value_;
  }

 private:
  bool started_ = false;
  std::optional<T> value_;
  std::unique_ptr<Signal> done_;
};

}  // namespace kstate
