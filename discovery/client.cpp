// Cache-or-server discovery with TTL, ETag revalidation and refetch-once on a miss.
#include "discovery/client.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace kstate::discovery {

DiscoveryClient::DiscoveryClient(Transport& transport, std::string server_url, DiscoveryOptions options)
    : transport_(transport), server_url_(std::move(server_url)), options_(std::move(options)) {
  if (options_.use_cache) {
    std::string dir = options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir;
    if (!dir.empty()) {
      cache_file_ = cache_file_for(dir, server_url_);
    }
  }
  stats_.cache_file = cache_file_;
}

OpenApiSchemas& DiscoveryClient::openapi() {
  if (!openapi_) {
    // Next to the discovery cache file: <cache-dir>/discovery/<host_port>/.
    std::string folder =
        cache_file_.empty() ? std::string() : std::filesystem::path(cache_file_).parent_path().string();
    openapi_ = std::make_unique<OpenApiSchemas>(transport_, std::move(folder));
  }
  return *openapi_;
}

std::chrono::system_clock::time_point DiscoveryClient::now() const {
  return (options_.clock ? options_.clock : real_clock())->wall_now();
}

boost::asio::awaitable<Status> DiscoveryClient::load() {
  stats_ = DiscoveryStats{};
  stats_.cache_file = cache_file_;
  std::optional<CacheEntry> cached;
  if (!cache_file_.empty() && !options_.refresh) {
    auto entry = read_cache(cache_file_);
    if (entry && entry->server == server_url_ && entry->format != "legacy" && options_.legacy_only) {
      entry = Error(ErrorKind::not_found, "cache written by aggregated discovery");
    }
    if (entry && entry->server == server_url_) {
      cached = std::move(entry.value());
    } else if (!entry && entry.error().kind != ErrorKind::not_found) {
      spdlog::warn("discovery: ignoring the cache {}: {}", cache_file_, entry.error().message);
    }
  }
  if (cached && now() - cached->fetched_at < options_.ttl && now() >= cached->fetched_at) {
    std::vector<ApiResource> all = cached->core_resources;
    all.insert(all.end(), cached->group_resources.begin(), cached->group_resources.end());
    mapper_ = ResourceMapper(std::move(all));
    stats_.from_cache = true;
    stats_.format = cached->format;
    current_ = std::move(cached);
    current_->core_resources.clear();  // (the mapper holds them)
    current_->group_resources.clear();
    loaded_ = true;
    co_return ok_status();
  }
  co_return co_await fetch(cached ? &*cached : nullptr);
}

boost::asio::awaitable<Status> DiscoveryClient::revalidate() {
  if (!loaded_ || !current_) {
    co_return co_await load();
  }
  stats_ = DiscoveryStats{};
  stats_.cache_file = cache_file_;
  // What is loaded, as the entry a 304 keeps (and writes back with a new time).
  CacheEntry known = *current_;
  for (const ApiResource& resource : mapper_.resources()) {
    (resource.group.empty() ? known.core_resources : known.group_resources).push_back(resource);
  }
  co_return co_await fetch(&known);
}

boost::asio::awaitable<Status> DiscoveryClient::refresh() {
  if (!cache_file_.empty()) {
    remove_cache(cache_file_);
  }
  stats_ = DiscoveryStats{};
  stats_.cache_file = cache_file_;
  missing_after_refresh_.clear();
  co_return co_await fetch(nullptr);
}

boost::asio::awaitable<Status> DiscoveryClient::fetch(const CacheEntry* cached) {
  auto before = transport_.stats().total_requests();
  FetchOptions fetch_options;
  fetch_options.legacy_only = options_.legacy_only;
  if (cached != nullptr) {
    fetch_options.etag_api = cached->etag_api;
    fetch_options.etag_apis = cached->etag_apis;
  }
  auto result = co_await fetch_resources(transport_, fetch_options);
  stats_.requests += transport_.stats().total_requests() - before;
  if (!result) {
    co_return result.error();
  }
  CacheEntry entry;
  if (result->not_modified && cached != nullptr) {
    entry = *cached;
    stats_.from_cache = true;
    stats_.revalidated = true;
  } else {
    missing_after_refresh_.clear();  // the server's answer changed: kinds may have appeared
    entry.format = result->format;
    entry.etag_api = result->etag_api;
    entry.etag_apis = result->etag_apis;
    entry.core_resources = std::move(result->core_resources);
    entry.group_resources = std::move(result->group_resources);
  }
  entry.server = server_url_;
  entry.fetched_at = now();
  stats_.format = entry.format;
  stats_.failures = result->failures;
  std::vector<ApiResource> all = entry.core_resources;
  all.insert(all.end(), entry.group_resources.begin(), entry.group_resources.end());
  mapper_ = ResourceMapper(std::move(all));
  loaded_ = true;
  // An incomplete answer is not cached: the next run asks again for the failed group-versions.
  if (!cache_file_.empty() && result->failures.empty()) {
    if (auto written = write_cache(cache_file_, entry); !written) {
      spdlog::warn("discovery: cannot write the cache: {}", written.error().message);
    }
  }
  entry.core_resources.clear();  // (the mapper holds them)
  entry.group_resources.clear();
  current_ = std::move(entry);
  co_return ok_status();
}

boost::asio::awaitable<Result<ApiResource>> DiscoveryClient::resolve(GroupVersionKind gvk) {
  if (!loaded_) {
    if (auto loaded = co_await load(); !loaded) {
      co_return loaded.error();
    }
  }
  if (const auto* resource = mapper_.find(gvk)) {
    co_return *resource;
  }
  if (missing_after_refresh_.count(gvk) == 0) {
    spdlog::debug("discovery: {} not found, refreshing", gvk.qualified_kind());
    auto fresh = co_await refresh();
    if (!fresh) {
      co_return fresh.error();
    }
    if (const auto* resource = mapper_.find(gvk)) {
      co_return *resource;
    }
    missing_after_refresh_.insert(gvk);
  }
  Error error(ErrorKind::not_found,
              "the server does not offer kind \"" + gvk.kind + "\" in version \"" + gvk.api_version() + "\"");
  error.reason = "NotFound";
  co_return error;
}

}  // namespace kstate::discovery
