// `kstate discover [--refresh] [-o text|json]`: the resources the API server offers,
// printed like `kubectl api-resources` (NAME, SHORTNAMES, APIVERSION, NAMESPACED,
// KIND; preferred versions, core group first then by group and name), followed by a
// line saying how many requests discovery made and whether the cache answered.
#pragma once

#include <ostream>
#include <vector>

#include "core/api_resource.hpp"
#include "daemon/cli.hpp"

namespace kstate::daemon {

int run_discover_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err);

// The rows kubectl api-resources prints: preferred versions only, sorted (pure, for tests).
std::vector<ApiResource> api_resources_rows(const std::vector<ApiResource>& resources);

}  // namespace kstate::daemon
