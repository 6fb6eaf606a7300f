// The machine's clock (clock.hpp) and the coroutine form of Timer::async_wait.
#include "core/clock.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace kstate {

void Timer::expires_after(std::chrono::steady_clock::duration delay) {
  expires_at(now() + delay);
}

asio::awaitable<bool> Timer::wait() {
  boost::system::error_code ec;
  // async_wait takes a copyable std::function; the coroutine's handler is move-only.
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  co_await asio::async_initiate<decltype(token), void(boost::system::error_code)>(
      [this](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        async_wait([shared](const boost::system::error_code& result) { (*shared)(result); });
      },
      token);
  co_return !ec;
}

namespace {

class RealTimer final : public Timer {
 public:
  explicit RealTimer(const asio::any_io_executor& executor) : timer_(executor) {}
  void expires_at(TimePoint when) override { timer_.expires_at(when); }
  void cancel() override { timer_.cancel(); }
  void async_wait(Handler handler) override { timer_.async_wait(std::move(handler)); }

 protected:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }

 private:
  asio::steady_timer timer_;
};

class RealClock final : public Clock {
 public:
  SteadyTime steady_now() const override { return std::chrono::steady_clock::now(); }
  WallTime wall_now() const override { return std::chrono::system_clock::now(); }
  std::unique_ptr<Timer> make_timer(const asio::any_io_executor& executor) const override {
    return std::make_unique<RealTimer>(executor);
  }
};

}  // namespace

std::shared_ptr<const Clock> real_clock() {
  static const auto clock = std::make_shared<const RealClock>();
  return clock;
}

}  // namespace kstate
