// Salt's requisites, decided: given how the states a state requires, watches or runs
// on changes of ended, whether it runs at all; and once it ran, whether the workload
// it declares is restarted because a watched state changed something (what
// `kubectl rollout restart` does: a new spec.template annotation, so that its pods
// are replaced). Pure logic: the engine gathers the outcomes and acts on the answers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "manifests/state.hpp"

namespace kstate::states {

// How a requisite ended. In test mode a change that would be made counts as changed.
enum class RequisiteOutcome { unchanged, changed, failed };

struct RequisiteStatus {
  std::string id;  // the requisite state's ID, for the comment
  RequisiteOutcome outcome = RequisiteOutcome::unchanged;
  bool onchanges = false;  // named by onchanges (else require, watch or implied)
  bool watched = false;    // named by watch
};

enum class BeforeRun {
  run,
  requisite_failed,    // a requisite failed: the state fails without a request
  no_onchanges_change  // it has onchanges and none of them changed anything: not run
};
struct RunDecision {
  BeforeRun action = BeforeRun::run;
  std::string comment;  // for requisite_failed and no_onchanges_change, as Salt words it
  // The watched states that changed something (IDs, in the given order); empty: no
  // restart to consider after the run.
  std::vector<std::string> watched_changes;
};
RunDecision decide_run(const std::vector<RequisiteStatus>& requisites);

enum class Restart {
  none,            // nothing watched changed, the state failed, or it created the object
  not_a_workload,  // watched states changed, but the object is not a Deployment, DaemonSet or StatefulSet
  restart,         // patch spec.template.metadata.annotations with kubectl.kubernetes.io/restartedAt
  would_restart,   // test mode: say so, send nothing
};
const char* to_string(Restart restart);
struct RestartInput {
  std::vector<std::string> watched_changes;  // RunDecision::watched_changes
  std::string_view group;                    // of the state's object ("apps")
  std::string_view kind;
  manifests::Function function = manifests::Function::object_present;
  bool state_failed = false;
  bool created = false;  // the state created the object: its pods are new already
  bool test_mode = false;
};
Restart decide_restart(const RestartInput& input);

// The annotation `kubectl rollout restart` sets on the pod template, and the strategic
// merge patch that sets it to `timestamp` (RFC 3339, as kubectl writes it).
inline constexpr std::string_view restarted_at_annotation = "kubectl.kubernetes.io/restartedAt";
std::string restart_patch(std::string_view timestamp);

}  // namespace kstate::states
