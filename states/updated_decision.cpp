// decide_updated and decide_absent (updated_decision.hpp): the order of the checks is
// the rule.
#include "states/updated_decision.hpp"

namespace kstate::states {

const char* to_string(UpdatedAction action) {
  switch (action) {
    case UpdatedAction::refuse_strategy:
      return "refuse (strategy)";
    case UpdatedAction::would_update_created:
      return "would update what this run creates";
    case UpdatedAction::wait_for_the_cluster:
      return "wait for the cluster to make it";
    case UpdatedAction::fail_missing:
      return "fail (does not exist)";
    case UpdatedAction::already_good:
      return "already good";
    case UpdatedAction::apply:
      return "apply";
    case UpdatedAction::merge_patch:
      return "merge patch";
  }
  return "?";
}

UpdatedAction decide_updated(const UpdatedFacts& facts) {
  const bool apply = facts.strategy_given && facts.strategy == manifests::Strategy::apply;
  if (facts.strategy_given && !apply) {
    return UpdatedAction::refuse_strategy;
  }
  if (!facts.exists) {
    if (facts.test_mode && facts.created_by_this_run) {
      return UpdatedAction::would_update_created;
    }
    if (facts.made_by_the_cluster_here && !facts.test_mode) {
      return UpdatedAction::wait_for_the_cluster;
    }
    return UpdatedAction::fail_missing;
  }
  if (facts.stored_subset) {
    return UpdatedAction::already_good;
  }
  return apply ? UpdatedAction::apply : UpdatedAction::merge_patch;
}

const char* to_string(AbsentAction action) {
  switch (action) {
    case AbsentAction::already_absent:
      return "already absent";
    case AbsentAction::remove:
      return "delete";
    case AbsentAction::remove_and_wait:
      return "delete and wait until gone";
  }
  return "?";
}

AbsentAction decide_absent(const AbsentFacts& facts) {
  if (!facts.exists) {
    return AbsentAction::already_absent;
  }
  return facts.wait && !facts.test_mode ? AbsentAction::remove_and_wait : AbsentAction::remove;
}

}  // namespace kstate::states
