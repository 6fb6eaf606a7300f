// Implementation of Salt's requisite decisions (requisites.hpp).
#include "states/requisites.hpp"

#include "core/json.hpp"

namespace kstate::states {

RunDecision decide_run(const std::vector<RequisiteStatus>& requisites) {
  RunDecision decision;
  bool has_onchanges = false;
  bool onchanges_changed = false;
  for (const auto& requisite : requisites) {
    if (requisite.outcome == RequisiteOutcome::failed) {
      decision.action = BeforeRun::requisite_failed;
      decision.comment = "One or more requisite failed: " + requisite.id;
      decision.watched_changes.clear();
      return decision;
    }
    const bool changed = requisite.outcome == RequisiteOutcome::changed;
    has_onchanges = has_onchanges || requisite.onchanges;
    onchanges_changed = onchanges_changed || (requisite.onchanges && changed);
    if (requisite.watched && changed) {
      decision.watched_changes.push_back(requisite.id);
    }
  }
  if (has_onchanges && !onchanges_changed) {
    decision.action = BeforeRun::no_onchanges_change;
    decision.comment = "State was not run because none of the onchanges reqs changed";
    decision.watched_changes.clear();
  }
  return decision;
}

const char* to_string(Restart restart) {
  switch (restart) {
    case Restart::none:
      return "none";
    case Restart::not_a_workload:
      return "not a workload";
    case Restart::restart:
      return "restart";
    case Restart::would_restart:
      return "would restart";
  }
  return "?";
}

Restart decide_restart(const RestartInput& input) {
  if (input.watched_changes.empty() || input.state_failed || input.created ||
      input.function == manifests::Function::object_absent) {
    return Restart::none;
  }
  const bool workload =
      input.group == "apps" && (input.kind == "Deployment" || input.kind == "DaemonSet" || input.kind == "StatefulSet");
  if (!workload) {
    return Restart::not_a_workload;
  }
  return input.test_mode ? Restart::would_restart : Restart::restart;
}

std::string restart_patch(std::string_view timestamp) {
  json::Document patch(rapidjson::kObjectType);
  auto& allocator = patch.GetAllocator();
  json::Value& annotations = json::ensure_object(
      json::ensure_object(json::ensure_object(json::ensure_object(patch, "spec", allocator), "template", allocator),
                          "metadata", allocator),
      "annotations", allocator);
  json::set_string(annotations, restarted_at_annotation, timestamp, allocator);
  return json::dump(patch);
}

}  // namespace kstate::states
