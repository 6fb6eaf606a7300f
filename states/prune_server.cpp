// Prune against the server as it is now (see prune_server.hpp): the reads the pure
// decision needs, and the deletes it decided.
#include "states/prune_server.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <utility>

#include "core/crd.hpp"
#include "core/log_fields.hpp"
#include "core/strings.hpp"

namespace kstate::states {
namespace {

using Clock = std::chrono::steady_clock;

// Named lvalues for every coroutine argument (GCC 12 mis-destroys temporaries bound
// to coroutine parameters).
asio::awaitable<Result<json::Document>> read_object(DynamicClient& client, const ApiResource& resource,
                                                    const std::string& ns, const std::string& name) {
  std::string scope = resource.namespaced ? ns : std::string();
  std::string object_name = name;
  std::string subresource;
  co_return co_await client.get(resource, scope, object_name, subresource);
}

StateResult prune_result(const InventoryEntry& entry) {
  StateResult result;
  result.id = "prune:" + entry.key().to_string();
  result.name = entry.kind + "/" + (entry.ns.empty() ? "" : entry.ns + "/") + entry.name;
  result.function = manifests::Function::object_absent;
  result.source.file = entry.source;
  return result;
}

bool is_namespace_kind(const std::string& group, const std::string& kind) {
  return group.empty() && kind == "Namespace";
}

// Objects the cluster itself keeps in every namespace or derives from others: they
// never make a Namespace "hold something kstate does not manage".
bool created_by_the_cluster(const ApiResource& resource, const json::Value& item,
                            const std::set<std::string>& uids_in_namespace,
                            const std::set<std::string>& services_in_namespace) {
  const std::string name = std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""));
  const std::string& kind = resource.kind;
  if (kind == "Event") {
    return true;  // records, not state: they expire on their own
  }
  if (resource.group.empty() &&
      ((kind == "ServiceAccount" && name == "default") || (kind == "ConfigMap" && name == "kube-root-ca.crt") ||
       (kind == "Endpoints" && services_in_namespace.count(name) > 0))) {
    return true;
  }
  if (resource.group.empty() && kind == "Secret" &&
      json::string_or(json::find_path(item, {"metadata", "annotations", "kubernetes.io/service-account.name"}), "") ==
          "default") {
    return true;
  }
  // Owned by another object of the namespace (ReplicaSets, Pods, EndpointSlices...):
  // garbage-collected with it, and the owner itself is judged.
  if (const json::Value* owners = json::find_path(item, {"metadata", "ownerReferences"});
      owners != nullptr && owners->IsArray() && !owners->Empty()) {
    for (const auto& owner : owners->GetArray()) {
      if (uids_in_namespace.count(std::string(json::string_or(json::find(owner, "uid"), ""))) == 0) {
        return false;
      }
    }
    return true;
  }
  return false;
}

std::string describe_item(const ApiResource& resource, const json::Value& item) {
  std::string ns = std::string(json::string_or(json::find_path(item, {"metadata", "namespace"}), ""));
  std::string name = std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""));
  return resource.kind + "/" + (ns.empty() ? "" : ns + "/") + name;
}

std::string describe_entry(const InventoryEntry& entry) {
  return entry.kind + "/" + (entry.ns.empty() ? "" : entry.ns + "/") + entry.name;
}

}  // namespace

// Live state of the inventory entries prune may consider (the undeclared ones).
asio::awaitable<std::map<ObjectKey, LiveObject>> read_prune_candidates(DynamicClient& client, KindResolver& resolver,
                                                                       const Inventory& inventory,
                                                                       const std::set<ObjectKey>& declared) {
  std::map<ObjectKey, LiveObject> live;
  for (const auto& entry : inventory.entries) {
    if (declared.count(entry.key()) > 0) {
      continue;
    }
    GroupVersionKind gvk{entry.group, entry.version, entry.kind};
    auto resource = co_await resolver.resolve(gvk);
    if (!resource.ok()) {
      // Kind gone from discovery (CRD removed): its objects are gone too; anything
      // else is unknown, and unknown is never deleted.
      if (resource.error().kind == ErrorKind::not_found) {
        live[entry.key()].state = LiveState::not_found;
      }
      continue;
    }
    auto got = co_await read_object(client, *resource, entry.ns, entry.name);
    if (got.ok()) {
      live[entry.key()] = live_object_from_json(*got);
    } else if (got.error().object_missing()) {
      live[entry.key()].state = LiveState::not_found;
    }
  }
  co_return live;
}

// For every Namespace and CRD prune may delete: whether the server, as it is now, says
// it holds an object kstate does not manage (not in the inventory with the same UID),
// which deleting it would delete too. A CRD's custom resources are listed through the
// versions the live CRD itself serves (its plural and scope from its spec), whatever
// discovery says; a Namespace's contents over every namespaced kind the server offers
// once discovery has been revalidated (a kind cached discovery does not know must not
// count as empty). Whatever cannot be listed (a 403, a group answering 503, a group
// discovery lacks, a served version answering 404) keeps the container: unknown is
// never deleted.
asio::awaitable<std::map<ObjectKey, ContainerHold>> containers_held(DynamicClient& client, KindResolver& resolver,
                                                                    const Inventory& inventory,
                                                                    const std::map<ObjectKey, LiveObject>& live,
                                                                    const std::set<ObjectKey>& declared) {
  std::map<ObjectKey, ContainerHold> held;
  std::vector<const InventoryEntry*> namespaces;
  std::vector<const InventoryEntry*> crds;
  for (const auto& entry : inventory.entries) {
    auto found = live.find(entry.key());
    if (declared.count(entry.key()) != 0 || found == live.end() || found->second.state != LiveState::found ||
        found->second.uid != entry.uid || is_inherited(entry)) {
      continue;
    }
    if (is_namespace_kind(entry.group, entry.kind)) {
      namespaces.push_back(&entry);
    } else if (is_crd(entry.group, entry.kind)) {
      crds.push_back(&entry);
    }
  }
  const auto not_listed = [](std::string detail) { return ContainerHold{ContainerHold::Why::not_listed, detail}; };
  const auto unmanaged = [](std::string detail) { return ContainerHold{ContainerHold::Why::unmanaged_object, detail}; };
  // Is this listed object kstate's (recorded with the same UID)?
  const auto managed = [&](const std::string& group, const std::string& kind, const json::Value& item,
                           const std::string& ns) {
    ObjectKey key{group, kind, ns, std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""))};
    const InventoryEntry* recorded = inventory.find(key);
    return recorded != nullptr && recorded->uid == json::string_or(json::find_path(item, {"metadata", "uid"}), "");
  };

  for (const InventoryEntry* crd_entry : crds) {
    const LiveObject& crd = live.at(crd_entry->key());
    if (crd.defines_kind.empty() || crd.defines_plural.empty() || crd.defines_group.empty()) {
      held[crd_entry->key()] = not_listed("its kind could not be read from the CustomResourceDefinition");
      continue;
    }
    if (crd.served_versions.empty()) {
      // Custom resources stay stored while no version is served: none can be listed.
      held[crd_entry->key()] = not_listed("it serves no version, so its " + crd.defines_plural + " cannot be listed");
      continue;
    }
    for (const std::string& version : crd.served_versions) {
      ApiResource served;
      served.group = crd.defines_group;
      served.version = version;
      served.kind = crd.defines_kind;
      served.plural = crd.defines_plural;
      served.namespaced = crd.defines_namespaced;
      std::string all_namespaces;
      ListOptions everything;
      auto items = co_await client.list(served, all_namespaces, everything);
      if (!items.ok()) {
        // (A 404 too: the CRD exists and says it serves this version.)
        held[crd_entry->key()] = not_listed("its " + served.plural + " (" + served.group + "/" + version +
                                            ") could not be listed: " + items.error().describe());
        break;
      }
      std::optional<ContainerHold> found;
      if (const json::Value* list = json::find(*items, "items"); list != nullptr && list->IsArray()) {
        for (const auto& item : list->GetArray()) {
          std::string ns = std::string(json::string_or(json::find_path(item, {"metadata", "namespace"}), ""));
          if (!managed(served.group, served.kind, item, ns)) {
            found = unmanaged(describe_item(served, item));
            break;
          }
        }
      }
      if (found) {
        held[crd_entry->key()] = std::move(*found);
        break;
      }
    }
  }

  if (namespaces.empty()) {
    co_return held;
  }
  std::optional<std::string> unknowable;
  if (auto revalidated = co_await resolver.revalidate(); !revalidated.ok()) {
    unknowable = "API discovery could not be revalidated (" + revalidated.error().describe() +
                 "), so the kinds it may hold are not known";
  } else if (auto unavailable = resolver.unavailable_group_versions(); !unavailable.empty()) {
    unknowable =
        "API discovery lacks " + strings::join(unavailable, "; ") + ", so the kinds it may hold are not all known";
  }
  auto resources = co_await resolver.resources();
  if (!unknowable && !resources.ok()) {
    unknowable = "the kinds it may hold could not be listed (" + resources.error().describe() + ")";
  }
  if (unknowable) {
    for (const InventoryEntry* container : namespaces) {
      held[container->key()] = not_listed(*unknowable);
    }
    co_return held;
  }
  for (const InventoryEntry* container : namespaces) {
    std::optional<ContainerHold> found;
    std::vector<std::pair<const ApiResource*, json::Document>> listed;
    for (const ApiResource& resource : *resources) {
      // What the namespace controller deletes with the namespace: kinds that can be
      // listed and deleted (views such as metrics.k8s.io hold no stored objects).
      if (!resource.namespaced || !resource.supports("list") || !resource.supports("delete")) {
        continue;
      }
      std::string ns = container->name;
      ListOptions everything;
      auto items = co_await client.list(resource, ns, everything);
      if (!items.ok()) {
        found = not_listed("its " + resource.plural + (resource.group.empty() ? "" : "." + resource.group) +
                           " could not be listed: " + items.error().describe());
        break;
      }
      listed.emplace_back(&resource, std::move(items).value());
    }
    if (!found) {
      std::set<std::string> uids;
      std::set<std::string> services;
      for (const auto& [resource, list] : listed) {
        if (const json::Value* items = json::find(list, "items"); items != nullptr && items->IsArray()) {
          for (const auto& item : items->GetArray()) {
            uids.insert(std::string(json::string_or(json::find_path(item, {"metadata", "uid"}), "")));
            if (resource->group.empty() && resource->kind == "Service") {
              services.insert(std::string(json::string_or(json::find_path(item, {"metadata", "name"}), "")));
            }
          }
        }
      }
      for (const auto& [resource, list] : listed) {
        if (found) {
          break;
        }
        if (const json::Value* items = json::find(list, "items"); items != nullptr && items->IsArray()) {
          for (const auto& item : items->GetArray()) {
            if (!managed(resource->group, resource->kind, item, container->name) &&
                !created_by_the_cluster(*resource, item, uids, services)) {
              found = unmanaged(describe_item(*resource, item));
              break;
            }
          }
        }
      }
    }
    if (found) {
      held[container->key()] = std::move(*found);
    }
  }
  co_return held;
}

// Step "prune", what it keeps: each entry kept for a cause is told in the report's
// notes; those kept for a cause of their own (still has members, prune disabled, ...)
// are also reported so that the daemon does not ask for another cycle for them.
void report_kept(const PruneDecision& decision, RunReport& report) {
  for (const KeptEntry& kept : decision.kept) {
    switch (kept.reason) {
      case KeepReason::still_has_members:
      case KeepReason::holds_unmanaged:
      case KeepReason::contents_unknown:
      case KeepReason::inherited:
      case KeepReason::prune_disabled:
        // (They stay in the inventory; those with another UID or without kstate's
        // labels are forgotten.)
        report.kept_for_cause.insert(kept.entry.key());
        [[fallthrough]];
      case KeepReason::source_held:  // (pruned once its file settles: asked for again)
      case KeepReason::labels_removed:
      case KeepReason::uid_mismatch:
      case KeepReason::not_checked:
        report.notes.push_back(describe_entry(kept.entry) + " not pruned: " + to_string(kept.reason) +
                               (kept.detail.empty() ? "" : " (" + kept.detail + ")"));
        break;
      default:
        break;
    }
  }
}

// Step "prune", the deletes, in the decision's order: each with the recorded UID as
// precondition (never a re-created object), Background propagation, a dry run in test
// mode. What is gone joins `removed` (real mode); a failed delete stays recorded and is
// retried next cycle.
asio::awaitable<void> delete_pruned(DynamicClient& client, KindResolver& resolver,
                                    const std::vector<PlannedDelete>& deletes, bool test_mode, RunReport& report,
                                    std::vector<ObjectKey>& removed) {
  for (const auto& planned : deletes) {
    auto prune_started = Clock::now();
    StateResult result = prune_result(planned.entry);
    GroupVersionKind gvk{planned.entry.group, planned.entry.version, planned.entry.kind};
    auto resource = co_await resolver.resolve(gvk);
    if (!resource.ok()) {
      result.result = false;
      result.comment = "prune: " + resource.error().describe();
    } else {
      DeleteOptions remove;
      remove.dry_run = test_mode;
      remove.propagation_policy = "Background";
      remove.precondition_uid = planned.entry.uid;  // never delete a re-created object
      std::string ns = resource->namespaced ? planned.entry.ns : std::string();
      std::string name = planned.entry.name;
      // (the server's warnings on it, e.g. a deprecated version, go into its result)
      DynamicClient warned = client.collecting_warnings(result.warnings);
      auto deleted = co_await warned.remove(*resource, ns, name, remove);
      if (deleted.ok() || deleted.error().object_missing()) {
        result.result = test_mode ? std::optional<bool>() : std::optional<bool>(true);
        result.comment =
            test_mode ? "would be pruned (no longer in any manifest)" : "pruned (no longer in any manifest)";
        json::set_string(result.changes, "deleted", result.name, result.changes.GetAllocator());
        result.change = Change::pruned;
        if (!test_mode) {
          removed.push_back(planned.entry.key());
          LogFields fields;
          fields.kind = planned.entry.kind;
          fields.namespace_name = planned.entry.ns;
          fields.name = planned.entry.name;
          fields.action = "pruned";
          fields.file = planned.entry.source;
          fields.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - prune_started).count();
          log_with(fields, spdlog::level::info, "pruned {} (was declared in {})", result.name, planned.entry.source);
        }
      } else {
        // Stays in the inventory and is retried next cycle.
        result.result = false;
        result.comment = "prune failed: " + deleted.error().describe();
      }
    }
    result.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - prune_started).count();
    report.results.push_back(std::move(result));
  }
}

}  // namespace kstate::states
