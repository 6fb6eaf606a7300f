// The cluster's controllers (see controllers.hpp). Each acts through
// ApiServer::route with a controller's identity and User-Agent, so its writes are
// answered, versioned and recorded (managedFields, watch events) like a client's.
#include "tests/emulator/controllers.hpp"

#include <algorithm>
#include <vector>

#include "tests/emulator/api_server.hpp"

namespace kstate::emulator {

namespace {

using json::Allocator;
using json::Document;
using json::string_at;
using json::Value;

const char* const kRootCaDescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters.";
const char* const kCrdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io";

std::int64_t integer_at(const Value& object, std::initializer_list<std::string_view> path) {
  const Value* value = json::find_path(object, path);
  return value != nullptr && value->IsInt64() ? value->GetInt64() : 0;
}

bool being_deleted(const Value& object) {
  return json::find_path(object, {"metadata", "deletionTimestamp"}) != nullptr;
}

bool has_finalizer(const Value& object, std::string_view finalizer) {
  const Value* finalizers = json::find_path(object, {"metadata", "finalizers"});
  return finalizers != nullptr && finalizers->IsArray() &&
         std::any_of(finalizers->Begin(), finalizers->End(), [&](const Value& value) {
           return value.IsString() && std::string_view(value.GetString(), value.GetStringLength()) == finalizer;
         });
}

// The object without one of its finalizers.
Document without_finalizer(const Value& object, std::string_view finalizer) {
  Document copy = json::copy(object);
  if (Value* finalizers = json::find(*json::find(copy, "metadata"), "finalizers");
      finalizers != nullptr && finalizers->IsArray()) {
    for (auto it = finalizers->Begin(); it != finalizers->End();) {
      it = it->IsString() && std::string_view(it->GetString(), it->GetStringLength()) == finalizer
               ? finalizers->Erase(it)
               : it + 1;
    }
  }
  return copy;
}

std::vector<std::string> owner_uids(const Value& object) {
  std::vector<std::string> uids;
  if (const Value* references = json::find_path(object, {"metadata", "ownerReferences"});
      references != nullptr && references->IsArray()) {
    for (const auto& reference : references->GetArray()) {
      uids.push_back(string_at(reference, {"uid"}));
    }
  }
  return uids;
}

// "<group>/<plural>/<namespace>/<name>" -> its parts.
struct KeyParts {
  std::string group;
  std::string plural;
  std::string namespace_name;
  std::string name;
};

KeyParts split_key(const std::string& key) {
  auto first = key.find('/');
  auto second = key.find('/', first + 1);
  auto third = key.find('/', second + 1);
  return {key.substr(0, first), key.substr(first + 1, second - first - 1), key.substr(second + 1, third - second - 1),
          key.substr(third + 1)};
}

std::string path_of(const ResourceType& type, const std::string& namespace_name, const std::string& name) {
  std::string path = type.group.empty() ? "/api/" + type.version : "/apis/" + type.group + "/" + type.version;
  if (type.namespaced) {
    path += "/namespaces/" + namespace_name;
  }
  return path + "/" + type.plural + (name.empty() ? "" : "/" + name);
}

// A condition list entry; lastTransitionTime moves only when the status changes.
Value condition(const Value* previous, const std::string& type, const std::string& status, const std::string& reason,
                const std::string& message, const std::string& now, Allocator& allocator) {
  Value item(rapidjson::kObjectType);
  json::set_string(item, "type", type, allocator);
  json::set_string(item, "status", status, allocator);
  std::string since = now;
  if (previous != nullptr && previous->IsArray()) {
    for (const auto& old : previous->GetArray()) {
      if (string_at(old, {"type"}) == type && string_at(old, {"status"}) == status) {
        since = string_at(old, {"lastTransitionTime"});
      }
    }
  }
  json::set_string(item, "lastTransitionTime", since, allocator);
  json::set_string(item, "reason", reason, allocator);
  json::set_string(item, "message", message, allocator);
  return item;
}

// Go's rand.SafeEncodeString of the FNV-32a hash of the pod template: the suffix of a
// Deployment's ReplicaSet names ("web-5c78f69c86").
std::string pod_template_hash(const std::string& template_json) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : template_json) {
    hash ^= c;
    hash *= 16777619u;
  }
  static const std::string alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string digits = std::to_string(hash);
  for (auto& c : digits) {
    c = alphabet[static_cast<unsigned char>(c) % alphabet.size()];
  }
  return digits;
}

// maxUnavailable of a RollingUpdate Deployment, resolved against its replicas (25% by default, rounded down).
std::int64_t max_unavailable(const Value& deployment, std::int64_t replicas) {
  const Value* value = json::find_path(deployment, {"spec", "strategy", "rollingUpdate", "maxUnavailable"});
  if (string_at(deployment, {"spec", "strategy", "type"}) == "Recreate") {
    return replicas;
  }
  if (value != nullptr && value->IsInt64()) {
    return value->GetInt64();
  }
  std::string text = value != nullptr && value->IsString() ? value->GetString() : "25%";
  if (!text.empty() && text.back() == '%') {
    return replicas * std::atoll(text.c_str()) / 100;
  }
  return std::atoll(text.c_str());
}

}  // namespace

void Controllers::run(TimePoint now) {
  for (int round = 0; round < 20; ++round) {
    observe(now);
    if (!act(now) && api_.store_.current_version() == seen_) {
      return;
    }
  }
}

void Controllers::observe(TimePoint now) {
  Store& store = api_.store_;
  if (!resync_ && seen_ >= store.oldest_watchable()) {
    for (const WatchEvent* event : store.events_after(seen_)) {
      std::string key = event->prefix + event->namespace_name + "/" + string_at(*event->object, {"metadata", "name"});
      look_at(key, *event->object, event->type == "DELETED", now);
    }
  } else {
    // Like an informer after a restart (or after its watch fell behind): everything anew.
    keys_by_uid_.clear();
    dependents_.clear();
    for (const auto& [key, object] : store.all()) {
      look_at(key, *object, false, now);
    }
    resync_ = false;
  }
  seen_ = store.current_version();
}

void Controllers::look_at(const std::string& key, const Value& object, bool deleted, TimePoint now) {
  const KeyParts parts = split_key(key);
  const std::string uid = string_at(object, {"metadata", "uid"});
  const std::size_t garbage_before = garbage_candidates_.size() + finalizing_.size();
  // The garbage collector's graph.
  if (deleted) {
    keys_by_uid_.erase(uid);
    for (const auto& owner : owner_uids(object)) {
      dependents_[owner].erase(key);
    }
    if (auto found = dependents_.find(uid); found != dependents_.end()) {
      garbage_candidates_.insert(found->second.begin(), found->second.end());
    }
  } else {
    keys_by_uid_[uid] = key;
    auto owners = owner_uids(object);
    for (const auto& owner : owners) {
      dependents_[owner].insert(key);
      if (keys_by_uid_.count(owner) == 0) {
        garbage_candidates_.insert(key);
      }
    }
    if (being_deleted(object) && (has_finalizer(object, "orphan") || has_finalizer(object, "foregroundDeletion"))) {
      finalizing_.insert(key);
    }
  }
  // A dependent gone may let a foreground owner finish.
  if (deleted && !finalizing_.empty()) {
    for (const auto& owner : owner_uids(object)) {
      if (auto found = keys_by_uid_.find(owner); found != keys_by_uid_.end()) {
        finalizing_.insert(found->second);
      }
    }
  }

  if (garbage_candidates_.size() + finalizing_.size() != garbage_before) {
    const TimePoint when = now + options_.garbage_collector_delay;
    garbage_due_ = garbage_due_ ? std::min(*garbage_due_, when) : when;
  }

  if (parts.group.empty() && parts.plural == "namespaces") {
    const std::string& ns = parts.name;
    if (deleted) {
      namespace_defaults_due_.erase(ns);
      namespace_deletion_due_.erase(ns);
    } else if (being_deleted(object)) {
      namespace_defaults_due_.erase(ns);
      namespace_deletion_due_.emplace(ns, now + options_.namespace_deletion_delay);
    } else if (options_.namespace_defaults) {
      namespace_defaults_due_.emplace(ns, now + options_.namespace_defaults_delay);
    }
    return;
  }
  if (parts.group.empty() && options_.namespace_defaults &&
      ((parts.plural == "serviceaccounts" && parts.name == "default") ||
       (parts.plural == "configmaps" && parts.name == "kube-root-ca.crt"))) {
    // Put back what a client removed or changed: on the next tick, or after the delay.
    auto delay = std::max(options_.namespace_defaults_delay, std::chrono::milliseconds(1));
    namespace_defaults_due_.emplace(parts.namespace_name, now + delay);
    return;
  }
  if (parts.group == "apps" && parts.plural == "deployments" && options_.deployment_controller) {
    if (deleted) {
      deployments_due_.erase(key);
      deployment_templates_.erase(uid);
      return;
    }
    const Value* template_spec = json::find_path(object, {"spec", "template"});
    const bool template_changed = template_spec != nullptr && deployment_templates_.count(uid) != 0 &&
                                  deployment_templates_[uid] != json::dump(*template_spec);
    const bool stale =
        integer_at(object, {"status", "observedGeneration"}) < integer_at(object, {"metadata", "generation"});
    const bool unrevised =
        json::find_path(object, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == nullptr;
    if (!being_deleted(object) && (stale || unrevised || template_changed)) {
      deployments_due_.emplace(key, now + options_.deployment_delay);
    }
    return;
  }
  if (parts.group == "batch" && parts.plural == "jobs" && options_.job_controller) {
    const Value* suspend = json::find_path(object, {"spec", "suspend"});
    const bool suspended = suspend != nullptr && suspend->IsBool() && suspend->GetBool();
    if (deleted) {
      jobs_due_.erase(key);
    } else if (!being_deleted(object) && !suspended && json::find_path(object, {"status", "startTime"}) == nullptr) {
      jobs_due_.emplace(key, now + options_.job_delay);
    }
    return;
  }
  if (parts.group == "apiextensions.k8s.io" && parts.plural == "customresourcedefinitions") {
    const std::string& name = parts.name;
    if (deleted) {
      crd_establish_due_.erase(name);
      crd_updates_due_.erase(name);
      crd_cleanup_.erase(name);
      crd_served_generation_.erase(name);
      return;
    }
    bool established = false;
    if (const Value* conditions = json::find_path(object, {"status", "conditions"});
        conditions != nullptr && conditions->IsArray()) {
      for (const auto& item : conditions->GetArray()) {
        established =
            established || (string_at(item, {"type"}) == "Established" && string_at(item, {"status"}) == "True");
      }
    }
    if (being_deleted(object)) {
      crd_establish_due_.erase(name);
      if (has_finalizer(object, kCrdCleanupFinalizer)) {
        crd_cleanup_.emplace(name, CrdCleanup{now + options_.crd_deletion_delay, 1});
      }
    } else if (!established) {
      crd_establish_due_.emplace(name, now + options_.crd_establish_delay);
    } else if (crd_served_generation_.count(name) == 0 ||
               crd_served_generation_[name] != integer_at(object, {"metadata", "generation"})) {
      if (crd_served_generation_.count(name) == 0) {
        // Established before this controller looked (a restart): served as it is.
        crd_updates_due_[name] = now;
      } else {
        crd_updates_due_.emplace(name, now + options_.crd_update_delay);
      }
    }
  }
}

bool Controllers::act(TimePoint now) {
  bool acted = false;
  auto due = [&](auto& schedule) {
    std::vector<std::string> ready;
    for (const auto& [name, when] : schedule) {
      if (when <= now) {
        ready.push_back(name);
      }
    }
    for (const auto& name : ready) {
      schedule.erase(name);
    }
    acted = acted || !ready.empty();
    return ready;
  };
  for (const auto& name : due(crd_establish_due_)) {
    establish_crd(name, now);
  }
  for (const auto& name : due(crd_updates_due_)) {
    auto crd = api_.store_.get(object_key("apiextensions.k8s.io", "customresourcedefinitions", "", name));
    if (crd) {
      api_.serve_crd(*crd);
      crd_served_generation_[name] = integer_at(*crd, {"metadata", "generation"});
    }
  }
  std::vector<std::string> cleanups;
  for (const auto& [name, cleanup] : crd_cleanup_) {
    if (cleanup.when <= now) {
      cleanups.push_back(name);
    }
  }
  for (const auto& name : cleanups) {
    acted = true;
    CrdCleanup& cleanup = crd_cleanup_[name];
    if (clean_up_crd(name, cleanup.phase)) {
      if (cleanup.phase == 1) {
        cleanup = {now + options_.crd_deletion_delay, 2};
      } else {
        crd_cleanup_.erase(name);
      }
    } else {
      cleanup.when = now + std::max(options_.crd_deletion_delay, std::chrono::milliseconds(1));
    }
  }
  for (const auto& ns : due(namespace_defaults_due_)) {
    ensure_namespace_defaults(ns);
  }
  for (const auto& ns : due(namespace_deletion_due_)) {
    if (!terminate_namespace(ns, now)) {
      namespace_deletion_due_[ns] = now + options_.namespace_recheck_interval;
    }
  }
  for (const auto& key : due(deployments_due_)) {
    sync_deployment(key, now);
  }
  for (const auto& key : due(jobs_due_)) {
    start_job(key, now);
  }
  if (garbage_due_ && *garbage_due_ <= now) {
    garbage_due_.reset();
    if (collect_garbage()) {
      acted = true;
    }
    if (!finalizing_.empty()) {
      // Foreground owners wait for their dependents: looked at again next time.
      garbage_due_ = now + options_.garbage_collector_delay;
    }
  }
  return acted;
}

// ---- serviceaccount controller and root-ca-cert-publisher ----------------------------------

void Controllers::ensure_namespace_defaults(const std::string& ns) {
  auto namespace_object = api_.store_.get(object_key("", "namespaces", "", ns));
  if (!namespace_object || being_deleted(*namespace_object)) {
    return;  // nothing new goes into a terminating namespace
  }
  if (!api_.store_.get(object_key("", "serviceaccounts", ns, "default"))) {
    api_.controller_request("POST", "/api/v1/namespaces/" + ns + "/serviceaccounts",
                            R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}})",
                            "kube-controller-manager");
  }
  const std::string& pem = api_.options_.root_ca_pem;
  if (pem.empty()) {
    return;
  }
  auto bundle = api_.store_.get(object_key("", "configmaps", ns, "kube-root-ca.crt"));
  if (bundle) {
    // The publisher puts its data back (and its description), keeping the rest.
    const Value* data = json::find(*bundle, "data");
    const Value* description = json::find_path(*bundle, {"metadata", "annotations", "kubernetes.io/description"});
    const bool intact = data != nullptr && data->IsObject() && data->MemberCount() == 1 &&
                        string_at(*data, {"ca.crt"}) == pem && description != nullptr;
    if (intact) {
      return;
    }
    Document reset = json::copy(*bundle);
    auto& allocator = reset.GetAllocator();
    Value fresh_data(rapidjson::kObjectType);
    json::set_string(fresh_data, "ca.crt", pem, allocator);
    json::set(reset, "data", std::move(fresh_data), allocator);  // (binaryData is left as it is)
    Value& annotations =
        json::ensure_object(json::ensure_object(reset, "metadata", allocator), "annotations", allocator);
    if (json::find(annotations, "kubernetes.io/description") == nullptr) {
      json::set_string(annotations, "kubernetes.io/description", kRootCaDescription, allocator);
    }
    api_.controller_request("PUT", "/api/v1/namespaces/" + ns + "/configmaps/kube-root-ca.crt", json::dump(reset),
                            "kube-controller-manager");
    return;
  }
  Document config_map(rapidjson::kObjectType);
  auto& allocator = config_map.GetAllocator();
  json::set_string(config_map, "apiVersion", "v1", allocator);
  json::set_string(config_map, "kind", "ConfigMap", allocator);
  Value& metadata = json::ensure_object(config_map, "metadata", allocator);
  json::set_string(metadata, "name", "kube-root-ca.crt", allocator);
  json::set_string(json::ensure_object(metadata, "annotations", allocator), "kubernetes.io/description",
                   kRootCaDescription, allocator);
  json::set_string(json::ensure_object(config_map, "data", allocator), "ca.crt", pem, allocator);
  api_.controller_request("POST", "/api/v1/namespaces/" + ns + "/configmaps", json::dump(config_map),
                          "kube-controller-manager");
}

// ---- namespace controller ------------------------------------------------------------------------

bool Controllers::terminate_namespace(const std::string& ns, TimePoint now) {
  const std::string namespace_key = object_key("", "namespaces", "", ns);
  auto namespace_object = api_.store_.get(namespace_key);
  if (!namespace_object || !being_deleted(*namespace_object)) {
    return true;
  }
  // Delete everything in it (objects with finalizers stay, marked), then count what remains.
  std::vector<const ResourceType*> types;
  for (const auto* type : api_.catalog_.all()) {
    if (type->namespaced) {
      types.push_back(type);
    }
  }
  for (const auto* type : types) {
    for (const auto& [key, object] : api_.store_.range(collection_prefix(type->group, type->plural) + ns + "/")) {
      if (!being_deleted(*object)) {
        api_.controller_request(
            "DELETE", path_of(*type, ns, string_at(*object, {"metadata", "name"})) + "?propagationPolicy=Background",
            "", "kube-controller-manager");
      }
    }
  }
  std::map<std::string, int> remaining;   // "<plural>.<group>" -> objects
  std::map<std::string, int> finalizers;  // finalizer -> objects holding it
  std::set<std::string> counted;
  for (const auto* type : types) {
    const std::string prefix = collection_prefix(type->group, type->plural);
    if (!counted.insert(prefix).second) {
      continue;  // one storage for all versions of a kind
    }
    for (const auto& [key, object] : api_.store_.range(prefix + ns + "/")) {
      ++remaining[type->plural + "." + type->group];
      if (const Value* list = json::find_path(*object, {"metadata", "finalizers"});
          list != nullptr && list->IsArray()) {
        for (const auto& finalizer : list->GetArray()) {
          if (finalizer.IsString()) {
            ++finalizers[finalizer.GetString()];
          }
        }
      }
    }
  }
  auto join = [](const std::map<std::string, int>& counts, const char* format_between) {
    std::string text;
    for (const auto& [name, count] : counts) {
      text += (text.empty() ? "" : ", ") + name + format_between + std::to_string(count) + " resource instances";
    }
    return text;
  };
  // status.conditions as kube-controller-manager reports them (recording 76).
  Document updated = json::copy(*namespace_object);
  auto& allocator = updated.GetAllocator();
  Value& status = json::ensure_object(updated, "status", allocator);
  const Value* previous = json::find(status, "conditions");
  Document previous_copy = previous != nullptr ? json::copy(*previous) : Document();
  const std::string stamp = api_.now_rfc3339();
  Value conditions(rapidjson::kArrayType);
  conditions.PushBack(condition(&previous_copy, "NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered",
                                "All resources successfully discovered", stamp, allocator),
                      allocator);
  conditions.PushBack(condition(&previous_copy, "NamespaceDeletionGroupVersionParsingFailure", "False",
                                "ParsedGroupVersions", "All legacy kube types successfully parsed", stamp, allocator),
                      allocator);
  conditions.PushBack(condition(&previous_copy, "NamespaceDeletionContentFailure", "False", "ContentDeleted",
                                "All content successfully deleted, may be waiting on finalization", stamp, allocator),
                      allocator);
  conditions.PushBack(remaining.empty()
                          ? condition(&previous_copy, "NamespaceContentRemaining", "False", "ContentRemoved",
                                      "All content successfully removed", stamp, allocator)
                          : condition(&previous_copy, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                                      "Some resources are remaining: " + join(remaining, " has "), stamp, allocator),
                      allocator);
  conditions.PushBack(
      finalizers.empty()
          ? condition(&previous_copy, "NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
                      "All content-preserving finalizers finished", stamp, allocator)
          : condition(&previous_copy, "NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                      "Some content in the namespace has finalizers remaining: " + join(finalizers, " in "), stamp,
                      allocator),
      allocator);
  if (previous_copy.IsNull() || previous_copy != conditions) {
    json::set(status, "conditions", std::move(conditions), allocator);
    api_.controller_request("PUT", "/api/v1/namespaces/" + ns + "/status", json::dump(updated),
                            "kube-controller-manager");
  }
  (void)now;
  if (!remaining.empty()) {
    return false;
  }
  // Empty: the controller's finalizer goes, and with it (no other) the namespace.
  auto current = api_.store_.get(namespace_key);
  if (!current) {
    return true;
  }
  Document finalized = json::copy(*current);
  if (Value* spec_finalizers = json::find_path(finalized, {"spec", "finalizers"}) == nullptr
                                   ? nullptr
                                   : json::find(*json::find(finalized, "spec"), "finalizers");
      spec_finalizers != nullptr && spec_finalizers->IsArray()) {
    for (auto it = spec_finalizers->Begin(); it != spec_finalizers->End();) {
      it = it->IsString() && std::string_view(it->GetString()) == "kubernetes" ? spec_finalizers->Erase(it) : it + 1;
    }
  }
  api_.controller_request("PUT", "/api/v1/namespaces/" + ns + "/finalize", json::dump(finalized),
                          "kube-controller-manager");
  return true;
}

// ---- Deployment controller -----------------------------------------------------------------------

void Controllers::sync_deployment(const std::string& key, TimePoint now) {
  auto object = api_.store_.get(key);
  if (!object || being_deleted(*object)) {
    return;
  }
  (void)now;
  const KeyParts parts = split_key(key);
  const std::string uid = string_at(*object, {"metadata", "uid"});
  const Value* template_spec = json::find_path(*object, {"spec", "template"});
  const std::string template_json = template_spec != nullptr ? json::dump(*template_spec) : "";
  Document updated = json::copy(*object);
  auto& allocator = updated.GetAllocator();
  Value& annotations =
      json::ensure_object(json::ensure_object(updated, "metadata", allocator), "annotations", allocator);
  std::int64_t revision = std::atoll(string_at(annotations, {"deployment.kubernetes.io/revision"}).c_str());
  if (revision == 0) {
    revision = 1;
  } else if (deployment_templates_.count(uid) != 0 && deployment_templates_[uid] != template_json) {
    ++revision;  // a new pod template is a new ReplicaSet, a new revision
  }
  deployment_templates_[uid] = template_json;
  json::set_string(annotations, "deployment.kubernetes.io/revision", std::to_string(revision), allocator);

  // No nodes run Pods here: every replica is created, none becomes available.
  const Value* wanted = json::find_path(*object, {"spec", "replicas"});
  const std::int64_t replicas = wanted != nullptr && wanted->IsInt64() ? wanted->GetInt64() : 1;
  const bool available = replicas - max_unavailable(*object, replicas) <= 0;
  const std::string replica_set = parts.name + "-" + pod_template_hash(template_json);
  const Value* old_status = json::find(*object, "status");
  const Value* previous = old_status != nullptr ? json::find(*old_status, "conditions") : nullptr;
  Document previous_copy = previous != nullptr ? json::copy(*previous) : Document();
  const std::string stamp = api_.now_rfc3339();
  Value status(rapidjson::kObjectType);
  json::set(status, "observedGeneration", Value(integer_at(*object, {"metadata", "generation"})), allocator);
  if (replicas > 0) {
    json::set(status, "replicas", Value(replicas), allocator);
    json::set(status, "updatedReplicas", Value(replicas), allocator);
    json::set(status, "unavailableReplicas", Value(replicas), allocator);
  }
  Value conditions(rapidjson::kArrayType);
  Value available_condition = available ? condition(&previous_copy, "Available", "True", "MinimumReplicasAvailable",
                                                    "Deployment has minimum availability.", stamp, allocator)
                                        : condition(&previous_copy, "Available", "False", "MinimumReplicasUnavailable",
                                                    "Deployment does not have minimum availability.", stamp, allocator);
  Value progressing = condition(&previous_copy, "Progressing", "True", "ReplicaSetUpdated",
                                "ReplicaSet \"" + replica_set + "\" is progressing.", stamp, allocator);
  for (Value* item : {&available_condition, &progressing}) {
    // Deployment conditions also say when they were last updated (recording 32).
    Value ordered(rapidjson::kObjectType);
    json::set(ordered, "type", Value((*item)["type"], allocator), allocator);
    json::set(ordered, "status", Value((*item)["status"], allocator), allocator);
    json::set_string(ordered, "lastUpdateTime", stamp, allocator);
    json::set(ordered, "lastTransitionTime", Value((*item)["lastTransitionTime"], allocator), allocator);
    json::set(ordered, "reason", Value((*item)["reason"], allocator), allocator);
    json::set(ordered, "message", Value((*item)["message"], allocator), allocator);
    conditions.PushBack(std::move(ordered), allocator);
  }
  json::set(status, "conditions", std::move(conditions), allocator);
  json::set(updated, "status", std::move(status), allocator);
  const ResourceType* type = api_.catalog_.find("apps", "v1", "deployments");
  api_.controller_request("PUT", path_of(*type, parts.namespace_name, parts.name) + "/status", json::dump(updated),
                          "kube-controller-manager");
}

// ---- Job controller ----------------------------------------------------------------------------------

void Controllers::start_job(const std::string& key, TimePoint now) {
  auto object = api_.store_.get(key);
  if (!object || being_deleted(*object) || json::find_path(*object, {"status", "startTime"}) != nullptr) {
    return;
  }
  (void)now;
  const KeyParts parts = split_key(key);
  Document updated = json::copy(*object);
  auto& allocator = updated.GetAllocator();
  const Value* parallelism = json::find_path(*object, {"spec", "parallelism"});
  Value status(rapidjson::kObjectType);
  json::set_string(status, "startTime", api_.now_rfc3339(), allocator);
  json::set(status, "active", Value(parallelism != nullptr && parallelism->IsInt64() ? parallelism->GetInt64() : 1),
            allocator);
  json::set(status, "terminating", Value(0), allocator);
  json::set(status, "uncountedTerminatedPods", Value(rapidjson::kObjectType), allocator);
  json::set(status, "ready", Value(0), allocator);
  json::set(updated, "status", std::move(status), allocator);
  const ResourceType* type = api_.catalog_.find("batch", "v1", "jobs");
  api_.controller_request("PUT", path_of(*type, parts.namespace_name, parts.name) + "/status", json::dump(updated),
                          "kube-controller-manager");
}

// ---- CRDs --------------------------------------------------------------------------------------------

void Controllers::establish_crd(const std::string& name, TimePoint now) {
  auto crd = api_.store_.get(object_key("apiextensions.k8s.io", "customresourcedefinitions", "", name));
  if (!crd || being_deleted(*crd)) {
    return;
  }
  // The naming and establishing controllers: both conditions and the accepted names at
  // once, written through the status subresource (recording 61).
  Document updated = json::copy(*crd);
  auto& allocator = updated.GetAllocator();
  Value& status = json::ensure_object(updated, "status", allocator);
  const std::string stamp = api_.now_rfc3339();
  Value conditions(rapidjson::kArrayType);
  conditions.PushBack(
      condition(nullptr, "NamesAccepted", "True", "NoConflicts", "no conflicts found", stamp, allocator), allocator);
  conditions.PushBack(condition(nullptr, "Established", "True", "InitialNamesAccepted",
                                "the initial names have been accepted", stamp, allocator),
                      allocator);
  json::set(status, "conditions", std::move(conditions), allocator);
  if (const Value* names = json::find_path(updated, {"spec", "names"}); names != nullptr) {
    json::set(status, "acceptedNames", Value(*names, allocator), allocator);
  }
  api_.controller_request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name + "/status",
                          json::dump(updated), "kube-apiserver");
  if (auto stored = api_.store_.get(object_key("apiextensions.k8s.io", "customresourcedefinitions", "", name))) {
    api_.serve_crd(*stored);
    api_.crd_established_at_[name] = now;
    crd_served_generation_[name] = integer_at(*stored, {"metadata", "generation"});
  }
}

bool Controllers::clean_up_crd(const std::string& name, int phase) {
  const std::string key = object_key("apiextensions.k8s.io", "customresourcedefinitions", "", name);
  auto crd = api_.store_.get(key);
  if (!crd || !being_deleted(*crd)) {
    return true;
  }
  const std::string group = string_at(*crd, {"spec", "group"});
  const std::string plural = string_at(*crd, {"spec", "names", "plural"});
  if (phase == 1) {
    Document updated = json::copy(*crd);
    auto& allocator = updated.GetAllocator();
    if (Value* conditions = json::find_path(updated, {"status", "conditions"}) == nullptr
                                ? nullptr
                                : json::find(*json::find(updated, "status"), "conditions");
        conditions != nullptr && conditions->IsArray()) {
      for (auto& item : conditions->GetArray()) {
        if (string_at(item, {"type"}) == "Terminating") {
          json::set_string(item, "reason", "InstanceDeletionInProgress", allocator);
          json::set_string(item, "message", "CustomResource deletion is in progress", allocator);
        }
      }
    }
    api_.controller_request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name + "/status",
                            json::dump(updated), "kube-apiserver");
    return true;
  }
  // Every custom resource of the CRD goes (all versions share one storage).
  const ResourceType* type = nullptr;
  for (const auto* candidate : api_.catalog_.all()) {
    if (candidate->custom && candidate->group == group && candidate->plural == plural) {
      type = candidate;
    }
  }
  bool remaining = false;
  for (const auto& [object_key_text, object] : api_.store_.range(collection_prefix(group, plural))) {
    remaining = true;
    if (type != nullptr && !being_deleted(*object)) {
      api_.controller_request(
          "DELETE",
          path_of(*type, string_at(*object, {"metadata", "namespace"}), string_at(*object, {"metadata", "name"})) +
              "?propagationPolicy=Background",
          "", "kube-apiserver");
    }
  }
  if (remaining && !api_.store_.range(collection_prefix(group, plural)).empty()) {
    return false;
  }
  api_.stop_serving_crd(name);
  if (auto current = api_.store_.get(key)) {
    api_.controller_request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name,
                            json::dump(without_finalizer(*current, kCrdCleanupFinalizer)), "kube-apiserver");
  }
  return true;
}

// ---- garbage collector ---------------------------------------------------------------------------

bool Controllers::collect_garbage() {
  bool acted = false;
  auto send_update = [&](const std::string& key, const Document& object) {
    const KeyParts parts = split_key(key);
    if (const ResourceType* type = api_.type_of_key(key)) {
      api_.controller_request("PUT", path_of(*type, parts.namespace_name, parts.name), json::dump(object),
                              "kube-controller-manager");
    }
  };
  auto send_delete = [&](const std::string& key, const char* policy) {
    const KeyParts parts = split_key(key);
    if (const ResourceType* type = api_.type_of_key(key)) {
      api_.controller_request("DELETE",
                              path_of(*type, parts.namespace_name, parts.name) + "?propagationPolicy=" + policy, "",
                              "kube-controller-manager");
    }
  };
  // Dependents whose owners are all gone (background deletion).
  std::set<std::string> candidates;
  candidates.swap(garbage_candidates_);
  for (const auto& key : candidates) {
    auto object = api_.store_.get(key);
    if (!object || being_deleted(*object)) {
      continue;
    }
    auto owners = owner_uids(*object);
    if (!owners.empty() && std::none_of(owners.begin(), owners.end(),
                                        [&](const std::string& uid) { return keys_by_uid_.count(uid) != 0; })) {
      send_delete(key, "Background");
      acted = true;
    }
  }
  // Owners held by the collector's finalizers.
  std::set<std::string> owners;
  owners.swap(finalizing_);
  for (const auto& key : owners) {
    auto object = api_.store_.get(key);
    if (!object || !being_deleted(*object)) {
      continue;
    }
    const std::string uid = string_at(*object, {"metadata", "uid"});
    std::vector<std::string> present;
    if (auto found = dependents_.find(uid); found != dependents_.end()) {
      for (const auto& dependent : found->second) {
        if (api_.store_.get(dependent)) {
          present.push_back(dependent);
        }
      }
    }
    if (has_finalizer(*object, "orphan")) {
      // Orphan: the dependents lose their reference to the owner, then the owner goes.
      for (const auto& dependent_key : present) {
        Document dependent = json::copy(*api_.store_.get(dependent_key));
        Value& references = dependent["metadata"]["ownerReferences"];
        for (auto it = references.Begin(); it != references.End();) {
          it = string_at(*it, {"uid"}) == uid ? references.Erase(it) : it + 1;
        }
        if (references.Empty()) {
          dependent["metadata"].RemoveMember("ownerReferences");
        }
        send_update(dependent_key, dependent);
      }
      send_update(key, without_finalizer(*api_.store_.get(key), "orphan"));
      acted = true;
      continue;
    }
    if (has_finalizer(*object, "foregroundDeletion")) {
      if (present.empty()) {
        send_update(key, without_finalizer(*object, "foregroundDeletion"));
        acted = true;
        continue;
      }
      for (const auto& dependent_key : present) {
        auto dependent = api_.store_.get(dependent_key);
        if (dependent && !being_deleted(*dependent)) {
          send_delete(dependent_key, "Foreground");
          acted = true;
        }
      }
      finalizing_.insert(key);  // again once its dependents are gone
    }
  }
  return acted;
}

}  // namespace kstate::emulator
