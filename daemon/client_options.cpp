// The client settings of one-shot subcommands (see client_options.hpp).
#include "daemon/client_options.hpp"

#include <cstdlib>

namespace kstate::daemon {

KubeconfigSources kubeconfig_sources(const cli::CommonOptions& common) {
  KubeconfigSources sources;
  sources.kubeconfig_flag = common.kubeconfig;
  sources.context = common.context;
  sources.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str()); value != nullptr) {
      return std::string(value);
    }
    return std::nullopt;
  };
  return sources;
}

TransportOptions transport_options(const cli::CommonOptions& common) {
  TransportOptions options;
  options.qps = common.qps;
  options.burst = common.burst;
  options.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(common.connect_timeout);
  options.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(common.request_timeout);
  return options;
}

}  // namespace kstate::daemon
