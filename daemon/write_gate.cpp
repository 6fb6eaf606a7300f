// WriteGateTransport (see write_gate.hpp).
#include "daemon/write_gate.hpp"

namespace kstate::daemon {

bool WriteGateTransport::allowed(const Request& request) {
  if (request.verb == "GET" || !may_write_ || may_write_()) {
    return true;
  }
  ++refused_;
  return false;
}

namespace {
Error refused_error(const Request& request) {
  // Not retryable: the reconcile reports the state as failed and the next leader redoes it.
  return Error(ErrorKind::unsupported,
               request.verb + " " + request.path + " not sent: this instance is not the leader (leader election)");
}
}  // namespace

asio::awaitable<Result<Response>> WriteGateTransport::send(Request request) {
  if (!allowed(request)) {
    co_return refused_error(request);
  }
  co_return co_await inner_.send(std::move(request));
}

asio::awaitable<Result<std::unique_ptr<ResponseStream>>> WriteGateTransport::open_stream(Request request) {
  if (!allowed(request)) {
    co_return refused_error(request);
  }
  co_return co_await inner_.open_stream(std::move(request));
}

}  // namespace kstate::daemon
