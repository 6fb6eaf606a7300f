// object_present (see states/engine_impl.hpp): reads the live object, decides what to
// do with it (states/present_decision.hpp), and creates, replaces or applies it; takes
// other managers' fields over first when asked, retries an apply's 409 Conflict and a
// create's 409 AlreadyExists, carries a Service's allocated clusterIP over a replace,
// deletes and re-creates on an immutable field when allowed, and reads discovery again
// when a write meets a path the server does not serve.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/crd.hpp"
#include "manifests/ignore_fields.hpp"
#include "states/adoption.hpp"
#include "states/applyset.hpp"
#include "states/diff.hpp"
#include "states/engine_impl.hpp"
#include "states/normalize.hpp"
#include "states/present_decision.hpp"
#include "states/prune.hpp"
#include "states/state_id_label.hpp"

namespace kstate::states {

using json::resource_version;
using json::string_at;
using manifests::Function;
using manifests::Strategy;

namespace {

constexpr int replace_conflict_retries = 5;
constexpr int apply_conflict_attempts = 8;
// How long a state whose kind discovery still lists after its path answered 404 waits
// before writing again: an API server that has just established the CRD serves it
// within moments (recording 60: 2 s at most, and a held create is not a 404).
constexpr std::chrono::milliseconds not_served_pause{500};

bool is_immutable_field_error(const Error& error) {
  if (error.kind != ErrorKind::invalid) {
    return false;
  }
  if (error.message.find("immutable") != std::string::npos) {
    return true;
  }
  for (const auto& cause : error.causes) {
    if (cause.message.find("immutable") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string immutable_fields(const Error& error) {
  std::string fields;
  for (const auto& cause : error.causes) {
    if (cause.message.find("immutable") != std::string::npos && !cause.field.empty()) {
      fields += (fields.empty() ? "" : ", ") + cause.field;
    }
  }
  return fields.empty() ? "a field" : fields;
}

}  // namespace

// Whether this object_present may write an existing object (states/adoption.hpp): it
// is the set's already, or is taken over now (slot.adopting: reported "adopted"), or
// the state fails saying who owns it and how to opt in.
bool Engine::Impl::may_adopt(std::size_t index, const json::Value& live) {
  Slot& slot = slots[index];
  const LiveObject marks = live_object_from_json(live);
  AdoptionInput adoption;
  adoption.labels = marks.labels;
  adoption.annotations = marks.annotations;
  if (auto id = options.ownership_labels.find(std::string(applyset_part_of_label));
      id != options.ownership_labels.end()) {
    adoption.applyset_id = id->second;
  }
  adoption.adopt = options.adopt;
  adoption.named =
      string_at(states[index].object, {"metadata", "annotations", std::string(adopt_annotation)}) == "true" ||
      options.adopt_objects.count(slot.ref.display()) != 0;
  const AdoptionDecision decision = decide_adoption(adoption);
  switch (decision.verdict) {
    case AdoptionVerdict::ours:
      return true;
    case AdoptionVerdict::adopt:
      slot.adopting = true;
      slot.adopted_from = decision.owner ? decision.owner->description : std::string();
      return true;
    case AdoptionVerdict::refuse_foreign:
      fail(index, slot.ref.display() + " is managed by " + decision.owner->description +
                      "; kstate does not take it over, and left it unchanged. To take it over (label it, and prune "
                      "it once no manifest declares it), annotate its manifest kstate.io/adopt: \"true\" or list " +
                      slot.ref.display() + " in adopt-objects (kstate apply --adopt-objects)");
      return false;
    case AdoptionVerdict::refuse_not_ours:
      fail(index, slot.ref.display() + " already exists and is not managed by kstate (it lacks the labels " +
                      owned_labels_text() +
                      "); it was left unchanged. To take it over (label it, and prune it once no manifest declares "
                      "it), set `adopt: true` in the daemon config or pass --adopt to kstate apply");
      return false;
  }
  return false;
}

std::string Engine::Impl::owned_labels_text() const {
  std::string text;
  for (const auto& [key, value] : options.ownership_labels) {
    text += (text.empty() ? "" : ", ") + key + "=" + value;
  }
  return text;
}

// generateName objects: find the one an earlier run created (by the state-ID
// label) so that it is never created twice.
asio::awaitable<Status> Engine::Impl::find_generated(std::size_t index) {
  Slot& slot = slots[index];
  ListOptions list;
  list.label_selector = std::string(state_id_label) + "=" + short_hash(states[index].id);
  auto listed = co_await read_all(slot, list);
  if (!listed.ok()) {
    co_return listed.error();
  }
  const json::Value* items = json::find(*listed, "items");
  if (items != nullptr && items->IsArray() && !items->Empty()) {
    slot.ref.name = string_at((*items)[0], {"metadata", "name"});
    slot.result.name = slot.ref.display();
    remember_live(index, (*items)[0]);
  }
  co_return ok_status();
}

asio::awaitable<void> Engine::Impl::present(std::size_t index) {
  Slot& slot = slots[index];
  State& state = states[index];
  if (slot.ref.name.empty()) {
    if (auto found = co_await find_generated(index); !found.ok()) {
      fail(index, found.error().describe());
      co_return;
    }
  }
  const json::Value* live = &LiveObjects::absent();
  if (!slot.ref.name.empty()) {
    // Read when it runs: its pair may have been read before the controller made it.
    if (made_by_the_cluster_here(index)) {
      live_objects.read_when_run(index);
    }
    auto got = co_await live_object(index);
    if (!got.ok()) {
      fail(index, got.error().describe());
      co_return;
    }
    live = *got;
    co_await live_objects.namespace_checked(*slot.resource, slot.ref);
  }
  // The facts, then one decision (states/present_decision.hpp), then its action.
  PresentFacts facts;
  facts.exists = !live->IsNull();
  facts.being_deleted = json::find_path(*live, {"metadata", "deletionTimestamp"}) != nullptr;
  facts.named = !slot.ref.name.empty();
  facts.strategy = state.strategy;
  facts.takeover_disabled = state.takeover_disabled;
  json::Document desired;
  if (!(facts.exists && facts.being_deleted)) {
    desired = slot.prepared ? std::move(*slot.prepared) : desired_object(index);
  }
  slot.prepared.reset();
  if (facts.exists && !facts.being_deleted) {
    manifests::leave_fields_to_others(desired, *live, ignored_fields(index));
  }
  if (facts.exists && !facts.being_deleted && facts.strategy != Strategy::create_only &&
      !options.ownership_labels.empty()) {
    facts.adoption_refused = !may_adopt(index, *live);  // (when refused: failed, saying why)
  }
  if (facts.exists && !facts.being_deleted && !facts.adoption_refused) {
    facts.kubectl_applied = has_last_applied(*live) && !has_last_applied(desired);
    facts.live_has_config_hash = !recorded_config_hash(*live).empty();
    facts.config_hash_matches = recorded_config_hash(*live) == recorded_config_hash(desired);
    facts.stored_subset = facts.config_hash_matches && is_stored_subset(desired, *live, stored_form(slot));
  }
  const PresentDecision decision = decide_present(facts);
  switch (decision.action) {
    case PresentAction::skip_being_deleted: {
      // Being deleted (finalizers still running; a Namespace emptying itself): whatever
      // is written now goes with it, and "already good" would be untrue once it is gone.
      // Nothing is sent: the next cycle creates it again.
      std::string comment = slot.ref.display() + " is being deleted (since " +
                            string_at(*live, {"metadata", "deletionTimestamp"}) +
                            "): it is created again once it is gone";
      if (options.test_mode) {
        slot.status = SlotStatus::succeeded;
        slot.result.result = std::nullopt;
        slot.result.comment = comment;
      } else {
        fail(index, comment + ", by the next cycle");
      }
      co_return;
    }
    case PresentAction::keep_create_only:
      succeed(index, "already exists (create-only: never updated)");
      // Not written, so not recorded as applied; but a wait still means "until ready".
      if (!options.test_mode && (is_crd(slot.ref.gvk) || wants_wait(state.wait))) {
        co_await wait_ready(index, *live);
      }
      co_return;
    case PresentAction::refuse_adoption:
      co_return;  // (failed by may_adopt, saying why)
    case PresentAction::already_good:
      succeed(index, "already good");
      co_await after_present(index, *live);
      co_return;
    case PresentAction::create:
    case PresentAction::replace:
    case PresentAction::apply:
      break;
  }
  const bool taking_over = decision.take_over;
  if (taking_over) {
    if (auto taken = co_await take_over(index, *live); !taken.ok()) {
      fail(index, "taking over the fields of other managers: " + taken.error().describe());
      co_return;
    }
  }
  Result<json::Document> written = Error(ErrorKind::internal, "not sent");
  if (decision.action == PresentAction::create) {
    written = co_await create(slot, desired);
  } else if (decision.action == PresentAction::replace) {
    written = co_await replace(index, desired, live);
    auto refreshed = co_await live_object(index);
    live = refreshed.ok() ? *refreshed : &LiveObjects::absent();
  } else {
    // (after a takeover, `live`'s managedFields are no longer the server's)
    co_await give_up_ignored_fields(index, desired, *live, !taking_over);
    written = co_await apply_patch(index, desired);
  }
  if (!written.ok() && is_immutable_field_error(written.error())) {
    co_await immutable(index, written.error(), *live);
    co_return;
  }
  if (!written.ok() && written.error().kind == ErrorKind::already_exists && !slot.ref.name.empty() &&
      !slot.create_answered_already_exists) {
    // Made by someone else since it was read (e.g. kube-controller-manager's `default`
    // ServiceAccount in a new namespace): read it, and decide again as for any object
    // that exists (adopt, create-only, replace).
    slot.create_answered_already_exists = true;
    live_objects.read_when_run(index);
    co_await present(index);
    co_return;
  }
  if (!written.ok() && written.error().resource_not_served && !slot.discovery_read_again) {
    slot.discovery_read_again = true;
    if (co_await rediscover(index, written.error())) {
      co_await present(index);
    }
    co_return;
  }
  if (!written.ok()) {
    fail(index, manifest_error(written.error(), desired));
    co_return;
  }
  if (options.test_mode && slot.takeover) {
    remove_what_takeover_releases(*slot.takeover, *written, desired);
  }
  co_await report_write(index, *live, *written);
}

// A write refused by the server, told in the manifest's terms: the fields it names
// as a manifest reader counts them (manifest_field_path), e.g. server-side apply's
// 500 for an undeclared field, `metadata.annotation`.
std::string Engine::Impl::manifest_error(Error error, const json::Value& sent) {
  for (auto& cause : error.causes) {
    cause.field = manifest_field_path(cause.field, sent);
  }
  return error.describe();
}

// A write was answered 404 "page not found": the server does not serve the kind at
// the path discovery gave (its CRD deleted or changed since discovery was read, or a
// custom resource that an API server does not serve yet, recording 60). Discovery is
// read again, once per run for all the states that meet this; when the kind still
// resolves, the state writes again after a short pause (true), else it fails saying
// the server has no such kind (false).
asio::awaitable<bool> Engine::Impl::rediscover(std::size_t index, const Error& refused) {
  Slot& slot = slots[index];
  const Status* rediscovery = co_await rediscovered.get([this, &slot]() -> asio::awaitable<Status> {
    spdlog::info("the API server does not serve {} at the path discovery gave: reading discovery again",
                 slot.ref.gvk.qualified_kind());
    try {
      co_return co_await resolver.refresh();
    } catch (const std::exception& failure) {
      co_return Status(Error(ErrorKind::internal, failure.what()));  // the waiters must not wait forever
    }
  });
  if (!rediscovery->ok()) {
    fail(index, refused.describe() + " (reading discovery again failed: " + rediscovery->error().describe() + ")");
    co_return false;
  }
  auto resource = co_await resolver.resolve_known(slot.ref.gvk);
  if (!resource.ok()) {
    fail(index, resource.error().describe() + " (its path answered 404 page not found; discovery was read again)");
    co_return false;
  }
  set_resource(index, std::make_shared<const ApiResource>(std::move(resource).value()));
  slot.result.name = slot.ref.display();
  co_await sleep_for(not_served_pause);
  co_return true;
}

// Test mode: the dry-run apply could not see a takeover that was not made, so what
// the real apply would remove after it is removed from its answer here.
void Engine::Impl::remove_what_takeover_releases(const TakeoverPlan& plan, json::Value& answer,
                                                 const json::Value& desired) const {
  std::vector<const json::Value*> others;
  for (const auto& entry : plan.managed_fields.GetArray()) {
    if (string_at(entry, {"manager"}) != options.field_manager || string_at(entry, {"operation"}) != "Apply") {
      others.push_back(json::find(entry, "fieldsV1"));
    }
  }
  remove_released_fields(answer, plan.owned_fields, desired, others);
}

bool Engine::Impl::has_last_applied(const json::Value& object) {
  return json::find_path(object, {"metadata", "annotations", last_applied_annotation}) != nullptr;
}

// Moves the fields of the managers kstate takes over into its own Apply entry (one
// JSON patch of managedFields, which fails if the object changed since it was read:
// then read again). `live` is used when it was read with its managedFields (on its
// own: it may have none); objects from a LIST are read again. Test mode only reads,
// and keeps the plan for the diff.
asio::awaitable<Status> Engine::Impl::take_over(std::size_t index, const json::Value& live) {
  Slot& slot = slots[index];
  constexpr int attempts = 3;
  for (int attempt = 1;; ++attempt) {
    Result<json::Document> whole = json::Document();
    if (attempt == 1 && live_objects.read_with_managed_fields(index)) {
      whole = json::copy(live);
    } else {
      whole = co_await client.get_with_managed_fields(*slot.resource, slot.ref.ns, slot.ref.name);
    }
    if (!whole.ok()) {
      co_return whole.error().kind == ErrorKind::not_found ? ok_status() : Status(whole.error());
    }
    static const json::Value none;
    const json::Value* managed_fields = json::find_path(*whole, {"metadata", "managedFields"});
    TakeoverPlan plan = plan_takeover(managed_fields != nullptr ? *managed_fields : none, options.field_manager);
    if (!plan.needed()) {
      co_return ok_status();
    }
    if (options.test_mode) {
      slot.taken_over_from = plan.managers;
      slot.takeover = std::move(plan);
      co_return ok_status();
    }
    WriteOptions write;
    write.field_manager = options.field_manager;
    std::string no_subresource;
    std::string body = takeover_patch(plan, resource_version(*whole));
    auto patched =
        co_await client.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::json, body, write, no_subresource);
    if (patched.ok()) {
      slot.taken_over_from = plan.managers;
      spdlog::info("took {} over from {}", slot.ref.display(), managers_text(plan.managers));
      co_return ok_status();
    }
    // A failed resourceVersion test: someone wrote it meanwhile. Read it again.
    const bool raced = patched.error().kind == ErrorKind::conflict || patched.error().kind == ErrorKind::invalid;
    if (!raced || attempt >= attempts) {
      co_return patched.error();
    }
  }
}

// Server-side apply, retried on 409 Conflict (DESIGN.md "409 re-read and retry"):
// apply with force carries no resourceVersion, so a conflict only means a concurrent
// update won a race on the server, and sending the same apply again is safe. Bounded
// by apply_conflict_attempts, with a short growing pause between attempts.
asio::awaitable<Result<json::Document>> Engine::Impl::apply_patch(std::size_t index, const json::Value& desired) {
  Slot& slot = slots[index];
  std::chrono::milliseconds pause{10};
  for (int attempt = 0;; ++attempt) {
    auto written = co_await patch(slot, PatchType::apply, desired);
    if (written.ok() || written.error().kind != ErrorKind::conflict) {
      co_return written;
    }
    if (attempt + 1 >= apply_conflict_attempts) {
      Error error = written.error();
      error.message += " (gave up after " + std::to_string(apply_conflict_attempts) + " conflicting attempts)";
      co_return error;
    }
    co_await sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

// Records the outcome of a write: created / updated with its diff, or already good
// when the server changed nothing kstate shows.
asio::awaitable<void> Engine::Impl::report_write(std::size_t index, const json::Value& live, json::Document& written) {
  Slot& slot = slots[index];
  if (slot.ref.name.empty()) {
    slot.ref.name = string_at(written, {"metadata", "name"});
    slot.result.name = slot.ref.display();
  }
  // An update's diff also tells whether the server changed anything kstate shows.
  std::string diff =
      live.IsNull() && !options.record_diffs ? std::string() : object_diff(live, written, diff_label(slot.ref));
  if (!live.IsNull() && diff.empty() && slot.taken_over_from.empty()) {
    succeed(index, "already good");
  } else {
    changed(index, live.IsNull() ? Change::created : slot.adopting ? Change::adopted : Change::updated, diff);
    if (live.IsNull() && slot.resource && slot.resource->group.empty() && slot.resource->kind == "Namespace") {
      live_objects.namespace_created(slot.ref.name);
    }
    if (!slot.taken_over_from.empty()) {
      slot.result.comment += " (taken over from " + managers_text(slot.taken_over_from) + ")";
    }
    if (!slot.adopted_from.empty()) {
      slot.result.comment += " (from " + slot.adopted_from + ", as its manifest or adopt-objects says)";
    }
  }
  if (options.test_mode) {
    co_await after_present(index, written);
    co_return;
  }
  // The answer itself becomes the live object (copying it was 2% of a cold apply).
  const json::Value& kept = remember_live(index, std::move(written));
  co_await after_present(index, kept);
}

// GET + PUT with the live resourceVersion, keeping server-allocated fields; on 409
// re-read and retry (MetalK8s' replace behaviour).
asio::awaitable<Result<json::Document>> Engine::Impl::replace(std::size_t index, json::Document& desired,
                                                              const json::Value* live) {
  Slot& slot = slots[index];
  for (int attempt = 0;; ++attempt) {
    json::Document body = json::copy(desired);
    auto& allocator = body.GetAllocator();
    auto& metadata = json::ensure_object(body, "metadata", allocator);
    json::set_string(metadata, "resourceVersion", resource_version(*live), allocator);
    keep_allocated_fields(body, *live);
    auto written = co_await put(slot, body);
    if (written.ok() || written.error().kind != ErrorKind::conflict || attempt + 1 >= replace_conflict_retries) {
      co_return written;
    }
    auto fresh = co_await live_object(index, true);
    if (!fresh.ok()) {
      co_return fresh.error();
    }
    if ((*fresh)->IsNull()) {
      co_return co_await create(slot, desired);
    }
    live = *fresh;
  }
}

// Service clusterIP(s) (and similar allocated values) are kept from the live object
// when the manifest does not set them, so replace does not hit "field is immutable".
void Engine::Impl::keep_allocated_fields(json::Document& body, const json::Value& live) {
  if (json::string_or(json::find(body, "kind"), "") != "Service") {
    return;
  }
  const json::Value* live_spec = json::find(live, "spec");
  if (live_spec == nullptr) {
    return;
  }
  auto& spec = json::ensure_object(body, "spec", body.GetAllocator());
  for (const char* field : {"clusterIP", "clusterIPs", "healthCheckNodePort", "ipFamilies"}) {
    if (json::find(spec, field) == nullptr) {
      if (const json::Value* value = json::find(*live_spec, field)) {
        json::Value copy;
        copy.CopyFrom(*value, body.GetAllocator());
        json::set(spec, field, std::move(copy), body.GetAllocator());
      }
    }
  }
}

// The server refused a change to an immutable field: delete and re-create when the
// state allows it, else say which field and how to opt in.
asio::awaitable<void> Engine::Impl::immutable(std::size_t index, const Error& error, const json::Value& live) {
  Slot& slot = slots[index];
  State& state = states[index];
  std::string fields = immutable_fields(error);
  if (!state.recreate) {
    fail(index, error.describe() + "\n" + fields +
                    " cannot be changed in place; set `recreate: true` on the state (or the annotation "
                    "kstate.io/recreate: \"true\") to delete and re-create the object");
    co_return;
  }
  if (options.test_mode) {
    json::Document desired = desired_object(index);
    changed(index, Change::recreated, object_diff(live, desired, diff_label(slot.ref)));
    slot.result.comment = "would be deleted and re-created (" + fields + " is immutable)";
    co_return;
  }
  DeleteOptions remove;
  remove.propagation_policy = "Foreground";
  auto removed = co_await delete_object(slot, remove);
  if (!removed.ok() && removed.error().kind != ErrorKind::not_found) {
    fail(index, "re-create: delete failed: " + removed.error().describe());
    co_return;
  }
  const manifests::Wait until_gone{true, 0, 0, 0};
  const std::string old_uid = string_at(live, {"metadata", "uid"});
  if (auto gone = co_await wait_gone(index, until_gone, old_uid); !gone.ok()) {
    fail(index, "re-create: " + gone.error().message);
    co_return;
  }
  json::Document desired = desired_object(index);
  auto created = co_await create(slot, desired);
  if (!created.ok()) {
    fail(index, "re-create: create failed: " + created.error().describe());
    co_return;
  }
  changed(index, Change::recreated, object_diff(live, *created, diff_label(slot.ref)));
  slot.result.comment = "re-created (" + fields + " is immutable)";
  remember_live(index, *created);
  co_await after_present(index, *created);
}

// After an object_present: CRDs must be Established before their CRs run.
asio::awaitable<void> Engine::Impl::after_present(std::size_t index, const json::Value& object) {
  Slot& slot = slots[index];
  slot.uid = string_at(object, {"metadata", "uid"});
  if (options.test_mode) {
    if (slot.result.change == Change::created) {
      pending_objects.insert(slot.ref.display());
      if (slot.ref.gvk.kind == "Namespace" && slot.ref.gvk.group.empty()) {
        pending_namespaces.insert(slot.ref.name);
      }
      if (is_crd(slot.ref.gvk)) {
        crd_versions.created(object);
      }
    } else if (is_crd(slot.ref.gvk)) {
      // As this run would update it (the dry run's answer): versions it adds.
      crd_versions.updated(object);
    }
    co_return;
  }
  if (is_crd(slot.ref.gvk) && slot.result.change != Change::created && slot.result.change != Change::recreated) {
    // The API server serves and lists the versions an update adds (this run's, or a
    // recent one: a run again right after a failed one) once its CRD handler and
    // discovery catch up, a moment later and not in step: until discovery lists one,
    // an object_absent naming it reads and deletes through another version the CRD
    // serves (dispatch). Not after a create: a new kind holds nothing yet.
    crd_versions.updated(object);
  }
  if (is_crd(slot.ref.gvk) || wants_wait(states[index].wait)) {
    co_await wait_ready(index, object);
  }
}

}  // namespace kstate::states
