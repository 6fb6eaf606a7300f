// Leader election's "only the leader writes", enforced at the lowest layer the
// reconcile goes through: a Transport that sends reads (GET, watches) but refuses
// every other verb while `may_write()` is false. The check is made when each request
// is sent, so losing the lease stops the writes of a reconcile already in flight at
// once (the requests already on the wire cannot be recalled), without cancelling it.
#pragma once

#include <functional>

#include "core/transport.hpp"

namespace kstate::daemon {

class WriteGateTransport final : public Transport {
 public:
  // `inner` must outlive the gate; `may_write` is called on the event loop.
  WriteGateTransport(Transport& inner, std::function<bool()> may_write)
      : inner_(inner), may_write_(std::move(may_write)) {}

  asio::awaitable<Result<Response>> send(Request request) override;
  asio::awaitable<Result<std::unique_ptr<ResponseStream>>> open_stream(Request request) override;
  TransportStats stats() const override { return inner_.stats(); }

  // How many writes were refused (for tests and logs).
  std::uint64_t refused() const { return refused_; }

 private:
  bool allowed(const Request& request);

  Transport& inner_;
  std::function<bool()> may_write_;
  std::uint64_t refused_ = 0;
};

}  // namespace kstate::daemon
