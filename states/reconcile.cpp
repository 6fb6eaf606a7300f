// One reconcile cycle: engine, then inventory and prune (see reconcile.hpp).
#include "states/reconcile.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "states/inventory.hpp"
#include "states/prune.hpp"

namespace kstate::states {
namespace {

using Clock = std::chrono::steady_clock;

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& part : parts) {
    out += (out.empty() ? "" : std::string(separator)) + part;
  }
  return out;
}

// Named lvalues for every coroutine argument (GCC 12 mis-destroys temporaries bound
// to coroutine parameters).
asio::awaitable<Result<json::Document>> read_object(DynamicClient& client, const ApiResource& resource,
                                                    const std::string& ns, const std::string& name) {
  std::string scope = resource.namespaced ? ns : std::string();
  std::string object_name = name;
  std::string subresource;
  co_return co_await client.get(resource, scope, object_name, subresource);
}

struct ParentSecret {
  std::optional<ApiResource> secrets;
  json::Document object;  // Null when it does not exist yet
  Error error;
  bool readable = false;
};

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
  } else if (got.error().kind == ErrorKind::not_found) {
    result.readable = true;
  } else {
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
    } else if (got.error().kind == ErrorKind::not_found) {
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

}  // namespace

std::map<std::string, std::string> ownership_labels(const ApplySetParent& parent) {
  return {{std::string(managed_by_label), std::string(managed_by_value)},
          {std::string(applyset_part_of_label), applyset_id(parent)}};
}

asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options) {
  auto started = Clock::now();
  EngineOptions engine_options = options.engine;
  if (options.only_files) {
    const std::set<std::string>& files = *options.only_files;
    engine_options.selected = [&files](const manifests::State& state) { return files.count(state.source.file) > 0; };
  }
  Engine engine(client, resolver, engine_options);
  RunReport report = co_await engine.run(states);
  const bool test_mode = options.engine.test_mode;

  ParentSecret parent = co_await read_parent(client, resolver, options.parent);
  if (!parent.readable) {
    report.errors.push_back("inventory: cannot read the ApplySet parent Secret " + options.parent.ns + "/" +
                            options.parent.name + ": " + parent.error.describe() + " (nothing pruned)");
    co_return report;
  }
  LoadedInventory loaded = load_inventory(parent.object.IsNull() ? nullptr : &parent.object);
  if (loaded.status == InventoryStatus::corrupt) {
    report.notes.push_back("inventory in Secret " + options.parent.ns + "/" + options.parent.name + " is unreadable (" +
                           loaded.problem + "): prune refused");
  }

  std::vector<ObjectKey> removed;
  if (options.prune) {
    PruneInput input;
    input.inventory = loaded.inventory;
    input.declared = report.declared;
    input.applyset_id = applyset_id(options.parent);
    input.guards.prune_enabled = true;
    input.guards.load_failed = options.load_failed;
    input.guards.state_failed = report.failed() > 0;
    input.guards.discovery_failed = report.discovery_failed;
    input.guards.manifests_empty = options.manifests_empty;
    input.guards.allow_empty_prune = options.allow_empty_prune;
    input.guards.inventory_corrupt = loaded.status == InventoryStatus::corrupt;
    if (held_guards(input.guards).empty()) {
      input.live = co_await read_candidates(client, resolver, loaded.inventory, report.declared);
    }
    PruneDecision decision = decide_prune(input);
    if (!decision.held_back_by.empty()) {
      report.notes.push_back("prune held back: " + join(decision.held_back_by, "; "));
    }
    removed = decision.forget;
    for (const auto& planned : decision.deletes) {
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
        if (deleted.ok() || deleted.error().kind == ErrorKind::not_found) {
          result.result = test_mode ? std::optional<bool>() : std::optional<bool>(true);
          result.comment =
              test_mode ? "would be pruned (no longer in any manifest)" : "pruned (no longer in any manifest)";
          json::set_string(result.changes, "deleted", result.name, result.changes.GetAllocator());
          if (!test_mode) {
            removed.push_back(planned.entry.key());
            spdlog::info("pruned {} (was declared in {})", result.name, planned.entry.source);
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

  if (!test_mode && loaded.status != InventoryStatus::corrupt) {
    Inventory next = merge_inventory(loaded.inventory, report.applied, removed);
    if (parent.object.IsNull() || !(next.entries == loaded.inventory.entries)) {
      json::Document secret = make_parent_secret(options.parent, options.kstate_version, next);
      WriteOptions write;
      write.field_manager = options.engine.field_manager;
      write.force = true;
      std::string ns = options.parent.ns;
      std::string name = options.parent.name;
      std::string body = json::dump(secret);
      std::string subresource;
      auto written = co_await client.patch(*parent.secrets, ns, name, PatchType::apply, body, write, subresource);
      if (!written.ok()) {
        report.errors.push_back("inventory: cannot write the ApplySet parent Secret " + ns + "/" + name + ": " +
                                written.error().describe());
      }
    }
  }
  report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  co_return report;
}

}  // namespace kstate::states
