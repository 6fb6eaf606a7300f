// `kstate inventory [--kubeconfig F] [--context C] [-o text|json] [-n NS | -A]
//                  [--digest sha256:<hex>|REPO@sha256:<hex> ...] [--image REPO] [--chunk-size N]`:
// the cluster's nodes (roles, Ready, platform, runtime, kubelet, CPU and memory) and,
// for each distinct image digest, where it runs (namespace/pod/container, node, phase,
// since when), read with two paged LISTs (nodes, pods) whose pages are folded into a
// summary and dropped. Only `list` on nodes and pods is needed; a 403 on nodes still
// lists the images and says what was not allowed. Exit codes: inventory/outcome.hpp.
// Output: daemon/inventory_report.hpp; the JSON schema is in docs/inventory.md.
#pragma once

#include <ostream>

#include "daemon/cli.hpp"

namespace kstate::daemon {

int run_inventory_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err);

}  // namespace kstate::daemon
