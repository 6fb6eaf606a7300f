// The `kstate discover` subcommand (see discover_command.hpp).
#include "daemon/discover_command.hpp"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/dynamic_client.hpp"
#include "core/strings.hpp"
#include "daemon/client_options.hpp"
#include "daemon/logging.hpp"
#include "daemon/text_table.hpp"
#include "discovery/client.hpp"

namespace kstate::daemon {
namespace {

void print_resources(const std::vector<ApiResource>& rows, std::ostream& out) {
  std::vector<std::vector<std::string>> cells{{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}};
  for (const auto& row : rows) {
    cells.push_back({row.plural, strings::join(row.short_names, ","), row.api_version(),
                     row.namespaced ? "true" : "false", row.kind});
  }
  print_table(cells, out);
}

std::string cache_summary(const discovery::DiscoveryStats& stats) {
  if (stats.revalidated) {
    return "cache revalidated (not modified)";
  }
  if (stats.from_cache) {
    return "cache hit";
  }
  return stats.cache_file.empty() ? "no cache" : "cache miss";
}

void print_json(const std::vector<ApiResource>& rows, const discovery::DiscoveryStats& stats, std::ostream& out) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  auto strings = [&](const char* key, const std::vector<std::string>& values) {
    writer.Key(key);
    writer.StartArray();
    for (const auto& value : values) {
      writer.String(value);
    }
    writer.EndArray();
  };
  writer.StartObject();
  writer.Key("resources");
  writer.StartArray();
  for (const auto& row : rows) {
    writer.StartObject();
    writer.Key("name");
    writer.String(row.plural);
    strings("shortNames", row.short_names);
    writer.Key("apiVersion");
    writer.String(row.api_version());
    writer.Key("namespaced");
    writer.Bool(row.namespaced);
    writer.Key("kind");
    writer.String(row.kind);
    strings("verbs", row.verbs);
    strings("subresources", row.subresources);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("requests");
  writer.Uint64(stats.requests);
  writer.Key("cache");
  writer.String(cache_summary(stats));
  writer.Key("format");
  writer.String(stats.format);
  writer.Key("failures");
  writer.StartArray();
  for (const auto& failure : stats.failures) {
    writer.StartObject();
    writer.Key("groupVersion");
    writer.String(failure.group_version);
    writer.Key("error");
    writer.String(failure.error.describe());
    writer.EndObject();
  }
  writer.EndArray();
  writer.EndObject();
  out << buffer.GetString() << "\n";
}

}  // namespace

std::vector<ApiResource> api_resources_rows(const std::vector<ApiResource>& resources) {
  std::vector<ApiResource> rows;
  for (const auto& resource : resources) {
    if (resource.preferred_version) {
      rows.push_back(resource);
    }
  }
  std::sort(rows.begin(), rows.end(), [](const ApiResource& a, const ApiResource& b) {
    return std::tie(a.group, a.plural) < std::tie(b.group, b.plural);
  });
  return rows;
}

int run_discover_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err) {
  const auto& common = invocation.common;
  if (auto logging = setup_logging(common.log_level, LogFormat::text); !logging.ok()) {
    err << "kstate discover: " << logging.error().message << "\n";
    return cli::exit_failed;
  }
  boost::asio::io_context io;
  auto client = make_client(io.get_executor(), kubeconfig_sources(common), transport_options(common));
  if (!client) {
    err << "kstate discover: " << client.error().message << "\n";
    return cli::exit_failed;
  }
  discovery::DiscoveryOptions options;
  options.cache_dir = common.cache_dir;
  options.refresh = invocation.refresh;
  discovery::DiscoveryClient discovery(*(*client)->transport, (*client)->config.server, options);
  auto loaded = run_sync(io, discovery.load());
  if (!loaded) {
    err << "kstate discover: " << loaded.error().describe() << "\n";
    return cli::exit_failed;
  }
  const auto& stats = discovery.stats();
  for (const auto& failure : stats.failures) {
    err << "kstate discover: warning: " << failure.group_version
        << " is unavailable and was skipped: " << failure.error.describe() << "\n";
  }
  auto rows = api_resources_rows(discovery.mapper().resources());
  if (common.output == "json") {
    print_json(rows, stats, out);
  } else {
    print_resources(rows, out);
    out << "discovery: " << stats.requests << (stats.requests == 1 ? " request" : " requests") << ", "
        << cache_summary(stats) << (stats.format.empty() ? "" : " (" + stats.format + ")") << "\n";
  }
  return cli::exit_ok;
}

}  // namespace kstate::daemon
