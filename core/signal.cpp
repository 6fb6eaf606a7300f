// Signal (signal.hpp): a never-expiring timer whose cancel() is the notification.
#include "core/signal.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace kstate {

Signal::Signal(const asio::any_io_executor& executor) : timer_(executor, asio::steady_timer::time_point::max()) {}

void Signal::notify() {
  // cancel() leaves the expiry at max: the next wait() waits again.
  timer_.cancel();
}

asio::awaitable<void> Signal::wait() {
  boost::system::error_code cancelled;  // the notification itself
  co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
}

}  // namespace kstate
