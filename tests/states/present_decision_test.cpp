// decide_present as a table: (what the engine found, the state's strategy) -> what
// object_present does, and whether it takes other managers' fields over first.
#include "states/present_decision.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace present_decision_test {

using kstate::manifests::Strategy;
using kstate::states::decide_present;
using kstate::states::PresentAction;
using kstate::states::PresentDecision;
using kstate::states::PresentFacts;

namespace {

// An existing object kstate applied before and that still holds what the manifest says.
PresentFacts good_existing() {
  PresentFacts facts;
  facts.exists = true;
  facts.live_has_config_hash = true;
  facts.config_hash_matches = true;
  facts.stored_subset = true;
  return facts;
}

}  // namespace

TEST_CASE("decide_present: each fact moves the decision as the table says", "[present]") {
  struct Row {
    std::string name;
    PresentFacts facts;
    PresentDecision expected;
  };
  std::vector<Row> rows;
  auto row = [&rows](std::string name, PresentFacts facts, PresentDecision expected) {
    rows.push_back({std::move(name), facts, expected});
  };

  PresentFacts absent;
  row("absent, apply: server-side apply creates it", absent, {PresentAction::apply});
  PresentFacts absent_replace = absent;
  absent_replace.strategy = Strategy::replace;
  row("absent, replace: POST", absent_replace, {PresentAction::create});
  PresentFacts absent_create_only = absent;
  absent_create_only.strategy = Strategy::create_only;
  row("absent, create-only: POST", absent_create_only, {PresentAction::create});
  PresentFacts generated = absent;
  generated.named = false;
  row("generateName, not found: POST (the server names it)", generated, {PresentAction::create});
  PresentFacts absent_deleting = absent;
  absent_deleting.being_deleted = true;  // (an absent object has no deletionTimestamp)
  row("absent: a deletion mark means nothing", absent_deleting, {PresentAction::apply});

  row("exists as declared: no write", good_existing(), {PresentAction::already_good});
  PresentFacts deleting = good_existing();
  deleting.being_deleted = true;
  row("being deleted: nothing sent, whatever else holds", deleting, {PresentAction::skip_being_deleted});
  PresentFacts deleting_create_only = deleting;
  deleting_create_only.strategy = Strategy::create_only;
  row("being deleted wins over create-only", deleting_create_only, {PresentAction::skip_being_deleted});
  PresentFacts create_only = good_existing();
  create_only.strategy = Strategy::create_only;
  create_only.stored_subset = false;
  create_only.adoption_refused = true;
  row("create-only and exists: kept, before adoption is asked", create_only, {PresentAction::keep_create_only});
  PresentFacts foreign = good_existing();
  foreign.adoption_refused = true;
  row("not adoptable: refused even when it holds the manifest", foreign, {PresentAction::refuse_adoption});

  PresentFacts changed = good_existing();
  changed.stored_subset = false;
  row("changed on the server: apply (kstate's hash: no takeover)", changed, {PresentAction::apply, false});
  PresentFacts manifest_changed = good_existing();
  manifest_changed.config_hash_matches = false;
  row("manifest changed: apply", manifest_changed, {PresentAction::apply, false});
  PresentFacts replace_changed = changed;
  replace_changed.strategy = Strategy::replace;
  row("replace and changed: PUT, never a takeover", replace_changed, {PresentAction::replace, false});

  PresentFacts someone_elses = good_existing();
  someone_elses.live_has_config_hash = false;
  someone_elses.config_hash_matches = false;  // (the manifest's hash is kstate's)
  row("exists without kstate's hash: apply, taking fields over", someone_elses, {PresentAction::apply, true});
  PresentFacts no_takeover = someone_elses;
  no_takeover.takeover_disabled = true;
  row("the same with kstate.io/takeover: disabled: apply only", no_takeover, {PresentAction::apply, false});
  PresentFacts kubectl_since = good_existing();
  kubectl_since.kubectl_applied = true;
  row("kubectl applied since, even if it matches: apply and take over", kubectl_since, {PresentAction::apply, true});
  PresentFacts kubectl_replace = kubectl_since;
  kubectl_replace.strategy = Strategy::replace;
  row("kubectl applied since, replace: judged on content alone (no takeover)", kubectl_replace,
      {PresentAction::already_good, false});

  for (const Row& r : rows) {
    INFO(r.name);
    const PresentDecision decision = decide_present(r.facts);
    CHECK(std::string(to_string(decision.action)) == to_string(r.expected.action));
    CHECK(decision.take_over == r.expected.take_over);
  }
}

}  // namespace present_decision_test
