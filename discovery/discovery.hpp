// API discovery: which resources the server offers, for any server. Tries aggregated
// discovery (apidiscovery.k8s.io v2, then v2beta1: two requests, /api and /apis),
// and falls back to legacy discovery (/api, /apis, then one request per
// group-version, in parallel) when the server does not answer in the aggregated
// format. A group-version that fails (e.g. 503 from a broken aggregated API server)
// is reported in `failures` and skipped; it is not fatal.
//
// The parsers are pure and unit-tested; fetch_resources() does the I/O.
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/api_resource.hpp"
#include "core/error.hpp"
#include "core/transport.hpp"

namespace kstate::discovery {

struct GroupVersionFailure {
  std::string group_version;  // e.g. metrics.k8s.io/v1beta1
  Error error;
};

// The Accept header asking for aggregated discovery v2, then v2beta1, then legacy JSON.
inline constexpr std::string_view aggregated_accept =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

// Parses an APIGroupDiscoveryList (v2 or v2beta1). Returns nullopt-like error
// (ErrorKind::unsupported) when the body is not one (a legacy-only server).
// Versions with freshness "Stale" are reported in `failures` but kept.
Result<std::vector<ApiResource>> parse_aggregated(std::string_view body, std::vector<GroupVersionFailure>& failures);

// Legacy documents: /api (APIVersions), /apis (APIGroupList) and /api/v1, /apis/G/V
// (APIResourceList; "plural/subresource" entries become subresources).
struct LegacyGroup {
  std::string name;
  std::vector<std::string> versions;  // preferred first
};
Result<std::vector<std::string>> parse_api_versions(std::string_view body);
Result<std::vector<LegacyGroup>> parse_api_group_list(std::string_view body);
Result<std::vector<ApiResource>> parse_api_resource_list(std::string_view body, const std::string& group,
                                                         const std::string& version, bool preferred);

struct FetchOptions {
  bool legacy_only = false;  // skip aggregated discovery (and tests of the legacy path)
  // ETags of the aggregated /api and /apis documents from the cache: sent as
  // If-None-Match; a 304 answer sets not_modified.
  std::string etag_api;
  std::string etag_apis;
};

struct FetchResult {
  std::string format;                        // "aggregated v2", "aggregated v2beta1" or "legacy"
  bool not_modified = false;                 // both aggregated documents answered 304: keep the cached resources
  std::vector<ApiResource> core_resources;   // from /api
  std::vector<ApiResource> group_resources;  // from /apis
  std::string etag_api;
  std::string etag_apis;
  std::vector<GroupVersionFailure> failures;
};

// Fetches everything the server offers. Fails only when /api or /apis themselves fail.
boost::asio::awaitable<Result<FetchResult>> fetch_resources(Transport& transport, FetchOptions options);

}  // namespace kstate::discovery
