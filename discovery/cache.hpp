// The discovery disk cache: one file per API server under
// <cache-dir>/discovery/<host_port>/kstate-discovery.json (cache-dir defaults to
// ~/.kube/cache, like kubectl's). Directories are created 0700 and files 0600, written
// atomically (temporary file + rename) and prefixed with a SHA-256 checksum so a
// truncated or corrupt entry is ignored rather than trusted. A file, or one of its
// three folders up to <cache-dir>, owned by another user (root excepted) or writable
// by group or others is neither read nor written (ErrorKind::forbidden, "not trusted"):
// a planted entry could send objects to the wrong endpoint.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/error.hpp"

namespace kstate::discovery {

struct CacheEntry {
  std::string server;
  std::chrono::system_clock::time_point fetched_at{};
  std::string format;
  std::string etag_api;
  std::string etag_apis;
  std::vector<ApiResource> core_resources;
  std::vector<ApiResource> group_resources;
};

// ~/.kube/cache ($HOME), or "" when HOME is unset.
std::string default_cache_dir();
// <cache_dir>/discovery/<host_port>/kstate-discovery.json for a server URL.
std::string cache_file_for(const std::string& cache_dir, const std::string& server_url);

std::string serialize_cache_entry(const CacheEntry& entry);  // checksum line + JSON
// nullopt-equivalent error when the checksum does not match or the JSON is not ours.
Result<CacheEntry> parse_cache_entry(std::string_view text);

Result<CacheEntry> read_cache(const std::string& file);
Status write_cache(const std::string& file, const CacheEntry& entry);
void remove_cache(const std::string& file);

// Any file of the cache folder, as discovery's own is: read whole (not_found when
// absent), written with 0700 folders and a 0600 file, atomically (temporary + rename).
// The OpenAPI documents (openapi.hpp) are kept so.
Result<std::string> read_cache_text(const std::string& file);
Status write_cache_text(const std::string& file, std::string_view content);

}  // namespace kstate::discovery
