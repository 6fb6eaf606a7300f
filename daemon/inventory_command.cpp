// The `kstate inventory` subcommand (see inventory_command.hpp).
#include "daemon/inventory_command.hpp"

#include "core/dynamic_client.hpp"
#include "daemon/client_options.hpp"
#include "daemon/inventory_report.hpp"
#include "daemon/logging.hpp"
#include "inventory/outcome.hpp"
#include "inventory/summary.hpp"

namespace kstate::daemon {
namespace {

// Nodes and pods are core v1 in every Kubernetes release: no discovery request needed
// (and none allowed to fail for an identity that may only list these two).
ApiResource core_resource(const char* kind, const char* plural, bool namespaced) {
  ApiResource resource;
  resource.version = "v1";
  resource.kind = kind;
  resource.plural = plural;
  resource.namespaced = namespaced;
  resource.verbs = {"list"};
  return resource;
}

inventory::Listing listing_of(const Status& status) {
  if (status.ok()) {
    return inventory::Listing::listed;
  }
  return status.error().kind == ErrorKind::forbidden ? inventory::Listing::forbidden : inventory::Listing::failed;
}

inventory::Problem problem_of(const Error& error, const std::string& resource, const std::string& namespace_name) {
  return {resource, "list", namespace_name, error.http_status, error.reason, error.message};
}

}  // namespace

int run_inventory_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err) {
  const auto& common = invocation.common;
  const auto& options = invocation.inventory;
  if (auto logging = setup_logging(common.log_level, LogFormat::text); !logging.ok()) {
    err << "kstate inventory: " << logging.error().message << "\n";
    return cli::exit_failed;
  }
  inventory::Filter filter;
  for (const auto& text : options.digests) {
    auto query = inventory::parse_digest_query(text);
    if (!query) {
      err << "kstate inventory: " << query.error().message << "\n";
      return cli::exit_failed;
    }
    filter.digests.push_back(std::move(query.value()));
  }
  if (!options.image.empty()) {
    filter.repository = inventory::normalize_repository(options.image);
  }

  boost::asio::io_context io;
  auto client = make_client(io.get_executor(), kubeconfig_sources(common), transport_options(common));
  if (!client) {
    err << "kstate inventory: " << client.error().message << "\n";
    return cli::exit_failed;
  }
  inventory::Scope scope;
  scope.all_namespaces = options.all_namespaces;
  if (!scope.all_namespaces) {
    scope.namespace_name =
        options.namespace_name.empty() ? (*client)->config.default_namespace : options.namespace_name;
    if (auto valid = validate_namespace(scope.namespace_name); !valid) {
      err << "kstate inventory: --namespace: " << valid.error().message << "\n";
      return cli::exit_failed;
    }
  }
  inventory::Inventory result(scope, std::move(filter));
  ListOptions list_options;
  list_options.limit = options.chunk_size;
  DynamicClient& dynamic = *(*client)->dynamic;
  const ApiResource nodes = core_resource("Node", "nodes", false);
  const ApiResource pods = core_resource("Pod", "pods", true);
  auto nodes_listed = run_sync(
      io, dynamic.list_pages(nodes, "", list_options, [&](json::Document& page) { return result.add_nodes(page); }));
  auto pods_listed = run_sync(io, dynamic.list_pages(pods, scope.namespace_name, list_options,
                                                     [&](json::Document& page) { return result.add_pods(page); }));

  if (!nodes_listed) {
    result.add_problem(problem_of(nodes_listed.error(), "nodes", ""));
    if (nodes_listed.error().kind == ErrorKind::forbidden) {
      err << "kstate inventory: warning: cannot list nodes (the images are listed without node details): ";
    } else {
      err << "kstate inventory: cannot list nodes: ";
    }
    err << nodes_listed.error().describe() << "\n";
  }
  if (!pods_listed) {
    result.add_problem(problem_of(pods_listed.error(), "pods", scope.namespace_name));
    err << "kstate inventory: cannot list pods: " << pods_listed.error().describe();
    if (scope.all_namespaces && pods_listed.error().kind == ErrorKind::forbidden) {
      err << " (-n NAMESPACE lists the pods of one namespace)";
    }
    err << "\n";
  }
  result.finish();

  auto outcome = inventory::decide_outcome({listing_of(nodes_listed), listing_of(pods_listed),
                                            !result.digest_answers().empty(), result.every_digest_found()});
  if (outcome == inventory::Outcome::digest_not_found && !scope.all_namespaces) {
    err << "kstate inventory: only namespace " << scope.namespace_name << " was searched; -A searches all\n";
  }
  InventoryRun run;
  run.requests = (*client)->transport->stats().total_requests();
  if (common.output == "json") {
    write_inventory_json(result, run, out);
  } else {
    print_inventory_text(result, run, out);
  }
  return inventory::exit_code(outcome);
}

}  // namespace kstate::daemon
