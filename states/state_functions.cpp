// object_updated and object_absent (see states/engine_impl.hpp), and what the three
// state functions share: the object to send (ownership labels, configuration hash),
// the fields left to other writers, and the waits for readiness and deletion
// (states/waits.hpp), and the restart of a workload a `watch` requisite asks for.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/crd.hpp"
#include "manifests/ignore_fields.hpp"
#include "states/applyset.hpp"
#include "states/diff.hpp"
#include "states/engine_impl.hpp"
#include "states/requisites.hpp"
#include "states/state_id_label.hpp"
#include "states/updated_decision.hpp"

namespace kstate::states {

using json::string_at;
using manifests::Function;
using manifests::Strategy;

namespace {

// How long an object_updated waits for an object kube-controller-manager makes in each
// new namespace (ServiceAccount `default`, ConfigMap `kube-root-ca.crt`).
constexpr std::chrono::milliseconds made_by_the_cluster_timeout{30000};

}  // namespace

// The fields of this state's object left to other writers: its annotation's and the
// config rules matching it.
std::vector<std::string> Engine::Impl::ignored_fields(std::size_t index) const {
  std::vector<std::string> pointers = states[index].ignore_fields;
  const ObjectRef& ref = slots[index].ref;
  for (const auto& rule : options.ignore_fields) {
    if (rule.matches(ref.gvk.group, ref.gvk.kind, ref.ns, ref.name)) {
      pointers.insert(pointers.end(), rule.pointers.begin(), rule.pointers.end());
    }
  }
  return pointers;
}

// Before an apply of an existing object with ignored fields: the ones another manager
// owns leave the apply, so that kstate's ownership of them goes (ignore_fields.hpp).
// Reads the object with its managedFields when `live` lacks them or is no longer
// current (one GET, only for such objects and only when kstate writes).
asio::awaitable<void> Engine::Impl::give_up_ignored_fields(std::size_t index, json::Document& desired,
                                                           const json::Value& live, bool live_is_current) {
  const std::vector<std::string> pointers = ignored_fields(index);
  if (pointers.empty() || live.IsNull()) {
    co_return;
  }
  if (live_is_current && json::find_path(live, {"metadata", "managedFields"}) != nullptr) {
    manifests::give_up_fields(desired, live, pointers, options.field_manager);
    co_return;
  }
  Slot& slot = slots[index];
  auto whole = co_await client.get_with_managed_fields(*slot.resource, slot.ref.ns, slot.ref.name);
  if (whole.ok()) {
    manifests::give_up_fields(desired, *whole, pointers, options.field_manager);
  }
}

// The object to send: the manifest with its namespace set, kstate's ownership
// labels and the configuration hash annotation.
json::Document Engine::Impl::desired_object(std::size_t index, bool with_ownership) {
  Slot& slot = slots[index];
  json::Document desired = json::copy(states[index].object);
  auto& allocator = desired.GetAllocator();
  auto& metadata = json::ensure_object(desired, "metadata", allocator);
  if (!slot.ref.ns.empty()) {
    json::set_string(metadata, "namespace", slot.ref.ns, allocator);
  } else {
    metadata.RemoveMember("namespace");
  }
  if (!slot.ref.name.empty()) {
    json::set_string(metadata, "name", slot.ref.name, allocator);
  }
  if (with_ownership) {
    auto& labels = json::ensure_object(metadata, "labels", allocator);
    for (const auto& [key, value] : options.ownership_labels) {
      json::set_string(labels, key, value, allocator);
    }
    if (!string_at(states[index].object, {"metadata", "generateName"}).empty()) {
      json::set_string(labels, state_id_label, short_hash(states[index].id), allocator);
    }
    std::string hash = config_hash(desired);
    json::set_string(json::ensure_object(metadata, "annotations", allocator), config_hash_annotation, hash, allocator);
  }
  return desired;
}

StoredFormOptions Engine::Impl::stored_form(const Slot& slot) {
  StoredFormOptions stored;
  stored.status_subresource = slot.resource && slot.resource->has_subresource("status");
  return stored;
}

bool Engine::Impl::wants_wait(const manifests::Wait& wait) {
  return wait.enabled || wait.attempts > 0 || wait.timeout_seconds > 0;
}

// Waits until the object is ready (states/readiness): CRDs until Established, and
// any object whose state asks (`wait`, annotation kstate.io/wait). The state fails
// with the last reason seen when the wait runs out or readiness cannot come.
asio::awaitable<void> Engine::Impl::wait_ready(std::size_t index, const json::Value& written) {
  Slot& slot = slots[index];
  const bool crd = is_crd(slot.ref.gvk);
  manifests::Wait policy = states[index].wait;
  WaitDefaults defaults;
  defaults.timeout = options.default_wait_timeout;
  if (crd) {
    // A CRD is Established within moments; its CRs are waiting for it.
    policy.enabled = true;
    defaults = prompt_wait_defaults(options.default_wait_timeout);
  }
  const ReadinessChecker checker = check_exists_ready;
  const std::string goal = "ready";
  auto outcome = co_await object_wait(slot).until(&written, checker, policy, defaults, goal);
  if (!outcome.ok()) {
    fail(index, outcome.error().message);
    co_return;
  }
  if (crd) {
    crd_established_since_refresh = true;
  }
}

// A wait for the slot's object (states/waits.hpp): its reads keep the state's warnings
// and go through LiveObjects::served(), so that a path the server does not serve never reads as
// a missing object.
ObjectWait Engine::Impl::object_wait(Slot& slot) {
  ObjectWait::Options wait_options;
  wait_options.watch = options.watch_waits;
  wait_options.sleep = options.sleep;
  wait_options.take_read = [this, &slot](Result<json::Document> answer) {
    return live_objects.served(*slot.resource, std::move(answer));
  };
  return ObjectWait(client.collecting_warnings(slot.warnings), *slot.resource, slot.ref.ns, slot.ref.name,
                    slot.ref.display(), std::move(wait_options));
}

asio::awaitable<void> Engine::Impl::updated(std::size_t index) {
  Slot& slot = slots[index];
  // What object_updated does is decide_updated's (updated_decision.hpp); this gathers
  // its facts and acts.
  UpdatedFacts facts;
  facts.strategy_given = states[index].strategy_given;
  facts.strategy = states[index].strategy;
  facts.test_mode = options.test_mode;
  if (decide_updated(facts) == UpdatedAction::refuse_strategy) {
    fail(index, std::string("object_updated takes `strategy: apply` (server-side apply) or no strategy (a merge "
                            "patch), not ") +
                    manifests::to_string(states[index].strategy) + ", which is object_present's");
    co_return;
  }
  facts.made_by_the_cluster_here = made_by_the_cluster_here(index);
  if (facts.made_by_the_cluster_here) {
    live_objects.read_when_run(index);
  }
  auto got = co_await live_object(index);
  if (!got.ok()) {
    fail(index, got.error().describe());
    co_return;
  }
  const json::Value* found = *got;
  facts.created_by_this_run = options.test_mode && pending_objects.count(slot.ref.display()) > 0;
  json::Document desired = desired_object(index, false);
  UpdatedAction action = UpdatedAction::fail_missing;
  for (;;) {
    facts.exists = !found->IsNull();
    if (facts.exists) {
      manifests::leave_fields_to_others(desired, *found, ignored_fields(index));
      facts.stored_subset = is_stored_subset(desired, *found, stored_form(slot));
    }
    action = decide_updated(facts);
    if (action != UpdatedAction::wait_for_the_cluster) {
      break;
    }
    auto made = co_await made_by_the_cluster(index);
    if (!made.ok()) {
      fail(index, made.error().describe());
      co_return;
    }
    found = *made;
    if (found->IsNull()) {
      break;  // (until_exists succeeded: not expected; reported missing)
    }
  }
  if (action == UpdatedAction::would_update_created) {
    co_await would_update_created(index);
    co_return;
  }
  if (action == UpdatedAction::fail_missing || action == UpdatedAction::wait_for_the_cluster) {
    fail(index, slot.ref.display() + " does not exist");
    co_return;
  }
  const json::Value& live = *found;
  if (action == UpdatedAction::already_good) {
    succeed(index, "already good");
    co_await after_update(index, live);
    co_return;
  }
  Result<json::Document> written = Error(ErrorKind::internal, "not sent");
  if (action == UpdatedAction::apply) {
    written = co_await update_apply(index, desired);
  } else {
    written = co_await patch(slot, PatchType::merge, desired);
  }
  if (!written.ok()) {
    fail(index, manifest_error(written.error(), desired));
    co_return;
  }
  std::string diff = object_diff(live, *written, diff_label(slot.ref));
  if (diff.empty()) {
    succeed(index, "already good");
  } else {
    changed(index, Change::updated, diff);
  }
  co_await after_update(index, *written);
}

// object_updated of an object kube-controller-manager makes in the namespace this run
// created: it comes a moment after the namespace (typically 5-100 ms), so it is waited
// for (watched, else polled) up to made_by_the_cluster_timeout, not reported missing.
asio::awaitable<Result<const json::Value*>> Engine::Impl::made_by_the_cluster(std::size_t index) {
  const std::string why_absent = "kube-controller-manager makes it in each new namespace, and has not yet";
  auto waited = co_await object_wait(slots[index]).until_exists(made_by_the_cluster_timeout, why_absent);
  if (!waited.ok()) {
    co_return Error(waited.error().kind, slots[index].ref.display() + " does not exist: " + waited.error().message);
  }
  co_return co_await live_object(index, true);
}

// object_updated with `strategy: apply`: server-side apply of the fields the state
// names, under a field manager of its own, so that it neither takes over nor (by
// leaving them out) removes the fields object_present applies as field_manager.
asio::awaitable<Result<json::Document>> Engine::Impl::update_apply(std::size_t index, const json::Value& desired) {
  Slot& slot = slots[index];
  WriteOptions write = write_options(true);
  const std::string& id = states[index].id;
  bool printable = std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  write.field_manager = options.field_manager + ":" + (printable ? id : short_hash(id).substr(0, 16));
  if (write.field_manager.size() > 128) {  // the API server's limit
    write.field_manager = options.field_manager + ":" + short_hash(id).substr(0, 16);
  }
  std::string text = json::dump(desired);
  std::string subresource;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::apply, text, write,
                                  subresource);
}

// object_updated waits too when asked (e.g. a scaled Deployment rolled out).
asio::awaitable<void> Engine::Impl::after_update(std::size_t index, const json::Value& object) {
  if (!options.test_mode && wants_wait(states[index].wait)) {
    co_await wait_ready(index, object);
  }
}

// `fresh`: read the object on its own, not from its pair's read.
asio::awaitable<void> Engine::Impl::absent(std::size_t index, bool fresh) {
  Slot& slot = slots[index];
  State& state = states[index];
  auto got = co_await live_object(index, fresh);
  if (!got.ok()) {
    fail(index, got.error().describe());
    co_return;
  }
  const json::Value& live = **got;
  const AbsentAction action = decide_absent({!live.IsNull(), options.test_mode, state.wait.enabled});
  if (action == AbsentAction::already_absent) {
    succeed(index, "already absent");
    co_return;
  }
  DeleteOptions remove;
  remove.dry_run = options.test_mode;
  remove.propagation_policy = state.propagation;
  auto removed = co_await delete_object(slot, remove);
  if (!removed.ok()) {
    // Gone meanwhile only when the 404 names the object: a "404 page not found" (a path
    // the server does not serve) says nothing about it.
    if (removed.error().object_missing()) {
      succeed(index, "already absent");
    } else {
      fail(index, removed.error().describe());
    }
    co_return;
  }
  if (action == AbsentAction::remove_and_wait) {
    const std::string deleted_uid = string_at(live, {"metadata", "uid"});
    if (auto gone = co_await wait_gone(index, state.wait, deleted_uid); !gone.ok()) {
      fail(index, gone.error().message);
      co_return;
    }
  }
  changed(index, Change::deleted, object_diff(live, json::Value(), diff_label(slot.ref)));
}

// MetalK8s' wait until the object is gone: `attempts` checks `sleep` apart, or until
// `timeout` (watching, as readiness waits do). An object with another UID than the
// one deleted is a new object: the deleted one is gone.
asio::awaitable<Status> Engine::Impl::wait_gone(std::size_t index, const manifests::Wait& wait,
                                                const std::string& deleted_uid) {
  co_return co_await object_wait(slots[index]).until_gone(wait, options.default_wait_timeout, deleted_uid);
}

// A `watch` requisite changed something: restart the workload as `kubectl rollout
// restart` does (its pod template gets a new restartedAt annotation, under a field
// manager of its own so that kstate's applies neither own nor remove it).
asio::awaitable<void> Engine::Impl::restart_for_watch(std::size_t index,
                                                      const std::vector<std::string>& watched_changes) {
  Slot& slot = slots[index];
  RestartInput input;
  input.watched_changes = watched_changes;
  input.group = slot.ref.gvk.group;
  input.kind = slot.ref.gvk.kind;
  input.function = states[index].function;
  input.state_failed = slot.failed() || !slot.resource;
  input.created = slot.created_by_this_run;
  input.test_mode = options.test_mode;
  std::string because;
  for (const auto& id : watched_changes) {
    because += (because.empty() ? "" : ", ") + id;
  }
  auto& changes = slot.result.changes;
  const Restart restart = decide_restart(input);
  if (restart == Restart::none || restart == Restart::not_a_workload) {
    co_return;
  }
  if (restart == Restart::would_restart) {
    json::set_string(changes, "restart", "would be restarted: " + because + " would change", changes.GetAllocator());
    slot.made_a_change = true;
    slot.result.result = std::nullopt;
    slot.result.comment += "; would be restarted (watch: " + because + ")";
    co_return;
  }
  const std::string timestamp = format_time(options.now());
  WriteOptions write = write_options(false);
  write.field_manager = options.field_manager + "-rollout";
  std::string subresource;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  auto patched = co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::strategic,
                                       restart_patch(timestamp), write, subresource);
  if (!patched.ok()) {
    fail(index, slot.result.comment + "; restart (watch: " + because + ") failed: " + patched.error().describe());
    co_return;
  }
  json::set_string(changes, "restarted", std::string(restarted_at_annotation) + "=" + timestamp,
                   changes.GetAllocator());
  slot.made_a_change = true;
  slot.result.comment += "; restarted (watch: " + because + " changed)";
  spdlog::info("restarted {} ({}): watch {} changed", slot.result.name, slot.result.source.to_string(), because);
}

}  // namespace kstate::states
