// Which kinds `kstate apply` lists before its manifests are loaded: those the inventory
// records in at least two namespaces, per API version, as the engine would read them
// across namespaces (states/read_ahead.hpp).
#include "states/read_ahead.hpp"

#include <catch2/catch.hpp>

namespace read_ahead_test {

namespace states = kstate::states;

namespace {

states::InventoryEntry entry(std::string group, std::string version, std::string kind, std::string ns,
                             std::string name) {
  states::InventoryEntry made;
  made.group = std::move(group);
  made.version = std::move(version);
  made.kind = std::move(kind);
  made.ns = std::move(ns);
  made.name = std::move(name);
  made.uid = "uid-" + made.name;
  return made;
}

std::vector<std::string> names(const std::vector<kstate::GroupVersionKind>& kinds) {
  std::vector<std::string> out;
  for (const auto& gvk : kinds) {
    out.push_back(gvk.api_version() + " " + gvk.kind);
  }
  return out;
}

}  // namespace

TEST_CASE("kinds recorded in several namespaces are listed ahead, one per API version") {
  states::Inventory inventory;
  inventory.entries = {
      entry("", "v1", "ConfigMap", "team-a", "one"),
      entry("", "v1", "ConfigMap", "team-a", "two"),
      entry("", "v1", "ConfigMap", "team-b", "one"),
      entry("", "v1", "Secret", "team-a", "token"),  // one namespace: read as a pair
      entry("rbac.authorization.k8s.io", "v1", "ClusterRole", "", "reader"),
      entry("rbac.authorization.k8s.io", "v1", "ClusterRole", "", "writer"),  // cluster-scoped
      entry("apps", "v1", "Deployment", "team-a", "web"),
      entry("apps", "v1", "Deployment", "team-b", "web"),
      entry("apps", "v1beta1", "Deployment", "team-c", "old"),  // another version, one namespace
  };
  // Pending entries may not exist yet: they never make a kind worth listing.
  inventory.pending = {entry("", "v1", "Secret", "team-b", "token"), entry("", "v1", "Service", "team-a", "web"),
                       entry("", "v1", "Service", "team-b", "web")};
  CHECK(names(states::ReadAhead::kinds_to_list(inventory)) ==
        std::vector<std::string>{"v1 ConfigMap", "apps/v1 Deployment"});
  CHECK(states::ReadAhead::kinds_to_list(states::Inventory{}).empty());
}

}  // namespace read_ahead_test
