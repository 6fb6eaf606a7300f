// What every subcommand that talks to a server builds its client from: where the
// kubeconfig is (--kubeconfig, --context, KUBECONFIG and HOME from the environment)
// and the transport's rate limit and deadlines (--qps, --burst, --connect-timeout,
// --request-timeout).
#pragma once

#include "core/kubeconfig.hpp"
#include "core/transport.hpp"
#include "daemon/cli.hpp"

namespace kstate::daemon {

KubeconfigSources kubeconfig_sources(const cli::CommonOptions& common);
TransportOptions transport_options(const cli::CommonOptions& common);

}  // namespace kstate::daemon
