// The engine's KindResolver on top of the DiscoveryClient (cached aggregated or
// legacy discovery): the seam that keeps the engine testable without a server.
#pragma once

#include "discovery/client.hpp"
#include "states/engine.hpp"

namespace kstate::states {

class DiscoveryResolver : public KindResolver {
 public:
  explicit DiscoveryResolver(discovery::DiscoveryClient& discovery) : discovery_(discovery) {}

  asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) override {
    co_return co_await discovery_.resolve(gvk);
  }
  asio::awaitable<Status> refresh() override { co_return co_await discovery_.refresh(); }

 private:
  discovery::DiscoveryClient& discovery_;
};

}  // namespace kstate::states
