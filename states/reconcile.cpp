// One reconcile cycle: engine, then inventory and prune (see reconcile.hpp).
#include "states/reconcile.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <tuple>

#include "core/crd.hpp"
#include "core/log_fields.hpp"
#include "core/signal.hpp"
#include "core/strings.hpp"
#include "states/inventory.hpp"
#include "states/prune.hpp"
#include "states/state_id_label.hpp"

namespace kstate::states {

struct CycleStart::Parent {
  std::optional<ApiResource> secrets;
  json::Document object;  // Null when it does not exist yet
  Error error;
  bool readable = false;
  bool none = false;       // the run has no ApplySet (ReconcileOptions::parent unset)
  LoadedInventory loaded;  // when readable
};

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

using ParentSecret = CycleStart::Parent;

asio::awaitable<ParentSecret> read_parent(DynamicClient& client, KindResolver& resolver, const ApplySetParent& parent) {
  ParentSecret result;
  GroupVersionKind secret_kind{"", "v1", "Secret"};
  auto secrets = co_await resolver.resolve(secret_kind);
  if (!secrets.ok()) {
    result.error = secrets.error();
    co_return result;
  }
  result.secrets = *secrets;
  auto got = co_await read_object(client, *secrets, parent.ns, parent.name);
  if (got.ok()) {
    result.object = std::move(got).value();
    result.readable = true;
  } else if (got.error().object_missing()) {
    result.readable = true;
  } else {
    // Includes "404 page not found" (a path not served, no Status naming the Secret):
    // it says nothing about the parent, and read as "none" the run would record a
    // fresh set and forget what the old record named.
    result.error = got.error();
  }
  co_return result;
}

// Live state of the inventory entries prune may consider (the undeclared ones).
asio::awaitable<std::map<ObjectKey, LiveObject>> read_candidates(DynamicClient& client, KindResolver& resolver,
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

StateResult prune_result(const InventoryEntry& entry) {
  StateResult result;
  result.id = "prune:" + entry.key().to_string();
  result.name = entry.kind + "/" + (entry.ns.empty() ? "" : entry.ns + "/") + entry.name;
  result.function = manifests::Function::object_absent;
  result.source.file = entry.source;
  return result;
}

// Pending entries of generateName states are named "<marker><prefix>" (':' cannot
// occur in an object name); the engine labels the objects such states create.
constexpr std::string_view generate_name_marker = "generateName:";

std::string label_of(const json::Value& object, const std::string& key) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "labels", key}), ""));
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

// The key of the object a state declares, before the engine runs (namespace defaulted
// when discovery knows the kind is namespaced; as written when the kind is not known
// yet). nullopt for states that declare no named object.
// Whether each kind is namespaced (nullopt: the resolver does not know it), resolved
// once per cycle instead of once per state.
using NamespacedKinds = std::map<GroupVersionKind, std::optional<bool>>;

asio::awaitable<std::optional<InventoryEntry>> declared_entry(KindResolver& resolver, const manifests::State& state,
                                                              const std::string& default_namespace,
                                                              NamespacedKinds& kinds) {
  if (state.function != manifests::Function::object_present) {
    co_return std::nullopt;
  }
  InventoryEntry entry;
  GroupVersionKind gvk = make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                                  json::string_or(json::find(state.object, "kind"), ""));
  entry.group = gvk.group;
  entry.version = gvk.version;
  entry.kind = gvk.kind;
  entry.name = std::string(json::string_or(json::find_path(state.object, {"metadata", "name"}), ""));
  entry.ns = std::string(json::string_or(json::find_path(state.object, {"metadata", "namespace"}), ""));
  entry.source = state.source.file;
  if (entry.name.empty()) {
    // A generateName object's name is only known once created: recorded under its
    // prefix, and found again by the prefix and the engine's state-ID label.
    std::string prefix = std::string(json::string_or(json::find_path(state.object, {"metadata", "generateName"}), ""));
    if (!prefix.empty()) {
      entry.name = std::string(generate_name_marker) + prefix;
    }
  }
  if (entry.name.empty() || entry.kind.empty()) {
    co_return std::nullopt;
  }
  auto known = kinds.find(gvk);
  if (known == kinds.end()) {
    auto resource = co_await resolver.resolve(gvk);
    known = kinds.emplace(gvk, resource.ok() ? std::optional<bool>(resource->namespaced) : std::nullopt).first;
  }
  if (known->second) {
    entry.ns = *known->second ? (entry.ns.empty() ? default_namespace : entry.ns) : std::string();
  }
  co_return entry;
}

// Pending entries of earlier cycles that no manifest declares any more: the object is
// looked up (one LIST per kind and namespace, by the ApplySet label) and, when it
// exists with kstate's labels, recorded with its UID so that prune can judge it. When
// it does not, the entry stays pending for pending_grace from the first cycle that
// found it missing (the cycle that wrote it may have died with the request that
// creates it still in flight at the API server), then is dropped; entries written
// before kstate recorded times are dropped at once, as they always were. Lookups that
// fail keep the entry for next time.
asio::awaitable<void> recover_pending(DynamicClient& client, KindResolver& resolver, Inventory& inventory,
                                      const std::set<ObjectKey>& declared, const std::string& id,
                                      const std::string& default_namespace, std::chrono::system_clock::time_point now) {
  // Keeps a not-found entry while its grace period runs; false when it is over.
  const auto keep_missing = [now](InventoryEntry& entry) {
    if (!entry.since) {
      return false;
    }
    if (!entry.missing_since) {
      entry.missing_since = now;
    }
    return now - *entry.missing_since < pending_grace;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<InventoryEntry>> groups;
  std::vector<InventoryEntry> still_pending;
  for (InventoryEntry& entry : inventory.pending) {
    if (inventory.find(entry.key()) != nullptr) {
      continue;  // recorded meanwhile
    }
    if (declared.count(entry.key()) > 0) {
      still_pending.push_back(entry);  // this cycle applies it and records it
      continue;
    }
    groups[{entry.group, entry.version, entry.kind, entry.ns}].push_back(entry);
  }
  std::vector<InventoryEntry> recovered;
  for (auto& [group_key, entries] : groups) {
    GroupVersionKind gvk{entries.front().group, entries.front().version, entries.front().kind};
    auto resource = co_await resolver.resolve(gvk);
    if (!resource.ok()) {
      if (resource.error().kind != ErrorKind::not_found) {
        still_pending.insert(still_pending.end(), entries.begin(), entries.end());
      }
      continue;  // kind gone: so are its objects
    }
    std::string ns =
        resource->namespaced ? (entries.front().ns.empty() ? default_namespace : entries.front().ns) : std::string();
    ListOptions ours;
    ours.label_selector = std::string(applyset_part_of_label) + "=" + id;
    auto listed = co_await client.list(*resource, ns, ours);
    if (!listed.ok()) {
      still_pending.insert(still_pending.end(), entries.begin(), entries.end());
      continue;
    }
    std::map<std::string, const json::Value*> by_name;
    if (const json::Value* items = json::find(*listed, "items"); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        by_name[std::string(json::string_or(json::find_path(item, {"metadata", "name"}), ""))] = &item;
      }
    }
    for (InventoryEntry& entry : entries) {
      if (entry.name.starts_with(generate_name_marker)) {
        // Every object this state may have created: the prefix, kstate's labels, the
        // state-ID label the engine puts on generateName objects, not recorded yet.
        const std::string prefix = entry.name.substr(generate_name_marker.size());
        bool found_any = false;
        for (const auto& [name, item] : by_name) {
          ObjectKey key{entry.group, entry.kind, ns, name};
          if (name.starts_with(prefix) && !label_of(*item, std::string(state_id_label)).empty() &&
              label_of(*item, std::string(managed_by_label)) == managed_by_value && inventory.find(key) == nullptr &&
              declared.count(key) == 0) {
            InventoryEntry created = entry;
            created.ns = ns;
            created.name = name;
            created.uid = std::string(json::string_or(json::find_path(*item, {"metadata", "uid"}), ""));
            if (!created.uid.empty()) {
              spdlog::info("recorded {} in the inventory: an interrupted cycle created it without recording it",
                           key.to_string());
              recovered.push_back(std::move(created));
              found_any = true;
            }
          }
        }
        if (!found_any && keep_missing(entry)) {
          still_pending.push_back(entry);
        }
        continue;
      }
      auto found = by_name.find(entry.name);
      if (found != by_name.end() && label_of(*found->second, std::string(managed_by_label)) == managed_by_value) {
        entry.ns = ns;
        entry.uid = std::string(json::string_or(json::find_path(*found->second, {"metadata", "uid"}), ""));
        if (!entry.uid.empty()) {
          spdlog::info("recorded {} in the inventory: an interrupted cycle applied it without recording it",
                       entry.key().to_string());
          recovered.push_back(entry);
          continue;
        }
      }
      if (keep_missing(entry)) {
        still_pending.push_back(entry);
      }
    }
  }
  inventory = merge_inventory(inventory, recovered, {});
  inventory.pending = std::move(still_pending);
  std::sort(inventory.pending.begin(), inventory.pending.end(),
            [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); });
}

// Writes the parent Secret with this inventory (server-side apply, idempotent).
asio::awaitable<Status> write_parent(DynamicClient& client, const ParentSecret& parent, const ReconcileOptions& options,
                                     const Inventory& inventory) {
  const std::string encoded = encode_inventory(inventory);
  if (encoded.size() > max_secret_data_bytes) {
    // The API server would refuse it ("data: Too long"); say why, and what to do.
    co_return Error(ErrorKind::invalid_input,
                    "the inventory of " + std::to_string(inventory.entries.size() + inventory.pending.size()) +
                        " objects takes " + std::to_string(encoded.size()) + " bytes, more than the " +
                        std::to_string(max_secret_data_bytes) +
                        " a Secret can hold (about 10,000 objects fit): split the manifests over several "
                        "folders, each with its own ApplySet parent (kstate apply --applyset-name, or "
                        "applyset.name in the daemon config)");
  }
  const std::string writer = options.writer ? options.writer->to_string() : std::string();
  json::Document secret = make_parent_secret(*options.parent, options.kstate_version, inventory, encoded, writer);
  WriteOptions write;
  write.field_manager = options.engine.field_manager;
  write.force = true;
  std::string ns = options.parent->ns;
  std::string name = options.parent->name;
  std::string body = json::dump(secret);
  std::string subresource;
  auto written = co_await client.patch(*parent.secrets, ns, name, PatchType::apply, body, write, subresource);
  if (!written.ok()) {
    co_return written.error();
  }
  co_return ok_status();
}

// A write started now and awaited later, on this thread's executor: the cycle sends
// its pending inventory entries, then plans while they travel. finished() returns
// however the write ended (an exception too, as an error).
class InFlightWrite {
 public:
  explicit InFlightWrite(const asio::any_io_executor& executor)
      : executor_(executor), ended_(std::make_shared<Signal>(executor)) {}

  void start(asio::awaitable<Status> write) {
    auto wait_for = [](asio::awaitable<Status> pending,
                       std::shared_ptr<std::optional<Status>> into) -> asio::awaitable<void> {
      *into = co_await std::move(pending);
    };
    asio::co_spawn(executor_, wait_for(std::move(write), result_),
                   [result = result_, ended = ended_](std::exception_ptr failure) {
                     if (failure) {
                       *result = Status(Error(ErrorKind::internal, "internal error while writing the ApplySet parent"));
                     }
                     ended->notify();
                   });
  }

  asio::awaitable<Status> finished() {
    while (!result_->has_value()) {
      co_await ended_->wait();
    }
    co_return std::move(**result_);
  }

 private:
  asio::any_io_executor executor_;
  std::shared_ptr<Signal> ended_;
  std::shared_ptr<std::optional<Status>> result_ = std::make_shared<std::optional<Status>>();
};

std::string describe_entry(const InventoryEntry& entry) {
  return entry.kind + "/" + (entry.ns.empty() ? "" : entry.ns + "/") + entry.name;
}

// Inventory entries of generateName states: their names are only known once the
// engine ran the state, so in a cycle that does not run them (the daemon's one-file
// reconcile) they must still count as declared. Matched by file, kind and prefix.
void declare_generated(const std::vector<manifests::State>& states, const Inventory& inventory,
                       std::set<ObjectKey>& declared) {
  for (const auto& state : states) {
    if (state.function == manifests::Function::object_absent ||
        !json::string_or(json::find_path(state.object, {"metadata", "name"}), "").empty()) {
      continue;
    }
    std::string prefix = std::string(json::string_or(json::find_path(state.object, {"metadata", "generateName"}), ""));
    if (prefix.empty()) {
      continue;
    }
    GroupVersionKind gvk = make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                                    json::string_or(json::find(state.object, "kind"), ""));
    std::string ns = std::string(json::string_or(json::find_path(state.object, {"metadata", "namespace"}), ""));
    for (const auto& entry : inventory.entries) {
      if (entry.group == gvk.group && entry.kind == gvk.kind && entry.source == state.source.file &&
          entry.name.rfind(prefix, 0) == 0 && (ns.empty() || entry.ns == ns)) {
        declared.insert(entry.key());
      }
    }
  }
}

// The writer the parent records (kstate.io/writer), if any.
std::optional<std::string> recorded_writer_of(const ParentSecret& parent) {
  if (parent.object.IsNull()) {
    return std::nullopt;
  }
  const json::Value* annotation =
      json::find_path(parent.object, {"metadata", "annotations", std::string(writer_annotation)});
  if (annotation == nullptr || !annotation->IsString()) {
    return std::nullopt;
  }
  return std::string(annotation->GetString(), annotation->GetStringLength());
}

// Step "writer", when this writer claims the set: what it does not declare was another
// writer's (or is from before kstate recorded writers) and is marked inherited, never
// pruned by it. How many entries were newly marked.
std::size_t inherit_undeclared(Inventory& inventory, const std::set<ObjectKey>& declared) {
  std::size_t inherited = 0;
  for (InventoryEntry& entry : inventory.entries) {
    if (declared.count(entry.key()) == 0 && !is_inherited(entry)) {
      mark_inherited(entry);
      ++inherited;
    }
  }
  return inherited;
}

// Step "record pending": this cycle's intents become pending entries, unless recorded
// meanwhile (recover_pending) or already pending from an earlier cycle. Sorted first,
// so that both lists are walked once: a cold apply of N objects has N intents.
void add_pending(Inventory& inventory, std::vector<InventoryEntry> intents, bool earlier_pending,
                 std::chrono::system_clock::time_point now) {
  const auto by_key = [](const InventoryEntry& a, const InventoryEntry& b) { return a.key_fields() < b.key_fields(); };
  std::stable_sort(intents.begin(), intents.end(), by_key);
  // Declared twice: the first counts.
  const auto same_key = [](const InventoryEntry& a, const InventoryEntry& b) {
    return a.key_fields() == b.key_fields();
  };
  intents.erase(std::unique(intents.begin(), intents.end(), same_key), intents.end());
  std::vector<InventoryEntry>& pending = inventory.pending;
  const std::size_t earlier = pending.size();  // sorted by key, one per key
  std::size_t at = 0;
  for (InventoryEntry& intent : intents) {
    if (earlier_pending && inventory.find(intent.key()) != nullptr) {
      continue;
    }
    while (at < earlier && by_key(pending[at], intent)) {
      ++at;
    }
    if (at < earlier && pending[at].key_fields() == intent.key_fields()) {
      // Applied again by this cycle, which may die with that request in flight
      // too: the grace period starts again when a later cycle finds it missing.
      if (!pending[at].since) {
        pending[at].since = now;
      }
      pending[at].missing_since.reset();
      continue;
    }
    intent.since = now;
    pending.push_back(std::move(intent));
  }
  std::inplace_merge(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(earlier), pending.end(), by_key);
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

// Step "write back": the inventory after this cycle, what it applied recorded and what
// it pruned forgotten. What stays pending: what this cycle meant to apply but did not
// record (a state failed, perhaps after the server created the object); the next cycle
// looks.
Inventory next_inventory(const Inventory& loaded, const std::vector<InventoryEntry>& applied,
                         const std::vector<ObjectKey>& removed, const std::string& default_namespace) {
  Inventory next = merge_inventory(loaded, applied, removed);
  for (const InventoryEntry& entry : loaded.pending) {
    ObjectKey defaulted{entry.group, entry.kind, default_namespace, entry.name};
    if (next.find(entry.key()) == nullptr && (!entry.ns.empty() || next.find(defaulted) == nullptr)) {
      next.pending.push_back(entry);
    }
  }
  return next;
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
      auto deleted = co_await client.remove(*resource, ns, name, remove);
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

}  // namespace

std::map<std::string, std::string> ownership_labels(const ApplySetParent& parent) {
  return {{std::string(managed_by_label), std::string(managed_by_value)},
          {std::string(applyset_part_of_label), applyset_id(parent)}};
}

std::map<std::string, std::string> ownership_labels(const std::optional<ApplySetParent>& parent) {
  return parent ? ownership_labels(*parent) : std::map<std::string, std::string>();
}

asio::awaitable<CycleStart> begin_cycle(DynamicClient& client, KindResolver& resolver,
                                        const ReconcileOptions& options) {
  CycleStart start;
  if (!options.parent) {
    start.parent = std::make_shared<CycleStart::Parent>();
    start.parent->none = true;
    start.parent->readable = true;
    co_return start;
  }
  start.parent = std::make_shared<CycleStart::Parent>(co_await read_parent(client, resolver, *options.parent));
  ParentSecret& parent = *start.parent;
  if (parent.readable) {
    parent.loaded = load_inventory(parent.object.IsNull() ? nullptr : &parent.object);
  }
  // The same condition as reconcile's reads across namespaces (`recorded` below).
  if (options.read_ahead && !options.only_files && parent.readable &&
      parent.loaded.status != InventoryStatus::corrupt) {
    std::vector<GroupVersionKind> kinds = ReadAhead::kinds_to_list(parent.loaded.inventory);
    if (!kinds.empty()) {
      start.read_ahead = ReadAhead::start(client, resolver, kinds, label_selector(options.engine.ownership_labels),
                                          co_await asio::this_coro::executor);
    }
  }
  co_return start;
}

asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options) {
  CycleStart start = co_await begin_cycle(client, resolver, options);
  RunReport report = co_await reconcile(client, resolver, states, options, start);
  if (start.read_ahead) {
    co_await start.read_ahead->finished();
  }
  co_return report;
}

asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options,
                                     CycleStart& start) {
  auto started = Clock::now();
  const bool test_mode = options.engine.test_mode;
  const std::string id = options.parent ? applyset_id(*options.parent) : std::string();
  const std::string parent_name = options.parent ? options.parent->ns + "/" + options.parent->name : std::string();

  if (!start.parent) {
    start = co_await begin_cycle(client, resolver, options);
  }
  ParentSecret& parent = *start.parent;
  LoadedInventory loaded = std::move(parent.loaded);
  const Inventory original = loaded.inventory;
  // What the parent holds, as far as this cycle knows: the original, or the inventory
  // with this cycle's pending entries once they are written (not modified after that).
  const Inventory* on_server = &original;
  const bool tracking = parent.readable && !parent.none && loaded.status != InventoryStatus::corrupt;

  // Before anything is applied, record what this cycle may create or take over
  // (pending entries), so that a cycle that dies half-way never leaves an object that
  // kstate created but did not record, and so could never prune.
  if (!test_mode && !parent.readable) {
    RunReport report;
    report.errors.push_back("inventory: cannot read the ApplySet parent Secret " + parent_name + ": " +
                            parent.error.describe() + " (nothing applied, nothing pruned)");
    report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    co_return report;
  }
  // Who may write the set: another writer's set is left alone (states/writer.hpp).
  WriterVerdict verdict = WriterVerdict::same;
  std::vector<std::string> report_notes_before;
  std::string recorded_writer;
  if (options.writer && parent.readable && !parent.none) {
    std::optional<std::string> recorded = recorded_writer_of(parent);
    recorded_writer = recorded.value_or("");
    verdict = decide_writer(recorded, *options.writer, options.leader_elected);
    if (verdict == WriterVerdict::conflict && !test_mode) {
      RunReport report;
      report.writer_conflict = recorded_writer;
      report.errors.push_back("ApplySet " + parent_name + " is reconciled by " + recorded_writer +
                              ", not by this writer (" + options.writer->to_string() +
                              "): nothing applied, nothing pruned, so that the two never undo each other's work "
                              "(to resolve it, see docs/ownership.md)");
      report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
      co_return report;
    }
    if (verdict == WriterVerdict::conflict) {  // (test mode: shown, nothing would be pruned)
      report_notes_before.push_back("ApplySet " + parent_name + " is reconciled by " + recorded_writer +
                                    ": a real run of this writer would write nothing");
    }
    if (verdict == WriterVerdict::claim && !recorded_writer.empty() && !test_mode) {
      spdlog::warn(
          "ApplySet {}: taking over from {} (leader election): objects this writer does not declare are "
          "kept, never pruned by it",
          parent_name, recorded_writer);
    }
  }
  EngineOptions engine_options = options.engine;
  if (options.only_files) {
    const std::set<std::string>& files = *options.only_files;
    const auto* only_states = options.only_states ? &*options.only_states : nullptr;
    engine_options.selected = [&files, only_states](const manifests::State& state) {
      return files.count(state.source.file) > 0 && (only_states == nullptr || only_states->count(state.id) > 0);
    };
  }
  if (tracking && !options.only_files) {
    // Objects the inventory records are read per kind across namespaces (engine.hpp).
    // Not when only some files' states run: that LIST would return every object of the
    // kind kstate owns, most of them not needed.
    const Inventory& recorded = loaded.inventory;
    engine_options.recorded = [&recorded](const ObjectRef& ref) {
      return recorded.find(ObjectKey{ref.gvk.group, ref.gvk.kind, ref.ns, ref.name}) != nullptr;
    };
    engine_options.read_ahead = start.read_ahead;
  }
  Engine engine(client, resolver, engine_options);
  // Before anything is applied, the pending entries are sent, then the states are
  // planned and their live objects read while that record is on its way: reads may go
  // first, no write goes before the record is on the server (engine.run). The record's
  // round trip hides the planning (1.2 ms for 1,000 states here, more on a slow CPU).
  const auto preparing = Clock::now();
  std::optional<InFlightWrite> record;
  if (!test_mode && tracking) {
    // What the states declare matters to earlier cycles' pending entries only.
    const bool earlier_pending = !loaded.inventory.pending.empty();
    std::set<ObjectKey> declared_now;
    std::vector<InventoryEntry> intents;
    NamespacedKinds kinds;
    for (const auto& state : states) {
      const bool runs = (!options.only_files || options.only_files->count(state.source.file) > 0) &&
                        (!options.only_states || options.only_states->count(state.id) > 0);
      if (!runs && !earlier_pending) {
        continue;  // (a daemon's one-file cycle: the other files' states)
      }
      auto entry = co_await declared_entry(resolver, state, options.engine.default_namespace, kinds);
      if (!entry) {
        continue;
      }
      ObjectKey key = entry->key();
      if (runs && loaded.inventory.find(key) == nullptr) {
        intents.push_back(std::move(*entry));
      }
      if (earlier_pending) {
        declared_now.insert(std::move(key));
      }
    }
    // Whole seconds, as the inventory stores them, so that what this cycle writes
    // compares equal to what it reads back.
    const std::chrono::system_clock::time_point now = std::chrono::floor<std::chrono::seconds>(options.now());
    co_await recover_pending(client, resolver, loaded.inventory, declared_now, id, options.engine.default_namespace,
                             now);
    // Pending from now on, unless recorded meanwhile (recover_pending) or already pending
    // from an earlier cycle. Sorted first, so that both lists are walked once: a cold
    // apply of N objects has N intents.
    add_pending(loaded.inventory, std::move(intents), earlier_pending, now);
    if (!(loaded.inventory == original)) {
      // loaded.inventory is not changed until the record is answered.
      record.emplace(co_await asio::this_coro::executor);
      record->start(write_parent(client, parent, options, loaded.inventory));
      // Lets the write run until it waits for the network (it is queued first), so that
      // the request is on its way before the planning starts.
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
  }
  const auto planning = Clock::now();
  // Not left while the record is in flight: it refers to this frame.
  std::exception_ptr planning_failed;
  try {
    co_await engine.start(states);
  } catch (...) {
    planning_failed = std::current_exception();
  }
  const auto plan_made = Clock::now();
  if (record) {
    Status written = co_await record->finished();
    if (planning_failed) {
      std::rethrow_exception(planning_failed);
    }
    spdlog::debug(
        "timing: {} pending inventory entries prepared in {:.1f} ms, states planned in {:.1f} ms, the entries "
        "recorded before any write {:.1f} ms after they were sent",
        loaded.inventory.pending.size(), std::chrono::duration<double, std::milli>(planning - preparing).count(),
        std::chrono::duration<double, std::milli>(plan_made - planning).count(),
        std::chrono::duration<double, std::milli>(Clock::now() - planning).count());
    if (written.ok()) {
      on_server = &loaded.inventory;
    } else {
      RunReport report;
      report.errors.push_back(
          "inventory: cannot record the objects about to be applied in the ApplySet parent "
          "Secret " +
          parent_name + ": " + written.error().describe() + " (nothing applied, nothing pruned)");
      report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
      co_await engine.abandon();
      co_return report;
    }
  } else if (planning_failed) {
    std::rethrow_exception(planning_failed);
  }

  const auto running = Clock::now();
  RunReport report = co_await engine.run(states);
  report.notes.insert(report.notes.begin(), report_notes_before.begin(), report_notes_before.end());
  spdlog::debug("timing: {} states run in {:.1f} ms", report.results.size(),
                std::chrono::duration<double, std::milli>(Clock::now() - running).count());
  if (report.discovery_stale) {
    // Read once, so that the next cycle (the daemon's retry, the next `kstate apply`,
    // whose disk cache this rewrites) resolves the kinds as the server now serves them.
    if (auto refreshed = co_await resolver.refresh(); !refreshed.ok()) {
      report.notes.push_back("discovery could not be read again: " + refreshed.error().describe());
    }
  }

  if (!parent.readable) {
    report.errors.push_back("inventory: cannot read the ApplySet parent Secret " + parent_name + ": " +
                            parent.error.describe() + " (nothing pruned)");
    co_return report;
  }
  if (loaded.status == InventoryStatus::corrupt) {
    report.notes.push_back("inventory in Secret " + parent_name + " is unreadable (" + loaded.problem +
                           "): prune refused");
  }

  if (verdict == WriterVerdict::claim && tracking) {
    // This writer takes the set: what it does not declare was another writer's (or is
    // from before kstate recorded writers), and it never prunes that.
    std::set<ObjectKey> declared = report.declared;
    declare_generated(states, loaded.inventory, declared);
    const std::size_t inherited = inherit_undeclared(loaded.inventory, declared);
    if (inherited > 0) {
      report.notes.push_back("ApplySet " + parent_name + ": " + std::to_string(inherited) +
                             " recorded object(s) this writer does not declare were recorded by " +
                             (recorded_writer.empty() ? std::string("an earlier writer") : recorded_writer) +
                             ": kept, and never pruned unless this writer declares them");
    }
  }

  std::vector<ObjectKey> removed;
  if (options.prune && options.defer_prune && !parent.none) {
    std::set<ObjectKey> declared = report.declared;
    declare_generated(states, loaded.inventory, declared);
    for (const InventoryEntry& entry : loaded.inventory.entries) {
      const ObjectKey key = entry.key();
      report.prune_deferred +=
          declared.count(key) == 0 && options.kept_before.count(key) == 0 && !is_inherited(entry) ? 1 : 0;
    }
  } else if (options.prune && !parent.none) {
    PruneInput input;
    // Lent to the prune decision (not copied) and taken back right after it.
    input.inventory = std::move(loaded.inventory);
    input.declared = report.declared;
    declare_generated(states, input.inventory, input.declared);
    input.applyset_id = id;
    input.guards.prune_enabled = true;
    input.guards.load_failed = options.load_failed;
    input.guards.state_failed = report.failed() > 0;
    input.guards.discovery_failed = report.discovery_failed;
    input.guards.manifests_empty = options.manifests_empty;
    input.guards.allow_empty_prune = options.allow_empty_prune;
    input.guards.inventory_corrupt = loaded.status == InventoryStatus::corrupt;
    input.guards.other_writer = verdict == WriterVerdict::conflict;
    if (held_guards(input.guards).empty()) {
      if (options.check_sources) {
        std::set<std::string> sources;
        for (const InventoryEntry& entry : input.inventory.entries) {
          if (input.declared.count(entry.key()) == 0 && !is_inherited(entry)) {
            sources.insert(entry.source);
          }
        }
        if (!sources.empty()) {
          input.sources_held = options.check_sources(sources);
        }
      }
      input.live = co_await read_candidates(client, resolver, input.inventory, input.declared);
      input.containers_held = co_await containers_held(client, resolver, input.inventory, input.live, input.declared);
    }
    PruneDecision decision = decide_prune(input);
    loaded.inventory = std::move(input.inventory);
    if (!decision.held_back_by.empty()) {
      report.notes.push_back("prune held back: " + strings::join(decision.held_back_by, "; "));
    }
    report_kept(decision, report);
    removed = decision.forget;
    co_await delete_pruned(client, resolver, decision.deletes, test_mode, report, removed);
  }

  if (!test_mode && tracking) {
    Inventory next = next_inventory(loaded.inventory, report.applied, removed, options.engine.default_namespace);
    if (parent.object.IsNull() || !(next == *on_server) || verdict == WriterVerdict::claim) {
      if (auto written = co_await write_parent(client, parent, options, next); !written.ok()) {
        report.errors.push_back("inventory: cannot write the ApplySet parent Secret " + parent_name + ": " +
                                written.error().describe());
      }
    }
  }
  report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  co_return report;
}

}  // namespace kstate::states
