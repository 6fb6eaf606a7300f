// Builds the run order of a directory's states (see ordering.hpp): edges from kind
// tiers (through one virtual barrier node per non-empty tier, so the edge count stays
// linear), Namespaces, CRDs and explicit references, then a Kahn topological sort that
// also finds cycles and names their members.
#include "states/ordering.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/crd.hpp"

namespace kstate::states {

namespace {

constexpr std::size_t no_node = std::numeric_limits<std::size_t>::max();

// Position in the run: creates/updates by tier, then deletes by reverse tier.
int position_of(const PlanItem& item) {
  const int tier = static_cast<int>(tier_of(item.group, item.kind));
  if (item.function == manifests::Function::object_absent) {
    return tier_count + (tier_count - 1 - tier);
  }
  return tier;
}

std::string object_key(std::string_view kind, std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(kind.size() + ns.size() + name.size() + 2);
  key.append(kind).append("/").append(ns).append("/").append(name);
  return key;
}

std::string group_kind_key(std::string_view group, std::string_view kind) {
  std::string key(kind);
  key.append(".").append(group);
  return key;
}

void sort_unique(std::vector<std::size_t>& nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
}

// Indexes the items by every name a reference may use.
class ReferenceIndex {
 public:
  explicit ReferenceIndex(const std::vector<PlanItem>& items) : items_(items) {
    by_id_.reserve(items.size());
    by_object_.reserve(items.size());
    by_kind_name_.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const PlanItem& item = items[i];
      by_id_[item.id].push_back(i);
      if (!item.parent_id.empty()) {
        by_parent_[item.parent_id].push_back(i);
      }
      if (!item.sls_file.empty()) {
        by_parent_[std::string(manifests::sls_prefix) + item.sls_file].push_back(i);
      }
      by_object_[object_key(item.kind, item.ns, item.name)].push_back(i);
      by_kind_name_[item.kind + "/" + item.name].push_back(i);
    }
  }

  // The items a reference names; an error when none (or, for Kind/name, several
  // namespaced objects) match.
  Result<std::vector<std::size_t>> resolve(const PlanItem& from, const std::string& reference) const {
    std::vector<std::size_t> found;
    if (auto it = by_id_.find(reference); it != by_id_.end()) {
      found = it->second;
    }
    if (auto it = by_parent_.find(reference); it != by_parent_.end()) {
      found.insert(found.end(), it->second.begin(), it->second.end());
    }
    if (found.empty() && reference.find('/') != std::string::npos) {
      found = resolve_object(reference);
      if (found.size() > 1 && std::count(reference.begin(), reference.end(), '/') == 1) {
        bool all_cluster_scoped =
            std::all_of(found.begin(), found.end(), [&](std::size_t i) { return items_[i].ns.empty(); });
        if (!all_cluster_scoped) {
          return Error(ErrorKind::invalid_input, "state '" + from.id + "' requires '" + reference +
                                                     "', which matches objects in several namespaces; "
                                                     "write Kind/namespace/name");
        }
      }
    }
    if (found.empty()) {
      return Error(ErrorKind::invalid_input, "state '" + from.id + "' requires '" + reference +
                                                 "', which no state declares (expected a state ID, "
                                                 "Kind/namespace/name or Kind/name)");
    }
    sort_unique(found);
    return found;
  }

 private:
  std::vector<std::size_t> resolve_object(const std::string& reference) const {
    std::vector<std::string_view> parts;
    std::string_view rest = reference;
    while (true) {
      std::size_t slash = rest.find('/');
      parts.push_back(rest.substr(0, slash));
      if (slash == std::string_view::npos)
        break;
      rest.remove_prefix(slash + 1);
    }
    if (parts.size() != 2 && parts.size() != 3) {
      return {};
    }
    std::string_view kind = parts[0];
    std::string_view group;
    bool group_given = false;
    if (std::size_t dot = kind.find('.'); dot != std::string_view::npos) {
      group = kind.substr(dot + 1);
      kind = kind.substr(0, dot);
      group_given = true;
    }
    const std::vector<std::size_t>* candidates = nullptr;
    if (parts.size() == 3) {
      auto it = by_object_.find(object_key(kind, parts[1], parts[2]));
      candidates = it == by_object_.end() ? nullptr : &it->second;
    } else {
      auto it = by_kind_name_.find(std::string(kind) + "/" + std::string(parts[1]));
      candidates = it == by_kind_name_.end() ? nullptr : &it->second;
    }
    std::vector<std::size_t> found;
    if (candidates != nullptr) {
      for (std::size_t i : *candidates) {
        if (!group_given || items_[i].group == group) {
          found.push_back(i);
        }
      }
    }
    // Kind/name prefers a cluster-scoped object when one matches.
    if (parts.size() == 2 && found.size() > 1) {
      std::vector<std::size_t> cluster_scoped;
      std::copy_if(found.begin(), found.end(), std::back_inserter(cluster_scoped),
                   [&](std::size_t i) { return items_[i].ns.empty(); });
      if (!cluster_scoped.empty()) {
        return cluster_scoped;
      }
    }
    return found;
  }

  const std::vector<PlanItem>& items_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_id_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_parent_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_object_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_kind_name_;
};

std::string describe_node(const Plan& plan, const std::vector<PlanItem>& items,
                          const std::vector<std::string>& barrier_labels, std::size_t node) {
  if (node < plan.item_count) {
    return items[node].id;
  }
  return "(" + barrier_labels[node - plan.item_count] + ")";
}

// Finds and describes a cycle among the nodes the topological sort could not reach.
// Every such node still waits for at least one other such node, so walking "waits for"
// edges from any of them must revisit a node; the revisited stretch is the cycle.
Error describe_cycle(const Plan& plan, const std::vector<PlanItem>& items,
                     const std::vector<std::string>& barrier_labels, const std::vector<bool>& done) {
  std::size_t start = 0;
  while (done[start])
    ++start;
  std::vector<std::size_t> walk;
  std::unordered_map<std::size_t, std::size_t> seen_at;
  std::size_t current = start;
  while (seen_at.find(current) == seen_at.end()) {
    seen_at[current] = walk.size();
    walk.push_back(current);
    const PlanNode& node = plan.nodes[current];
    std::size_t next = no_node;
    for (const auto* edges : {&node.requires_nodes, &node.after_nodes}) {
      for (std::size_t candidate : *edges) {
        if (!done[candidate]) {
          next = candidate;
          break;
        }
      }
      if (next != no_node)
        break;
    }
    current = next;
  }
  std::vector<std::size_t> cycle(walk.begin() + static_cast<std::ptrdiff_t>(seen_at[current]), walk.end());
  // Start the message at a real state, not at a barrier.
  auto first_item = std::find_if(cycle.begin(), cycle.end(), [&](std::size_t n) { return n < plan.item_count; });
  std::rotate(cycle.begin(), first_item, cycle.end());
  cycle.push_back(cycle.front());
  std::string text;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const bool is_barrier = cycle[i] >= plan.item_count;
    // A run of barriers is one "tier order" step; show only the last (closest) one.
    if (is_barrier && i + 1 < cycle.size() && cycle[i + 1] >= plan.item_count) {
      continue;
    }
    if (!text.empty())
      text += " -> ";
    text += describe_node(plan, items, barrier_labels, cycle[i]);
  }
  return Error(ErrorKind::invalid_input, "dependency cycle: " + text + " (\"a -> b\": a waits for b)");
}

}  // namespace

Tier tier_of(std::string_view group, std::string_view kind) {
  if (group.empty()) {
    if (kind == "Namespace")
      return Tier::namespaces;
    if (kind == "ServiceAccount")
      return Tier::service_accounts;
  }
  if (is_crd(group, kind))
    return Tier::custom_resource_definitions;
  if (group == "rbac.authorization.k8s.io") {
    if (kind == "ClusterRole" || kind == "Role")
      return Tier::roles;
    if (kind == "ClusterRoleBinding" || kind == "RoleBinding")
      return Tier::role_bindings;
  }
  if (kind.size() > 5 && kind.ends_with("Class"))
    return Tier::classes;
  return Tier::rest;
}

const char* to_string(Tier tier) {
  switch (tier) {
    case Tier::namespaces:
      return "Namespaces";
    case Tier::custom_resource_definitions:
      return "CustomResourceDefinitions";
    case Tier::roles:
      return "Roles";
    case Tier::role_bindings:
      return "RoleBindings";
    case Tier::service_accounts:
      return "ServiceAccounts";
    case Tier::classes:
      return "*Class kinds";
    case Tier::rest:
      return "other kinds";
  }
  return "other kinds";
}

std::vector<std::size_t> Plan::items_waited_for(std::size_t node) const {
  std::vector<bool> seen(nodes.size(), false);
  std::vector<std::size_t> stack{node};
  std::vector<std::size_t> found;
  while (!stack.empty()) {
    std::size_t current = stack.back();
    stack.pop_back();
    for (const auto* edges : {&nodes[current].requires_nodes, &nodes[current].after_nodes}) {
      for (std::size_t next : *edges) {
        if (seen[next])
          continue;
        seen[next] = true;
        if (next < item_count)
          found.push_back(next);
        stack.push_back(next);
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

Result<Plan> plan_order(const std::vector<PlanItem>& items) {
  Plan plan;
  plan.item_count = items.size();
  plan.nodes.resize(items.size());

  // Tier barriers: items at a position wait for the barrier of the previous non-empty
  // position; that barrier waits for the items at its position and the barrier before.
  constexpr int position_count = 2 * tier_count;
  std::array<std::vector<std::size_t>, position_count> at_position;
  for (std::size_t i = 0; i < items.size(); ++i) {
    at_position[static_cast<std::size_t>(position_of(items[i]))].push_back(i);
  }
  std::vector<std::string> barrier_labels;
  int last_non_empty = -1;
  for (int p = 0; p < position_count; ++p) {
    if (!at_position[static_cast<std::size_t>(p)].empty())
      last_non_empty = p;
  }
  std::size_t previous_barrier = no_node;
  for (int p = 0; p < last_non_empty + 1; ++p) {
    const auto& members = at_position[static_cast<std::size_t>(p)];
    if (members.empty())
      continue;
    if (previous_barrier != no_node) {
      for (std::size_t i : members)
        plan.nodes[i].after_nodes.push_back(previous_barrier);
    }
    if (p == last_non_empty)
      break;
    PlanNode barrier;
    barrier.barrier = true;
    barrier.after_nodes = members;
    if (previous_barrier != no_node)
      barrier.after_nodes.push_back(previous_barrier);
    const bool deletes = p >= tier_count;
    const Tier tier = static_cast<Tier>(deletes ? position_count - 1 - p : p);
    barrier_labels.push_back(std::string("tier order: after every ") + (deletes ? "delete of " : "") + to_string(tier));
    previous_barrier = plan.nodes.size();
    plan.nodes.push_back(std::move(barrier));
  }

  // Namespaces and CRDs declared by states, for the implicit edges.
  std::unordered_map<std::string, std::vector<std::size_t>> created_namespaces;
  std::unordered_map<std::string, std::vector<std::size_t>> deleted_namespaces;
  std::unordered_map<std::string, std::vector<std::size_t>> created_crds;
  std::unordered_map<std::string, std::vector<std::size_t>> deleted_crds;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const PlanItem& item = items[i];
    const bool absent = item.function == manifests::Function::object_absent;
    const Tier tier = tier_of(item.group, item.kind);
    if (tier == Tier::namespaces) {
      (absent ? deleted_namespaces : created_namespaces)[item.name].push_back(i);
    } else if (tier == Tier::custom_resource_definitions && !item.defines_kind.empty()) {
      (absent ? deleted_crds : created_crds)[group_kind_key(item.defines_group, item.defines_kind)].push_back(i);
    }
  }

  // Built on the first state with references: most sets have none, and indexing every
  // name of 10,000 states costs more than the rest of the plan.
  std::optional<ReferenceIndex> references;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const PlanItem& item = items[i];
    PlanNode& node = plan.nodes[i];
    const bool absent = item.function == manifests::Function::object_absent;
    const std::string defined_by = group_kind_key(item.group, item.kind);
    if (!absent) {
      if (!item.ns.empty()) {
        if (auto it = created_namespaces.find(item.ns); it != created_namespaces.end()) {
          node.requires_nodes.insert(node.requires_nodes.end(), it->second.begin(), it->second.end());
        }
      }
      if (auto it = created_crds.find(defined_by); it != created_crds.end()) {
        node.requires_nodes.insert(node.requires_nodes.end(), it->second.begin(), it->second.end());
        for (std::size_t crd : it->second)
          plan.nodes[crd].wait_established = true;
      }
    } else {
      // A Namespace (CRD) is deleted after the deletes of what it holds, whatever their result.
      if (!item.ns.empty()) {
        if (auto it = deleted_namespaces.find(item.ns); it != deleted_namespaces.end()) {
          for (std::size_t container : it->second)
            plan.nodes[container].after_nodes.push_back(i);
        }
      }
      if (auto it = deleted_crds.find(defined_by); it != deleted_crds.end()) {
        for (std::size_t container : it->second)
          plan.nodes[container].after_nodes.push_back(i);
      }
    }
    const bool has_references =
        !item.require.empty() || !item.require_in.empty() || !item.onchanges.empty() || !item.watch.empty();
    if (has_references && !references) {
      references.emplace(items);
    }
    // A reference by object (Kind/namespace/name) also matches the referring state
    // when it concerns the same object (object_updated after object_present): that
    // match is not a dependency (requiring its own ID still is a cycle).
    auto add_targets = [&](const std::vector<std::string>& list, auto&& add) -> Status {
      for (const std::string& reference : list) {
        auto targets = references->resolve(item, reference);
        if (!targets) {
          return std::move(targets).error();
        }
        for (std::size_t target : *targets) {
          if (target != i || reference == item.id) {
            add(target);
          }
        }
      }
      return ok_status();
    };
    Status added = ok_status();
    for (auto* list : {&item.require, &item.onchanges, &item.watch}) {
      if (added.ok()) {
        added = add_targets(*list, [&](std::size_t target) { node.requires_nodes.push_back(target); });
      }
    }
    if (added.ok()) {
      added = add_targets(item.onchanges, [&](std::size_t target) { node.onchanges_nodes.push_back(target); });
    }
    if (added.ok()) {
      added = add_targets(item.watch, [&](std::size_t target) { node.watch_nodes.push_back(target); });
    }
    if (added.ok()) {
      added = add_targets(item.require_in, [&](std::size_t target) { plan.nodes[target].requires_nodes.push_back(i); });
    }
    if (!added.ok()) {
      return std::move(added).error();
    }
    sort_unique(node.onchanges_nodes);
    sort_unique(node.watch_nodes);
  }

  // Kahn's algorithm over both edge kinds.
  const std::size_t node_count = plan.nodes.size();
  plan.dependents.assign(node_count, {});
  std::vector<std::size_t> waiting(node_count, 0);
  std::vector<std::size_t> all_edges;
  for (std::size_t n = 0; n < node_count; ++n) {
    PlanNode& node = plan.nodes[n];
    sort_unique(node.requires_nodes);
    sort_unique(node.after_nodes);
    // An edge is listed once: a hard one is not repeated as ordering-only, so that
    // requires_nodes.size() + after_nodes.size() is the number of nodes to wait for.
    std::vector<std::size_t> ordering_only;
    std::set_difference(node.after_nodes.begin(), node.after_nodes.end(), node.requires_nodes.begin(),
                        node.requires_nodes.end(), std::back_inserter(ordering_only));
    node.after_nodes = std::move(ordering_only);
    all_edges.assign(node.requires_nodes.begin(), node.requires_nodes.end());
    all_edges.insert(all_edges.end(), node.after_nodes.begin(), node.after_nodes.end());
    sort_unique(all_edges);
    waiting[n] = all_edges.size();
    for (std::size_t predecessor : all_edges)
      plan.dependents[predecessor].push_back(n);
  }
  plan.topological_order.reserve(node_count);
  for (std::size_t n = 0; n < node_count; ++n) {
    if (waiting[n] == 0)
      plan.topological_order.push_back(n);
  }
  for (std::size_t head = 0; head < plan.topological_order.size(); ++head) {
    for (std::size_t dependent : plan.dependents[plan.topological_order[head]]) {
      if (--waiting[dependent] == 0)
        plan.topological_order.push_back(dependent);
    }
  }
  if (plan.topological_order.size() != node_count) {
    std::vector<bool> done(node_count, false);
    for (std::size_t n : plan.topological_order)
      done[n] = true;
    return describe_cycle(plan, items, barrier_labels, done);
  }
  return plan;
}

PlanItem plan_item_from_state(const manifests::State& state) {
  PlanItem item;
  item.id = state.id;
  item.function = state.function;
  const json::Value& object = state.object;
  const std::string_view api_version = json::string_or(json::find(object, "apiVersion"), "");
  const std::size_t slash = api_version.find('/');
  item.group = slash == std::string_view::npos ? "" : std::string(api_version.substr(0, slash));
  item.kind = std::string(json::string_or(json::find(object, "kind"), ""));
  item.ns = std::string(json::string_or(json::find_path(object, {"metadata", "namespace"}), ""));
  item.name = std::string(json::string_or(json::find_path(object, {"metadata", "name"}), ""));
  item.require = state.require;  // the loader has merged kstate.io/depends-on into it
  item.parent_id = state.parent_id;
  item.require_in = state.require_in;
  item.onchanges = state.onchanges;
  item.watch = state.watch;
  item.sls_file = state.sls_file;
  if (tier_of(item.group, item.kind) == Tier::custom_resource_definitions) {
    item.defines_group = std::string(json::string_or(json::find_path(object, {"spec", "group"}), ""));
    item.defines_kind = std::string(json::string_or(json::find_path(object, {"spec", "names", "kind"}), ""));
  }
  return item;
}

}  // namespace kstate::states
