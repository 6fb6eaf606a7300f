// Aggregated and legacy discovery documents, and fetching them (see discovery.hpp).
#include "discovery/discovery.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "core/json.hpp"
#include "core/signal.hpp"

namespace kstate::discovery {
namespace {

namespace asio = boost::asio;

std::vector<std::string> string_list(const json::Value* value) {
  std::vector<std::string> out;
  if (value != nullptr && value->IsArray()) {
    for (const auto& item : value->GetArray()) {
      if (item.IsString()) {
        out.emplace_back(item.GetString(), item.GetStringLength());
      }
    }
  }
  return out;
}

std::string text(const json::Value& object, std::string_view key) {
  return std::string(json::string_or(json::find(object, key), ""));
}

Error not_discovery(std::string_view what) {
  return Error(ErrorKind::invalid, "discovery: the server's " + std::string(what) + " document is not valid");
}

}  // namespace

Result<std::vector<ApiResource>> parse_aggregated(std::string_view body, std::vector<GroupVersionFailure>& failures) {
  auto document = json::parse(body);
  if (!document || !document->IsObject() || json::get_string(*document, "kind") != "APIGroupDiscoveryList") {
    return Error(ErrorKind::unsupported, "not an aggregated discovery document");
  }
  std::vector<ApiResource> resources;
  const auto* items = json::find(*document, "items");
  if (items == nullptr || !items->IsArray()) {
    return not_discovery("aggregated");
  }
  for (const auto& group : items->GetArray()) {
    std::string group_name(json::string_or(json::find_path(group, {"metadata", "name"}), ""));
    const auto* versions = json::find(group, "versions");
    if (versions == nullptr || !versions->IsArray()) {
      continue;
    }
    bool first = true;
    for (const auto& version : versions->GetArray()) {
      std::string version_name = text(version, "version");
      std::string group_version = group_name.empty() ? version_name : group_name + "/" + version_name;
      if (json::get_string(version, "freshness") == "Stale") {
        failures.push_back({group_version, Error(ErrorKind::server_error, "discovery for " + group_version +
                                                                              " is stale (the aggregated "
                                                                              "API server is not answering)")});
      }
      const auto* list = json::find(version, "resources");
      if (list != nullptr && list->IsArray()) {
        for (const auto& entry : list->GetArray()) {
          ApiResource resource;
          resource.group = group_name;
          resource.version = version_name;
          resource.plural = text(entry, "resource");
          resource.singular = text(entry, "singularResource");
          if (const auto* kind = json::find(entry, "responseKind"); kind != nullptr) {
            resource.kind = text(*kind, "kind");
          }
          resource.namespaced = json::get_string(entry, "scope") == "Namespaced";
          resource.verbs = string_list(json::find(entry, "verbs"));
          resource.short_names = string_list(json::find(entry, "shortNames"));
          resource.categories = string_list(json::find(entry, "categories"));
          if (const auto* subresources = json::find(entry, "subresources");
              subresources != nullptr && subresources->IsArray()) {
            for (const auto& sub : subresources->GetArray()) {
              resource.subresources.push_back(text(sub, "subresource"));
            }
          }
          resource.preferred_version = first;
          if (!resource.plural.empty() && !resource.kind.empty()) {
            resources.push_back(std::move(resource));
          }
        }
      }
      first = false;
    }
  }
  return resources;
}

Result<std::vector<std::string>> parse_api_versions(std::string_view body) {
  auto document = json::parse(body);
  if (!document || !document->IsObject()) {
    return not_discovery("/api");
  }
  auto versions = string_list(json::find(*document, "versions"));
  if (versions.empty()) {
    return not_discovery("/api");
  }
  return versions;
}

Result<std::vector<LegacyGroup>> parse_api_group_list(std::string_view body) {
  auto document = json::parse(body);
  if (!document || !document->IsObject()) {
    return not_discovery("/apis");
  }
  std::vector<LegacyGroup> groups;
  const auto* list = json::find(*document, "groups");
  if (list == nullptr || !list->IsArray()) {
    return not_discovery("/apis");
  }
  for (const auto& item : list->GetArray()) {
    LegacyGroup group;
    group.name = text(item, "name");
    std::string preferred(json::string_or(json::find_path(item, {"preferredVersion", "version"}), ""));
    if (!preferred.empty()) {
      group.versions.push_back(preferred);
    }
    if (const auto* versions = json::find(item, "versions"); versions != nullptr && versions->IsArray()) {
      for (const auto& version : versions->GetArray()) {
        auto name = text(version, "version");
        if (!name.empty() && name != preferred) {
          group.versions.push_back(name);
        }
      }
    }
    if (!group.name.empty() && !group.versions.empty()) {
      groups.push_back(std::move(group));
    }
  }
  return groups;
}

Result<std::vector<ApiResource>> parse_api_resource_list(std::string_view body, const std::string& group,
                                                         const std::string& version, bool preferred) {
  auto document = json::parse(body);
  const auto* list = document ? json::find(*document, "resources") : nullptr;
  if (list == nullptr || !list->IsArray()) {
    return not_discovery(group.empty() ? version : group + "/" + version);
  }
  std::vector<ApiResource> resources;
  std::vector<std::pair<std::string, std::string>> subresources;  // plural, subresource
  for (const auto& entry : list->GetArray()) {
    auto name = text(entry, "name");
    if (auto slash = name.find('/'); slash != std::string::npos) {
      subresources.emplace_back(name.substr(0, slash), name.substr(slash + 1));
      continue;
    }
    ApiResource resource;
    resource.group = group;
    resource.version = version;
    resource.plural = name;
    resource.singular = text(entry, "singularName");
    resource.kind = text(entry, "kind");
    const auto* namespaced = json::find(entry, "namespaced");
    resource.namespaced = namespaced != nullptr && namespaced->IsTrue();
    resource.verbs = string_list(json::find(entry, "verbs"));
    resource.short_names = string_list(json::find(entry, "shortNames"));
    resource.categories = string_list(json::find(entry, "categories"));
    resource.preferred_version = preferred;
    if (!resource.plural.empty() && !resource.kind.empty()) {
      resources.push_back(std::move(resource));
    }
  }
  for (const auto& [plural, sub] : subresources) {
    for (auto& resource : resources) {
      if (resource.plural == plural) {
        resource.subresources.push_back(sub);
      }
    }
  }
  return resources;
}

namespace {

Request discovery_request(std::string path, std::string_view accept, const std::string& etag) {
  Request request;
  request.verb = "GET";
  request.path = std::move(path);
  request.accept = std::string(accept);
  request.idempotent = true;
  if (!etag.empty()) {
    request.headers.emplace_back("If-None-Match", etag);
  }
  return request;
}

std::string aggregated_format(const Response& response) {
  auto content_type = response.header("content-type");
  if (content_type.find("g=apidiscovery.k8s.io") == std::string_view::npos) {
    return {};
  }
  return content_type.find("v=v2beta1") != std::string_view::npos ? "aggregated v2beta1" : "aggregated v2";
}

// Legacy discovery: /api, /apis, then every group-version at once. `api_body` and
// `apis_body`, when not empty, are the legacy documents a server already sent in
// answer to the aggregated Accept header (an old server falls back to plain JSON):
// they are used instead of asking again.
asio::awaitable<Result<FetchResult>> fetch_legacy(Transport& transport, FetchResult result, std::string api_body,
                                                  std::string apis_body) {
  result.format = "legacy";
  if (api_body.empty()) {
    auto request = discovery_request("/api", "application/json", "");
    auto api = co_await transport.send(request);
    if (!api) {
      co_return api.error();
    }
    api_body = std::move(api->body);
  }
  auto core_versions = parse_api_versions(api_body);
  if (!core_versions) {
    co_return core_versions.error();
  }
  if (apis_body.empty()) {
    auto request = discovery_request("/apis", "application/json", "");
    auto apis = co_await transport.send(request);
    if (!apis) {
      co_return apis.error();
    }
    apis_body = std::move(apis->body);
  }
  auto groups = parse_api_group_list(apis_body);
  if (!groups) {
    co_return groups.error();
  }
  struct Job {
    std::string group;
    std::string version;
    bool preferred;
    std::optional<Result<Response>> answer;
  };
  auto jobs = std::make_shared<std::vector<Job>>();
  for (std::size_t i = 0; i < core_versions->size(); ++i) {
    jobs->push_back({"", core_versions.value()[i], i == 0, std::nullopt});
  }
  for (const auto& group : groups.value()) {
    for (std::size_t i = 0; i < group.versions.size(); ++i) {
      jobs->push_back({group.name, group.versions[i], i == 0, std::nullopt});
    }
  }
  // Fan out: one coroutine per group-version; the last to finish wakes us.
  auto executor = co_await asio::this_coro::executor;
  auto remaining = std::make_shared<std::size_t>(jobs->size());
  auto done = std::make_shared<Signal>(executor);
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    auto& job = (*jobs)[i];
    std::string path = job.group.empty() ? "/api/" + job.version : "/apis/" + job.group + "/" + job.version;
    asio::co_spawn(
        executor,
        [&transport, jobs, i, path, remaining, done]() -> asio::awaitable<void> {
          auto request = discovery_request(path, "application/json", "");
          (*jobs)[i].answer = co_await transport.send(request);
          if (--*remaining == 0) {
            done->notify();
          }
        },
        [](std::exception_ptr) {});
  }
  while (*remaining > 0) {
    co_await done->wait();
  }
  for (auto& job : *jobs) {
    std::string group_version = job.group.empty() ? job.version : job.group + "/" + job.version;
    Result<std::vector<ApiResource>> parsed =
        job.answer->ok() ? parse_api_resource_list(job.answer->value().body, job.group, job.version, job.preferred)
                         : Result<std::vector<ApiResource>>(job.answer->error());
    if (!parsed) {
      spdlog::warn("discovery: skipping {}: {}", group_version, parsed.error().describe());
      result.failures.push_back({group_version, parsed.error()});
      continue;
    }
    auto& into = job.group.empty() ? result.core_resources : result.group_resources;
    into.insert(into.end(), parsed->begin(), parsed->end());
  }
  co_return result;
}

}  // namespace

asio::awaitable<Result<FetchResult>> fetch_resources(Transport& transport, FetchOptions options) {
  FetchResult result;
  std::string no_body;
  if (options.legacy_only) {
    co_return co_await fetch_legacy(transport, std::move(result), no_body, no_body);
  }
  auto api_request = discovery_request("/api", aggregated_accept, options.etag_api);
  auto api = co_await transport.send(api_request);
  if (!api) {
    if (api.error().http_status == 406) {
      // A server that knows neither the aggregated types nor the JSON fallback's form.
      co_return co_await fetch_legacy(transport, std::move(result), no_body, no_body);
    }
    co_return api.error();
  }
  auto apis_request = discovery_request("/apis", aggregated_accept, options.etag_apis);
  auto apis = co_await transport.send(apis_request);
  if (!apis) {
    co_return apis.error();
  }
  if (api->status == 304 && apis->status == 304) {
    result.not_modified = true;
    result.etag_api = options.etag_api;
    result.etag_apis = options.etag_apis;
    co_return result;
  }
  // Only one changed: the cached half cannot be combined safely, fetch it again.
  if (api->status == 304) {
    auto again = discovery_request("/api", aggregated_accept, "");
    api = co_await transport.send(again);
  } else if (apis->status == 304) {
    auto again = discovery_request("/apis", aggregated_accept, "");
    apis = co_await transport.send(again);
  }
  if (!api || !apis) {
    co_return !api ? api.error() : apis.error();
  }
  auto format = aggregated_format(api.value());
  if (format.empty() && aggregated_format(apis.value()).empty()) {
    // A server without aggregated discovery answered with the legacy documents: use them.
    std::string api_body = std::move(api->body);
    std::string apis_body = std::move(apis->body);
    co_return co_await fetch_legacy(transport, std::move(result), api_body, apis_body);
  }
  if (format.empty() || aggregated_format(apis.value()).empty()) {
    co_return co_await fetch_legacy(transport, std::move(result), no_body, no_body);  // mixed answers: start over
  }
  result.format = format;
  auto core = parse_aggregated(api->body, result.failures);
  auto groups = parse_aggregated(apis->body, result.failures);
  if (!core || !groups) {
    FetchResult fresh;
    co_return co_await fetch_legacy(transport, std::move(fresh), no_body, no_body);
  }
  result.core_resources = std::move(core.value());
  result.group_resources = std::move(groups.value());
  result.etag_api = std::string(api->header("etag"));
  result.etag_apis = std::string(apis->header("etag"));
  co_return result;
}

}  // namespace kstate::discovery
