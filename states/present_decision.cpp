// decide_present (present_decision.hpp): the order of the checks is the rule.
#include "states/present_decision.hpp"

namespace kstate::states {

const char* to_string(PresentAction action) {
  switch (action) {
    case PresentAction::skip_being_deleted:
      return "skip (being deleted)";
    case PresentAction::keep_create_only:
      return "keep (create-only)";
    case PresentAction::refuse_adoption:
      return "refuse (not adoptable)";
    case PresentAction::already_good:
      return "already good";
    case PresentAction::create:
      return "create";
    case PresentAction::replace:
      return "replace";
    case PresentAction::apply:
      return "apply";
  }
  return "?";
}

PresentDecision decide_present(const PresentFacts& facts) {
  using manifests::Strategy;
  if (facts.exists && facts.being_deleted) {
    return {PresentAction::skip_being_deleted};
  }
  if (facts.exists && facts.strategy == Strategy::create_only) {
    return {PresentAction::keep_create_only};
  }
  if (facts.exists && facts.adoption_refused) {
    return {PresentAction::refuse_adoption};
  }
  // Other managers' fields are taken over on kstate's first apply of an object it did
  // not make (no configuration hash of its own), and whenever `kubectl apply` left its
  // last-applied annotation on it (a client-side apply since).
  const bool may_take_over = facts.exists && facts.strategy == Strategy::apply && !facts.takeover_disabled;
  const bool applied_by_kubectl = may_take_over && facts.kubectl_applied;
  if (facts.exists && !applied_by_kubectl && facts.config_hash_matches && facts.stored_subset) {
    return {PresentAction::already_good};
  }
  const bool take_over = may_take_over && (applied_by_kubectl || !facts.live_has_config_hash);
  if (!facts.exists && (!facts.named || facts.strategy != Strategy::apply)) {
    return {PresentAction::create, take_over};
  }
  if (facts.strategy == Strategy::replace) {
    return {PresentAction::replace, take_over};
  }
  return {PresentAction::apply, take_over};
}

}  // namespace kstate::states
