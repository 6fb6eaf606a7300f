// libFuzzer target for discovery decoding (discovery/discovery.hpp and cache.hpp):
// the first byte chooses the document, the rest is its body:
//   0 aggregated APIGroupDiscoveryList (v2 or v2beta1), 1 legacy /api (APIVersions),
//   2 legacy /apis (APIGroupList), 3 legacy /apis/G/V (APIResourceList),
//   4 a discovery cache file whose checksum line the harness computes (so the JSON
//   behind it is reached), 5 a raw cache file.
// Besides the sanitizers' findings it checks the decoders' promises: every resource
// has a plural and a kind, every legacy group a name and versions, and a cache entry
// survives serialise -> parse unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/encoding.hpp"
#include "core/transport.hpp"
#include "discovery/cache.hpp"
#include "discovery/discovery.hpp"

namespace kstate {

// The fuzz build leaves out the HTTP transport (core/http_transport.cpp), where this
// lives; only cache_file_for() uses it and the harness never names cache files.
Result<ServerAddress> parse_server_url(std::string_view url) {
  return Error(ErrorKind::internal, "parse_server_url is not part of the fuzz build: " + std::string(url));
}

}  // namespace kstate

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

void check_resources(const std::vector<kstate::ApiResource>& resources) {
  for (const auto& resource : resources) {
    require(!resource.plural.empty());
    require(!resource.kind.empty());
  }
}

void check_cache(std::string_view text) {
  auto entry = kstate::discovery::parse_cache_entry(text);
  if (!entry) {
    require(!entry.error().message.empty());
    return;
  }
  std::string serialized = kstate::discovery::serialize_cache_entry(*entry);
  auto again = kstate::discovery::parse_cache_entry(serialized);
  require(again.ok());
  require(kstate::discovery::serialize_cache_entry(*again) == serialized);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      std::vector<kstate::discovery::GroupVersionFailure> failures;
      auto resources = kstate::discovery::parse_aggregated(body, failures);
      if (resources) {
        check_resources(*resources);
      }
      for (const auto& failure : failures) {
        require(!failure.error.message.empty());
      }
      break;
    }
    case 1: {
      auto versions = kstate::discovery::parse_api_versions(body);
      require(!versions || !versions->empty());
      break;
    }
    case 2: {
      auto groups = kstate::discovery::parse_api_group_list(body);
      if (groups) {
        for (const auto& group : *groups) {
          require(!group.name.empty());
          require(!group.versions.empty());
        }
      }
      break;
    }
    case 3: {
      std::string group = "apps";
      std::string version = "v1";
      auto resources = kstate::discovery::parse_api_resource_list(body, group, version, true);
      if (resources) {
        check_resources(*resources);
      }
      break;
    }
    case 4:
      check_cache("kstate-discovery-cache v1 sha256=" + kstate::encoding::sha256_hex(body) + "\n" + std::string(body));
      break;
    default:
      check_cache(body);
      break;
  }
  return 0;
}
