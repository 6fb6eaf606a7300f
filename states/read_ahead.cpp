// See read_ahead.hpp. Everything here runs on the client's executor (one thread).
#include "states/read_ahead.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <set>

namespace kstate::states {

std::vector<GroupVersionKind> ReadAhead::kinds_to_list(const Inventory& inventory) {
  std::map<Key, std::set<std::string>> namespaces;
  for (const InventoryEntry& entry : inventory.entries) {
    if (!entry.ns.empty()) {
      namespaces[{entry.group, entry.version, entry.kind}].insert(entry.ns);
    }
  }
  std::vector<GroupVersionKind> kinds;
  for (const auto& [key, in] : namespaces) {
    if (in.size() >= 2) {
      kinds.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key)});
    }
  }
  return kinds;
}

std::shared_ptr<ReadAhead> ReadAhead::start(DynamicClient& client, KindResolver& resolver,
                                            const std::vector<GroupVersionKind>& kinds, std::string label_selector,
                                            const asio::any_io_executor& executor) {
  auto ahead = std::make_shared<ReadAhead>();
  ahead->client_ = &client;
  ahead->resolver_ = &resolver;
  ahead->label_selector_ = std::move(label_selector);
  for (const GroupVersionKind& gvk : kinds) {
    Listing& listing = ahead->listings_[key_of(gvk)];
    listing.answered = std::make_unique<Signal>(executor);
  }
  for (const GroupVersionKind& gvk : kinds) {
    // The coroutine holds the object: it lives until every LIST has ended.
    asio::co_spawn(executor, ahead->list(key_of(gvk), gvk), [ahead](std::exception_ptr failure) {
      if (failure) {
        spdlog::debug("internal error in a LIST started ahead; the engine lists that kind itself");
      }
    });
  }
  return ahead;
}

asio::awaitable<void> ReadAhead::list(Key key, GroupVersionKind gvk) {
  Listing& listing = listings_.at(key);
  auto resolved = co_await resolver_->resolve(gvk);
  if (!resolved.ok() || !resolved.value().namespaced) {
    listing.answer =
        resolved.ok() ? Error(ErrorKind::internal, gvk.qualified_kind() + " is not namespaced") : resolved.error();
  } else {
    listing.resource = resolved.value();
    ListOptions owned;
    owned.label_selector = label_selector_;
    const std::string all_namespaces;
    listing.answer = co_await client_->list(*listing.resource, all_namespaces, owned);
  }
  listing.done = true;
  listing.answered->notify();
}

asio::awaitable<void> ReadAhead::wait(Listing& listing) {
  while (!listing.done) {
    co_await listing.answered->wait();
  }
}

bool ReadAhead::started(const GroupVersionKind& gvk) const {
  return listings_.count(key_of(gvk)) > 0;
}

asio::awaitable<std::optional<Result<json::Document>>> ReadAhead::take(const ApiResource& resource) {
  auto found = listings_.find(key_of(resource.gvk()));
  if (found == listings_.end() || found->second.taken) {
    co_return std::nullopt;
  }
  Listing& listing = found->second;
  listing.taken = true;
  co_await wait(listing);
  if (!listing.resource || listing.resource->plural != resource.plural ||
      listing.resource->namespaced != resource.namespaced) {
    co_return std::nullopt;
  }
  co_return std::move(listing.answer);
}

asio::awaitable<void> ReadAhead::finished() {
  for (auto& [key, listing] : listings_) {
    co_await wait(listing);
  }
}

}  // namespace kstate::states
