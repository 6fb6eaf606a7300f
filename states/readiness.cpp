// Readiness checks on object JSON and wait schedules (see readiness.hpp). The workload
// checks follow the order and messages of `kubectl rollout status` so that a user
// who knows kubectl reads the same reason here.
#include "states/readiness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/crd.hpp"
#include "core/untrusted_text.hpp"

namespace kstate::states {

using json::string_at;

namespace {

std::int64_t integer_at(const json::Value& object, std::initializer_list<std::string_view> path,
                        std::int64_t fallback = 0) {
  const json::Value* value = json::find_path(object, path);
  if (value == nullptr || !value->IsInt64())
    return fallback;
  return value->GetInt64();
}

bool has(const json::Value& object, std::initializer_list<std::string_view> path) {
  return json::find_path(object, path) != nullptr;
}

const json::Value* find_condition(const json::Value& object, std::string_view type) {
  const json::Value* conditions = json::find_path(object, {"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray())
    return nullptr;
  for (const json::Value& condition : conditions->GetArray()) {
    if (json::string_or(json::find(condition, "type"), "") == type)
      return &condition;
  }
  return nullptr;
}

bool condition_true(const json::Value* condition) {
  return condition != nullptr && json::string_or(json::find(*condition, "status"), "") == "True";
}

bool condition_false(const json::Value* condition) {
  return condition != nullptr && json::string_or(json::find(*condition, "status"), "") == "False";
}

// "reason: message" of a condition, whichever parts are set.
std::string condition_text(const json::Value* condition) {
  if (condition == nullptr)
    return "";
  std::string reason(json::string_or(json::find(*condition, "reason"), ""));
  std::string message(json::string_or(json::find(*condition, "message"), ""));
  if (!reason.empty() && !message.empty())
    return reason + ": " + message;
  return reason.empty() ? message : reason;
}

ReadinessCheck ready(std::string reason) {
  return {Readiness::ready, std::move(reason)};
}
ReadinessCheck waiting(std::string reason) {
  return {Readiness::not_ready, std::move(reason)};
}
ReadinessCheck failed(std::string reason) {
  return {Readiness::failed, std::move(reason)};
}

std::string name_of(const json::Value& object) {
  return string_at(object, {"metadata", "name"});
}

ReadinessCheck deployment_rollout(const json::Value& object);

// A check that is not ready, with what the object reports about itself appended.
ReadinessCheck with_self_report(ReadinessCheck check, const json::Value& object) {
  if (check.readiness != Readiness::ready) {
    if (std::string report = self_report(object); !report.empty())
      check.reason += "; " + report;
  }
  return check;
}

// The controller has not seen the latest spec yet.
bool generation_observed(const json::Value& object) {
  return integer_at(object, {"metadata", "generation"}) <= integer_at(object, {"status", "observedGeneration"});
}

}  // namespace

const char* to_string(Readiness readiness) {
  switch (readiness) {
    case Readiness::ready:
      return "ready";
    case Readiness::not_ready:
      return "not ready";
    case Readiness::failed:
      return "failed";
  }
  return "not ready";
}

ReadinessCheck check_crd_ready(const json::Value& object) {
  const json::Value* names_accepted = find_condition(object, "NamesAccepted");
  if (condition_false(names_accepted))
    return failed("CustomResourceDefinition names not accepted: " + condition_text(names_accepted));
  const json::Value* established = find_condition(object, "Established");
  if (!condition_true(established)) {
    std::string detail = condition_text(established);
    return waiting("CustomResourceDefinition " + name_of(object) + " is not Established yet" +
                   (detail.empty() ? "" : " (" + detail + ")"));
  }
  if (!condition_true(names_accepted))
    return waiting("CustomResourceDefinition " + name_of(object) + " names are not accepted yet");
  return ready("Established");
}

ReadinessCheck check_namespace_ready(const json::Value& object) {
  const std::string phase = string_at(object, {"status", "phase"});
  if (phase == "Active")
    return ready("Active");
  if (phase == "Terminating")
    return with_self_report(failed("namespace " + name_of(object) + " is terminating"), object);
  return waiting("namespace " + name_of(object) + " is not Active yet (phase " +
                 (phase.empty() ? std::string("unset") : phase) + ")");
}

ReadinessCheck check_deployment_ready(const json::Value& object) {
  return with_self_report(deployment_rollout(object), object);
}

namespace {

// kubectl rollout status' verdict on a Deployment.
ReadinessCheck deployment_rollout(const json::Value& object) {
  const std::string name = name_of(object);
  if (!generation_observed(object))
    return waiting("Waiting for deployment spec update to be observed...");
  const json::Value* progressing = find_condition(object, "Progressing");
  if (progressing != nullptr && json::string_or(json::find(*progressing, "reason"), "") == "ProgressDeadlineExceeded") {
    return failed("deployment \"" + name + "\" exceeded its progress deadline");
  }
  const std::int64_t desired = integer_at(object, {"spec", "replicas"}, 1);
  const std::int64_t replicas = integer_at(object, {"status", "replicas"});
  const std::int64_t updated = integer_at(object, {"status", "updatedReplicas"});
  const std::int64_t available = integer_at(object, {"status", "availableReplicas"});
  const std::string prefix = "Waiting for deployment \"" + name + "\" rollout to finish: ";
  if (updated < desired)
    return waiting(prefix + std::to_string(updated) + " out of " + std::to_string(desired) +
                   " new replicas have been updated...");
  if (replicas > updated)
    return waiting(prefix + std::to_string(replicas - updated) + " old replicas are pending termination...");
  if (available < updated)
    return waiting(prefix + std::to_string(available) + " of " + std::to_string(updated) +
                   " updated replicas are available...");
  return ready("deployment \"" + name + "\" successfully rolled out");
}

}  // namespace

ReadinessCheck check_statefulset_ready(const json::Value& object) {
  const std::string strategy = string_at(object, {"spec", "updateStrategy", "type"});
  if (!strategy.empty() && strategy != "RollingUpdate")
    return ready("update strategy " + strategy + " has no rollout to wait for");
  if (integer_at(object, {"status", "observedGeneration"}) == 0 || !generation_observed(object))
    return waiting("Waiting for statefulset spec update to be observed...");
  const std::int64_t desired = integer_at(object, {"spec", "replicas"}, 1);
  const std::int64_t ready_replicas = integer_at(object, {"status", "readyReplicas"});
  if (ready_replicas < desired)
    return waiting("Waiting for " + std::to_string(desired - ready_replicas) + " pods to be ready...");
  const std::int64_t partition = integer_at(object, {"spec", "updateStrategy", "rollingUpdate", "partition"});
  if (partition > 0) {
    const std::int64_t updated = integer_at(object, {"status", "updatedReplicas"});
    if (updated < desired - partition)
      return waiting("Waiting for partitioned roll out to finish: " + std::to_string(updated) + " out of " +
                     std::to_string(desired - partition) + " new pods have been updated...");
    return ready("partitioned roll out complete: " + std::to_string(updated) + " new pods have been updated");
  }
  const std::string update_revision = string_at(object, {"status", "updateRevision"});
  if (update_revision != string_at(object, {"status", "currentRevision"}))
    return waiting("waiting for statefulset rolling update to complete " +
                   std::to_string(integer_at(object, {"status", "updatedReplicas"})) + " pods at revision " +
                   update_revision + "...");
  return ready("statefulset rolling update complete " + std::to_string(ready_replicas) + " pods at revision " +
               update_revision);
}

ReadinessCheck check_daemonset_ready(const json::Value& object) {
  const std::string strategy = string_at(object, {"spec", "updateStrategy", "type"});
  if (!strategy.empty() && strategy != "RollingUpdate")
    return ready("update strategy " + strategy + " has no rollout to wait for");
  const std::string name = name_of(object);
  if (!generation_observed(object))
    return waiting("Waiting for daemon set spec update to be observed...");
  const std::int64_t desired = integer_at(object, {"status", "desiredNumberScheduled"});
  const std::int64_t updated = integer_at(object, {"status", "updatedNumberScheduled"});
  const std::int64_t available = integer_at(object, {"status", "numberAvailable"});
  const std::string prefix = "Waiting for daemon set \"" + name + "\" rollout to finish: ";
  if (updated < desired)
    return waiting(prefix + std::to_string(updated) + " out of " + std::to_string(desired) +
                   " new pods have been updated...");
  if (available < desired)
    return waiting(prefix + std::to_string(available) + " of " + std::to_string(updated) +
                   " updated pods are available...");
  return ready("daemon set \"" + name + "\" successfully rolled out");
}

ReadinessCheck check_job_ready(const json::Value& object) {
  const json::Value* failed_condition = find_condition(object, "Failed");
  if (condition_true(failed_condition))
    return failed("job " + name_of(object) + " failed: " + condition_text(failed_condition));
  if (condition_true(find_condition(object, "Complete")))
    return ready("job " + name_of(object) + " complete");
  const std::int64_t succeeded = integer_at(object, {"status", "succeeded"});
  const std::int64_t completions = integer_at(object, {"spec", "completions"}, 1);
  return waiting("job " + name_of(object) + " not complete: " + std::to_string(succeeded) + " of " +
                 std::to_string(completions) + " completions succeeded, " +
                 std::to_string(integer_at(object, {"status", "active"})) + " active");
}

ReadinessCheck check_pvc_ready(const json::Value& object) {
  const std::string phase = string_at(object, {"status", "phase"});
  if (phase == "Bound")
    return ready("Bound");
  if (phase == "Lost")
    return failed("persistent volume claim " + name_of(object) + " lost its volume");
  return waiting("persistent volume claim " + name_of(object) + " is " +
                 (phase.empty() ? std::string("not bound yet") : phase));
}

ReadinessCheck check_ready_condition(const json::Value& object) {
  const std::int64_t generation = integer_at(object, {"metadata", "generation"});
  if (has(object, {"status", "observedGeneration"}) && !generation_observed(object))
    return waiting("status.observedGeneration " + std::to_string(integer_at(object, {"status", "observedGeneration"})) +
                   " is older than generation " + std::to_string(generation));
  const json::Value* condition = find_condition(object, "Ready");
  if (condition == nullptr)
    return ready("exists (no Ready condition to wait for)");
  if (json::find(*condition, "observedGeneration") != nullptr &&
      integer_at(*condition, {"observedGeneration"}) < generation) {
    return waiting("Ready condition is for generation " +
                   std::to_string(integer_at(*condition, {"observedGeneration"})) + ", not the current " +
                   std::to_string(generation));
  }
  if (condition_true(condition))
    return ready("Ready");
  std::string detail = condition_text(condition);
  return waiting("Ready is " + std::string(json::string_or(json::find(*condition, "status"), "Unknown")) +
                 (detail.empty() ? "" : " (" + detail + ")"));
}

ReadinessCheck check_ready(const json::Value& object) {
  const std::string api_version(json::string_or(json::find(object, "apiVersion"), ""));
  const std::string kind(json::string_or(json::find(object, "kind"), ""));
  const std::string group =
      api_version.find('/') == std::string::npos ? "" : api_version.substr(0, api_version.find('/'));
  if (is_crd(group, kind))
    return check_crd_ready(object);
  if (group.empty() && kind == "Namespace")
    return check_namespace_ready(object);
  if (group.empty() && kind == "PersistentVolumeClaim")
    return check_pvc_ready(object);
  if (group == "apps" && kind == "Deployment")
    return check_deployment_ready(object);
  if (group == "apps" && kind == "StatefulSet")
    return check_statefulset_ready(object);
  if (group == "apps" && kind == "DaemonSet")
    return check_daemonset_ready(object);
  if (group == "batch" && kind == "Job")
    return check_job_ready(object);
  return check_ready_condition(object);
}

ReadinessCheck check_deleted(const json::Value* live, std::string_view deleted_uid) {
  if (live == nullptr)
    return ready("deleted");
  const std::string uid = string_at(*live, {"metadata", "uid"});
  if (!deleted_uid.empty() && !uid.empty() && uid != deleted_uid)
    return ready("deleted (a new object with the same name exists)");
  const std::string report = self_report(*live);
  const std::string state = has(*live, {"metadata", "deletionTimestamp"}) ? "terminating" : "still exists";
  return waiting(report.empty() ? state : state + "; " + report);
}

ConditionHealth condition_health(std::string_view type, std::string_view status) {
  // Types whose True is the goal...
  // (Progressing is in neither list: True or False, it says how a rollout goes.)
  static constexpr std::string_view good_when_true[] = {"Ready",    "Available",   "Established",     "NamesAccepted",
                                                        "Complete", "Initialized", "ContainersReady", "PodScheduled"};
  // ...and those whose True is the problem (the namespace controller's, Job and
  // ReplicaSet failures, a CRD being deleted).
  static constexpr std::string_view good_when_false[] = {"NamespaceDeletionDiscoveryFailure",
                                                         "NamespaceDeletionGroupVersionParsingFailure",
                                                         "NamespaceDeletionContentFailure",
                                                         "NamespaceContentRemaining",
                                                         "NamespaceFinalizersRemaining",
                                                         "Failed",
                                                         "ReplicaFailure",
                                                         "Terminating"};
  for (std::string_view known : good_when_true) {
    if (type == known)
      return status == "True" ? ConditionHealth::healthy : ConditionHealth::unhealthy;
  }
  for (std::string_view known : good_when_false) {
    if (type == known)
      return status == "False" ? ConditionHealth::healthy : ConditionHealth::unhealthy;
  }
  return ConditionHealth::news;
}

std::string self_report(const json::Value& object) {
  constexpr std::size_t max_text = 512;  // per server-written text: reasons, messages, names
  std::string conditions;
  if (const json::Value* list = json::find_path(object, {"status", "conditions"}); list != nullptr && list->IsArray()) {
    for (const json::Value& condition : list->GetArray()) {
      const std::string type(json::string_or(json::find(condition, "type"), ""));
      const std::string status(json::string_or(json::find(condition, "status"), ""));
      if (type.empty() || condition_health(type, status) == ConditionHealth::healthy)
        continue;
      const std::string detail = condition_text(&condition);
      conditions += (conditions.empty() ? "" : ", ") + printable(type, max_text) + "=" + printable(status, max_text) +
                    (detail.empty() ? "" : " (" + printable(detail, max_text) + ")");
    }
  }
  std::string finalizers;
  auto add_finalizers = [&](const json::Value* list) {
    if (list == nullptr || !list->IsArray())
      return;
    for (const json::Value& finalizer : list->GetArray()) {
      finalizers += (finalizers.empty() ? "" : ", ") + printable(json::string_or(&finalizer, ""), max_text);
    }
  };
  add_finalizers(json::find_path(object, {"metadata", "finalizers"}));
  if (string_at(object, {"kind"}) == "Namespace")
    add_finalizers(json::find_path(object, {"spec", "finalizers"}));
  std::string report = conditions.empty() ? "" : "conditions: " + conditions;
  if (!finalizers.empty())
    report += (report.empty() ? "" : "; ") + std::string("finalizers: ") + finalizers;
  return report;
}

WaitSchedule wait_schedule(const manifests::Wait& wait, const WaitDefaults& defaults) {
  using std::chrono::milliseconds;
  WaitSchedule schedule;
  if (!wait.enabled && wait.attempts <= 0 && wait.timeout_seconds <= 0)
    return schedule;
  schedule.enabled = true;
  if (wait.timeout_seconds > 0) {
    schedule.deadline = milliseconds(static_cast<std::int64_t>(std::llround(wait.timeout_seconds * 1000)));
  } else if (wait.attempts <= 0) {
    schedule.deadline = defaults.timeout;
  }
  const bool fixed_sleep = wait.sleep_seconds > 0;
  const milliseconds sleep(static_cast<std::int64_t>(std::llround(wait.sleep_seconds * 1000)));
  milliseconds next_backoff = std::min(defaults.initial_delay, defaults.max_delay);
  milliseconds elapsed{0};
  // A zero or negative interval would never reach a deadline: use at least 1 ms.
  const auto next_delay = [&]() {
    if (fixed_sleep)
      return std::max(sleep, milliseconds(1));
    milliseconds delay = std::max(next_backoff, milliseconds(1));
    next_backoff = std::min(milliseconds(static_cast<std::int64_t>(static_cast<double>(next_backoff.count()) *
                                                                   std::max(defaults.backoff_factor, 1.0))),
                            defaults.max_delay);
    return delay;
  };
  while (true) {
    if (wait.attempts > 0 && schedule.delays.size() + 1 >= static_cast<std::size_t>(wait.attempts))
      break;
    if (schedule.deadline && elapsed >= *schedule.deadline)
      break;
    milliseconds delay = next_delay();
    if (schedule.deadline && elapsed + delay > *schedule.deadline)
      delay = *schedule.deadline - elapsed;  // the last check lands on the deadline
    schedule.delays.push_back(delay);
    elapsed += delay;
  }
  return schedule;
}

}  // namespace kstate::states
