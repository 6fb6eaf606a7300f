// Objects the server cannot read or validate yet (see states/engine_impl.hpp): in test
// mode, those in a Namespace or of a CRD only this run creates (checked locally against
// the schema the server publishes or the CRD's), and in both modes those in a version a
// CRD update adds that discovery does not list yet (waited for, or read and deleted
// through another served version).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "states/diff.hpp"
#include "states/engine_impl.hpp"

namespace kstate::states {

using json::string_at;
using manifests::Function;

// Test mode: the namespace of this object is itself only created by this run, so
// the server cannot validate the object yet.
asio::awaitable<void> Engine::Impl::pending_namespace(std::size_t index) {
  Slot& slot = slots[index];
  State& state = states[index];
  std::string why = "server validation skipped because namespace " + slot.ref.ns + " does not exist yet";
  if (state.function == Function::object_absent) {
    succeed(index, "already absent (namespace " + slot.ref.ns + " does not exist yet)");
  } else if (state.function == Function::object_updated && pending_objects.count(slot.ref.display()) == 0 &&
             LiveObjects::made_in_every_namespace(*slot.resource, slot.ref.name)) {
    json::Document desired = desired_object(index, false);
    changed(index, Change::updated, object_diff(json::Value(), desired, diff_label(slot.ref)));
    slot.result.comment = "would be updated once kube-controller-manager makes it in the new namespace; " + why;
  } else if (state.function == Function::object_updated && pending_objects.count(slot.ref.display()) == 0) {
    fail(index, slot.ref.display() + " does not exist (namespace " + slot.ref.ns + " does not exist yet)");
  } else if (state.function == Function::object_updated) {
    co_await would_update_created(index);
  } else {
    // Even a dry run answers 404 here (recording 41): what the server would refuse is
    // found against the schema it publishes, so that no object shown as "would be
    // created" fails half-way through the real apply.
    json::Document desired = desired_object(index);
    const std::string not_yet = "namespace " + slot.ref.ns + " does not exist yet";
    LocalCheck check = co_await check_locally(index, desired, not_yet);
    if (check.outcome == LocalCheck::Outcome::invalid) {
      fail(index, check.text);
      co_return;
    }
    changed(index, Change::created, object_diff(json::Value(), desired, diff_label(slot.ref)));
    slot.result.comment = "would be created; " + check.text + " (" + why + ")";
    pending_objects.insert(slot.ref.display());
  }
  co_return;
}

// Checks an object the server cannot validate yet against the schema the server
// publishes for its kind (OpenAPI v3), or, for a custom resource whose group version
// the server does not publish, against its CustomResourceDefinition's schema.
// `not_yet`: why the server cannot check it (for the message).
auto Engine::Impl::check_locally(std::size_t index, const json::Value& object, const std::string& not_yet,
                                 Completeness completeness) -> asio::awaitable<LocalCheck> {
  const GroupVersionKind gvk = slots[index].ref.gvk;
  auto verdict = [&not_yet](const std::vector<SchemaViolation>& violations, const std::string& against) {
    if (violations.empty()) {
      return LocalCheck{LocalCheck::Outcome::valid, "validated locally against " + against};
    }
    std::string text = "invalid against " + against + " (checked locally: " + not_yet + "):";
    for (const auto& violation : violations) {
      text += "\n  " + violation.message;
    }
    return LocalCheck{LocalCheck::Outcome::invalid, std::move(text)};
  };
  // A kind whose CRD this run creates or updates: that CRD's schema, as it will be.
  for (const json::Value* crd : {crd_versions.created_crd(gvk), crd_versions.updated_crd(gvk)}) {
    if (crd != nullptr) {
      auto schema = crd_version_schema(*crd, gvk.version);
      if (schema.ok() && *schema != nullptr) {
        co_return verdict(validate_against_schema(object, **schema, completeness),
                          "the schema of CustomResourceDefinition " + string_at(*crd, {"metadata", "name"}));
      }
    }
  }
  auto published = co_await resolver.published_schema(gvk);
  if (published.ok() && published->has_value()) {
    const discovery::PublishedSchema& found = **published;
    co_return verdict(validate_against_openapi(object, *found.schema, *found.components, completeness),
                      "the server's OpenAPI schema of " + gvk.api_version() + " " + gvk.kind);
  }
  std::string why_not = published.ok()
                            ? "the server publishes no OpenAPI schema for " + gvk.api_version() + " " + gvk.kind
                            : published.error().describe();
  if (!gvk.group.empty()) {
    auto crd = co_await crd_versions.live_crd(gvk.group, gvk.kind);
    if (crd.ok() && *crd != nullptr) {
      const std::string crd_name = string_at(**crd, {"metadata", "name"});
      auto schema = crd_version_schema(**crd, gvk.version);
      if (schema.ok() && *schema != nullptr) {
        co_return verdict(validate_against_schema(object, **schema, completeness),
                          "the schema of CustomResourceDefinition " + crd_name);
      }
      why_not += schema.ok()
                     ? "; version " + gvk.version + " of CustomResourceDefinition " + crd_name + " has no schema"
                     : "; " + schema.error().message;
    }
  }
  co_return LocalCheck{LocalCheck::Outcome::not_validated, "not validated: " + why_not};
}

// Test mode: a custom resource the server cannot take yet (its CRD, or the version it
// uses, only comes with this run): names it in the CRD's scope.
void Engine::Impl::name_custom_resource(std::size_t index, const json::Value& crd) {
  Slot& slot = slots[index];
  if (string_at(crd, {"spec", "scope"}) != "Cluster") {
    std::string ns = string_at(states[index].object, {"metadata", "namespace"});
    slot.ref.ns = ns.empty() ? options.default_namespace : ns;
  }
  slot.result.name = slot.ref.display();
}

// The kind's CRD, as this run updated it (or found it), serves the version the state
// names, but the API server's discovery lists a version an update adds a moment later
// (its discovery controller catches up from an informer): the state waits for it,
// reading discovery again with a growing pause (one read at a time for all the states
// waiting), instead of failing with "no kind". Resolved when it returns, unless the
// wait timed out (the state then fails saying so).
asio::awaitable<void> Engine::Impl::until_discovery_lists_version(std::size_t index) {
  Slot& slot = slots[index];
  if (!slot.resolve_error || slot.resolve_error->kind != ErrorKind::not_found) {
    co_return;
  }
  if (!crd_versions.awaits_discovery(slot.ref.gvk)) {
    co_return;
  }
  auto listed = co_await crd_versions.until_discovery_lists(slot.ref.gvk);
  if (!listed.ok()) {
    slot.resolve_error = listed.error();
    co_return;
  }
  co_await resolve(index);  // (found in what discovery answered: no request)
  slot.result.name = slot.ref.display();
}

// Test mode: this run's update of the CRD adds the version this custom resource
// uses, so the server can neither read nor validate it in that version yet: it is
// checked against that version's schema here, and shown whole, as it would be applied.
void Engine::Impl::version_added_by_update(std::size_t index, const json::Value& crd) {
  Slot& slot = slots[index];
  name_custom_resource(index, crd);
  const std::string& version = slot.ref.gvk.version;
  std::string crd_name = string_at(crd, {"metadata", "name"});
  std::string not_yet = "version " + version + " is only served once this run updates CustomResourceDefinition " +
                        crd_name + "; the live object was not read";
  auto schema = crd_version_schema(crd, version);
  if (!schema.ok()) {
    fail(index, schema.error().message + " (checked locally: " + not_yet + ")");
    return;
  }
  json::Document desired = desired_object(index, states[index].function != Function::object_updated);
  std::string violations;
  if (*schema != nullptr) {
    for (const auto& violation : validate_against_schema(desired, **schema)) {
      violations += "\n  " + violation.message;
    }
  }
  if (!violations.empty()) {
    fail(index, "invalid against the schema of version " + version + " of CustomResourceDefinition " + crd_name +
                    " (checked locally: " + not_yet + "):" + violations);
    return;
  }
  changed(index, Change::applied, object_diff(json::Value(), desired, diff_label(slot.ref)));
  slot.result.comment = std::string("would be applied; ") +
                        (*schema != nullptr ? "validated locally against the schema of version " + version +
                                                  " of CustomResourceDefinition " + crd_name
                                            : "not validated (version " + version + " has no schema)") +
                        " (server validation skipped: " + not_yet + ")";
}

// An object_absent names its custom resource in a version this run's update of the
// CRD adds (and serves), which discovery does not list: in test mode because the
// update was a dry run, in real mode because the API server's discovery lists a
// CRD's new versions a moment after the update. The object is the same in every
// version of its kind, so it may well exist: it is read (one GET, not a pair's LIST,
// which may have been selected by kstate's labels), and deleted (test mode: dryRun),
// through another version the server serves now. A version the update does not serve
// is not there after the apply either: that state finds its kind absent.
// `dry_run_crd`: `crd` is test mode's dry-run answer for this run's update, which the
// server does not run yet; otherwise it is (or will be, moments after this run's
// update) the CRD the server runs.
asio::awaitable<void> Engine::Impl::absent_in_version_added_by_update(std::size_t index, const json::Value& crd,
                                                                      bool dry_run_crd) {
  Slot& slot = slots[index];
  const GroupVersionKind named = slot.ref.gvk;
  const std::string crd_name = string_at(crd, {"metadata", "name"});
  const json::Value* versions = json::find_path(crd, {"spec", "versions"});
  if (versions == nullptr || !versions->IsArray() || !CrdVersions::serves_version(crd, named.version)) {
    succeed(index, "already absent (the server has no kind " + named.qualified_kind() + ")");
    co_return;
  }
  for (const auto& version : versions->GetArray()) {
    const std::string name = string_at(version, {"name"});
    // Only a version the CRD serves: the API server's handler may stop serving one
    // (served: false) before its discovery stops listing it, and a 404 from a version
    // no longer served is not an absent object. A dry-run answer is not run yet: the
    // server runs the CRD as it is now, so any version it lists reads the object.
    if (name.empty() || name == named.version || (!dry_run_crd && !CrdVersions::serves_version(crd, name))) {
      continue;
    }
    GroupVersionKind served{named.group, name, named.kind};
    auto resource = co_await resolver.resolve(served);
    if (!resource.ok() && resource.error().kind == ErrorKind::not_found) {
      continue;
    }
    if (!resource.ok()) {
      fail(index, resource.error().describe());
      co_return;
    }
    slot.resource = std::make_shared<const ApiResource>(std::move(resource).value());
    slot.resolve_error.reset();
    name_custom_resource(index, crd);
    const bool fresh = true;
    co_await absent(index, fresh);
    slot.result.comment += dry_run_crd ? " (read through version " + name + ": version " + named.version +
                                             " is only served once this run updates "
                                             "CustomResourceDefinition " +
                                             crd_name + ")"
                                       : " (through version " + name + ": version " + named.version +
                                             ", which CustomResourceDefinition " + crd_name +
                                             " serves, is not in discovery yet)";
    co_return;
  }
  if (!dry_run_crd) {
    // The object may well exist, stored in another version: never "already absent".
    fail(index, "version " + named.version + " of kind " + named.qualified_kind() +
                    " is not in the API server's discovery yet, nor any other version CustomResourceDefinition " +
                    crd_name + " serves: run again once it lists it");
    co_return;
  }
  succeed(index, "already absent (the server serves no version of kind " + named.qualified_kind() +
                     " that this run's CustomResourceDefinition " + crd_name + " keeps)");
}

// Test mode: the CRD of this custom resource is only created by this run, so the
// server cannot validate it: check it against the CRD's schema here instead.
asio::awaitable<void> Engine::Impl::pending_custom_resource(std::size_t index, const json::Value& crd) {
  Slot& slot = slots[index];
  State& state = states[index];
  std::string crd_name = string_at(crd, {"metadata", "name"});
  name_custom_resource(index, crd);
  std::string not_yet = "CustomResourceDefinition " + crd_name + " does not exist yet";
  if (state.function == Function::object_updated) {
    if (pending_objects.count(slot.ref.display()) == 0) {
      fail(index, slot.ref.display() + " does not exist (" + not_yet + ")");
    } else {
      co_await would_update_created(index);
    }
    co_return;
  }
  json::Document desired = desired_object(index);
  auto schema = crd_version_schema(crd, slot.ref.gvk.version);
  if (!schema.ok()) {
    fail(index, schema.error().message + " (checked locally: " + not_yet + ")");
    co_return;
  }
  std::string violations;
  if (*schema != nullptr) {
    for (const auto& violation : validate_against_schema(desired, **schema)) {
      violations += "\n  " + violation.message;
    }
  }
  if (!violations.empty()) {
    fail(index, "invalid against the schema of CustomResourceDefinition " + crd_name + " (checked locally: " + not_yet +
                    "):" + violations);
    co_return;
  }
  changed(index, Change::created, object_diff(json::Value(), desired, diff_label(slot.ref)));
  slot.result.comment =
      *schema != nullptr
          ? "would be created; validated locally against the schema of CustomResourceDefinition " + crd_name +
                " (server validation skipped because it does not exist yet)"
          : "would be created; server validation skipped because " + not_yet + " (it has no schema to check)";
  pending_objects.insert(slot.ref.display());
}

// Test mode: the object this object_updated changes is only created by this run, so
// the server cannot check the update: its fields are checked locally (not for
// completeness: it names only those it changes).
asio::awaitable<void> Engine::Impl::would_update_created(std::size_t index) {
  Slot& slot = slots[index];
  json::Document desired = desired_object(index, false);
  const std::string not_yet = slot.ref.display() + " does not exist yet";
  LocalCheck check = co_await check_locally(index, desired, not_yet, Completeness::fields_only);
  if (check.outcome == LocalCheck::Outcome::invalid) {
    fail(index, check.text);
    co_return;
  }
  changed(index, Change::updated, object_diff(json::Value(), desired, diff_label(slot.ref)));
  slot.result.comment = "would be updated once this run creates it; " + check.text +
                        " (server validation skipped because " + not_yet + ")";
}

}  // namespace kstate::states
