// The order in which a directory's states run, decided before any request is sent:
// kind tiers (Namespaces, CRDs, Roles, bindings, ServiceAccounts, *Class kinds, then the
// rest), a namespaced object after the state creating its Namespace, a custom resource
// after the state creating its CRD, explicit `require` / `kstate.io/depends-on` edges,
// and deletes (object_absent) after every create/update, in reverse tier order. The
// result is a graph the engine walks: a node may start once every node it waits for is
// done, so states without an edge between them run in parallel. Tier barriers are
// virtual nodes (one per non-empty tier) so that 10,000 states give O(n) edges, not
// O(n^2). Pure logic: no I/O, no clock.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "manifests/state.hpp"

namespace kstate::states {

// What ordering needs to know about one state, extracted from manifests::State by the caller.
struct PlanItem {
  std::string id;
  manifests::Function function = manifests::Function::object_present;
  std::string group;  // "" for the core group
  std::string kind;
  std::string ns;  // "" for cluster-scoped objects
  std::string name;
  // References from `require` and the kstate.io/depends-on annotation: a state ID, a
  // parent ID (every state included by that state), "Kind/namespace/name" or
  // "Kind/name" ("Kind.group/..." is accepted too).
  std::vector<std::string> require;
  // Salt's other requisites, references of the same forms: require_in (the states
  // named require this one), onchanges and watch (hard dependencies too; the engine
  // decides with them whether to run and whether to restart, states/requisites.hpp).
  std::vector<std::string> require_in;
  std::vector<std::string> onchanges;
  std::vector<std::string> watch;
  // For states produced by a `source:` include: the including state's ID.
  std::string parent_id;
  // For states of a state document: its file's real path ("sls:" + it names them all).
  std::string sls_file;
  // For a CustomResourceDefinition: the group and kind it defines (spec.group,
  // spec.names.kind); empty otherwise.
  std::string defines_group;
  std::string defines_kind;
};

// Kind tiers, in creation order. Deletes run in the reverse order.
enum class Tier {
  namespaces = 0,
  custom_resource_definitions,
  roles,          // ClusterRole, Role
  role_bindings,  // ClusterRoleBinding, RoleBinding (after the roles they bind)
  service_accounts,
  classes,  // StorageClass, IngressClass, PriorityClass, RuntimeClass, ... any *Class kind
  rest,
};
constexpr int tier_count = 7;
Tier tier_of(std::string_view group, std::string_view kind);
const char* to_string(Tier tier);  // "Namespaces", "CustomResourceDefinitions", ...

struct PlanNode {
  // Hard dependencies: when one of these failed, this node should not run (Salt's
  // `require` semantics): explicit requires, the Namespace an object lives in, the CRD
  // a custom resource needs.
  std::vector<std::size_t> requires_nodes;
  // Ordering only: run after these are finished, whatever their result (tier barriers,
  // a delete of a Namespace after the deletes of what is inside it). Never repeats a
  // node of requires_nodes: the node waits for size() of both lists, together.
  std::vector<std::size_t> after_nodes;
  // The items of requires_nodes named by onchanges and by watch, sorted.
  std::vector<std::size_t> onchanges_nodes;
  std::vector<std::size_t> watch_nodes;
  // A tier barrier: no state, done as soon as everything it waits for is done.
  bool barrier = false;
  // For a CRD state some later state needs: the engine waits for Established (and
  // refreshes discovery once) before reporting the node done.
  bool wait_established = false;
};

struct Plan {
  std::size_t item_count = 0;
  // nodes[i] for i < item_count is items[i]; the rest are tier barriers.
  std::vector<PlanNode> nodes;
  // Reverse edges (both kinds) so the engine can release waiting nodes as others finish.
  std::vector<std::vector<std::size_t>> dependents;
  // Every node in an order that respects all edges (for sequential runs and reports).
  std::vector<std::size_t> topological_order;

  // The items (indices < item_count) node `node` transitively waits for through
  // barriers plus its direct edges; O(n), meant for tests and diagnostics.
  std::vector<std::size_t> items_waited_for(std::size_t node) const;
};

// The PlanItem of a loaded state: identity from its object, `require` (into which the
// loader has merged kstate.io/depends-on), and for a CRD what it defines.
PlanItem plan_item_from_state(const manifests::State& state);

// Builds the plan. Errors (ErrorKind::invalid_input): a reference no state matches
// (naming the referring state's ID and the reference), an ambiguous "Kind/name"
// reference, or a cycle (listing its members in order, "a -> b -> a").
Result<Plan> plan_order(const std::vector<PlanItem>& items);

}  // namespace kstate::states
