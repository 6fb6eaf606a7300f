// DiscoveryClient: the resources of one API server, from the disk cache when it is
// fresh (TTL, default 6 h), revalidated with ETags when it is not, fetched otherwise.
// resolve() maps a GVK to its ApiResource; a kind that is not found invalidates the
// cache and refetches exactly once (so a CRD created a moment ago resolves), then
// fails with NotFound. revalidate() asks the server whether what is loaded is still
// current (aggregated discovery answers 304 to If-None-Match when nothing changed):
// the daemon calls it at every full resync and on SIGHUP, and prune before it lists
// what a Namespace holds, so that a CRD's new plural, scope or versions are seen
// without a restart.
//
//   DiscoveryClient discovery(transport, config.server, {.cache_dir = dir});
//   auto deployments = co_await discovery.resolve({"apps", "v1", "Deployment"});
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/transport.hpp"
#include "discovery/cache.hpp"
#include "discovery/discovery.hpp"
#include "discovery/mapper.hpp"
#include "discovery/openapi.hpp"

namespace kstate::discovery {

struct DiscoveryOptions {
  std::string cache_dir;  // --cache-dir; empty: default_cache_dir(); "" there too: no cache
  bool use_cache = true;
  bool refresh = false;  // --refresh: do not read the cache (it is still written)
  std::chrono::seconds ttl = std::chrono::hours(6);
  bool legacy_only = false;
  std::shared_ptr<const Clock> clock;  // its wall time ages the cache (TTL tests); the real clock when null
};

// What the last load()/refresh() did, for `kstate discover` and metrics.
struct DiscoveryStats {
  std::uint64_t requests = 0;  // HTTP requests it sent (0: the cache answered)
  bool from_cache = false;     // resources came from the cache (fresh, or revalidated by 304)
  bool revalidated = false;    // the cache was stale and the server answered 304
  std::string format;          // aggregated v2 | aggregated v2beta1 | legacy
  std::vector<GroupVersionFailure> failures;
  std::string cache_file;
};

class DiscoveryClient {
 public:
  DiscoveryClient(Transport& transport, std::string server_url, DiscoveryOptions options = {});

  // Loads the resources (cache or server). Called by resolve() when needed.
  boost::asio::awaitable<Status> load();
  // Drops the cache and fetches from the server.
  boost::asio::awaitable<Status> refresh();
  // Loads when nothing is loaded yet; else asks the server with the ETags of what is
  // loaded (two requests, answered 304 without a body when nothing changed) and takes
  // what it answers. Legacy discovery has no ETags: it is fetched again.
  boost::asio::awaitable<Status> revalidate();
  // The resource for a GVK; NotFound (after one refetch) when the server has no such kind.
  boost::asio::awaitable<Result<ApiResource>> resolve(GroupVersionKind gvk);

  // The server's OpenAPI v3 schemas (openapi.hpp), kept in this server's cache folder.
  OpenApiSchemas& openapi();

  const ResourceMapper& mapper() const { return mapper_; }
  const DiscoveryStats& stats() const { return stats_; }
  bool loaded() const { return loaded_; }

 private:
  boost::asio::awaitable<Status> fetch(const CacheEntry* cached);
  std::chrono::system_clock::time_point now() const;

  Transport& transport_;
  std::string server_url_;
  DiscoveryOptions options_;
  std::string cache_file_;
  ResourceMapper mapper_;
  // What mapper_ was built from (its ETags revalidate it), once loaded.
  std::optional<CacheEntry> current_;
  DiscoveryStats stats_;
  bool loaded_ = false;
  // Kinds that were still missing right after a refetch: not refetched again for them
  // until something else refreshes the data.
  std::set<GroupVersionKind> missing_after_refresh_;
  std::unique_ptr<OpenApiSchemas> openapi_;
};

}  // namespace kstate::discovery
