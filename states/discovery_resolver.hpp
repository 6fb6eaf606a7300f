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
  asio::awaitable<Status> revalidate() override { co_return co_await discovery_.revalidate(); }
  std::vector<std::string> unavailable_group_versions() const override {
    std::vector<std::string> unavailable;
    for (const auto& failure : discovery_.stats().failures) {
      unavailable.push_back(failure.group_version + ": " + failure.error.describe());
    }
    return unavailable;
  }
  asio::awaitable<Result<ApiResource>> resolve_known(const GroupVersionKind& gvk) override {
    if (discovery_.loaded()) {
      if (const ApiResource* resource = discovery_.mapper().find(gvk)) {
        co_return *resource;
      }
      co_return Error(ErrorKind::not_found,
                      "the server does not offer kind \"" + gvk.kind + "\" in version \"" + gvk.api_version() + "\"");
    }
    co_return co_await discovery_.resolve(gvk);
  }
  asio::awaitable<Result<std::optional<discovery::PublishedSchema>>> published_schema(
      const GroupVersionKind& gvk) override {
    co_return co_await discovery_.openapi().schema_of(gvk);
  }
  asio::awaitable<Result<std::vector<ApiResource>>> resources() override {
    if (!discovery_.loaded()) {
      if (auto loaded = co_await discovery_.load(); !loaded.ok()) {
        co_return loaded.error();
      }
    }
    std::vector<ApiResource> preferred;
    for (const ApiResource& resource : discovery_.mapper().resources()) {
      if (resource.preferred_version) {
        preferred.push_back(resource);
      }
    }
    co_return preferred;
  }

 private:
  discovery::DiscoveryClient& discovery_;
};

}  // namespace kstate::states
