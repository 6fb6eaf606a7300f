// decide_updated and decide_absent as tables: (what the engine found, the state's
// strategy and mode) -> what object_updated / object_absent does.
#include "states/updated_decision.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace updated_decision_test {

using kstate::manifests::Strategy;
using kstate::states::AbsentAction;
using kstate::states::AbsentFacts;
using kstate::states::UpdatedAction;
using kstate::states::UpdatedFacts;

TEST_CASE("decide_updated: each fact moves the decision as the table says", "[updated]") {
  struct Row {
    std::string name;
    UpdatedFacts facts;
    UpdatedAction expected;
  };
  std::vector<Row> rows;
  auto row = [&rows](std::string name, UpdatedFacts facts, UpdatedAction expected) {
    rows.push_back({std::move(name), facts, expected});
  };
  UpdatedFacts found;
  found.exists = true;
  row("found, fields differ, no strategy: merge patch", found, UpdatedAction::merge_patch);
  UpdatedFacts applied = found;
  applied.strategy_given = true;
  row("found, fields differ, strategy apply: server-side apply", applied, UpdatedAction::apply);
  UpdatedFacts good = found;
  good.stored_subset = true;
  row("found holding the fields: no write", good, UpdatedAction::already_good);
  UpdatedFacts good_applied = applied;
  good_applied.stored_subset = true;
  row("found holding the fields, strategy apply: no write either", good_applied, UpdatedAction::already_good);
  UpdatedFacts test_good = good;
  test_good.test_mode = true;
  row("test mode changes nothing about a found object", test_good, UpdatedAction::already_good);

  for (Strategy other : {Strategy::replace, Strategy::create_only}) {
    UpdatedFacts refused = good;
    refused.strategy_given = true;
    refused.strategy = other;
    row(std::string("strategy ") + kstate::manifests::to_string(other) + ": refused, even when good", refused,
        UpdatedAction::refuse_strategy);
    UpdatedFacts refused_missing;
    refused_missing.strategy_given = true;
    refused_missing.strategy = other;
    row(std::string("strategy ") + kstate::manifests::to_string(other) + ": refused before existence matters",
        refused_missing, UpdatedAction::refuse_strategy);
  }

  UpdatedFacts missing;
  row("not found: fails (object_updated never creates)", missing, UpdatedAction::fail_missing);
  UpdatedFacts missing_subset = missing;
  missing_subset.stored_subset = true;  // (meaningless without an object)
  row("not found: a subset claim means nothing", missing_subset, UpdatedAction::fail_missing);
  UpdatedFacts pending = missing;
  pending.test_mode = true;
  pending.created_by_this_run = true;
  row("test mode, not found but created by this run: shown on what it creates", pending,
      UpdatedAction::would_update_created);
  UpdatedFacts pending_real = pending;
  pending_real.test_mode = false;
  row("real mode: 'created by this run' is a test-mode fact only", pending_real, UpdatedAction::fail_missing);
  UpdatedFacts cluster = missing;
  cluster.made_by_the_cluster_here = true;
  row("not found, made by the cluster in a namespace this run created: waited for", cluster,
      UpdatedAction::wait_for_the_cluster);
  UpdatedFacts cluster_test = cluster;
  cluster_test.test_mode = true;
  row("test mode: nothing to wait for (the namespace is not created)", cluster_test, UpdatedAction::fail_missing);
  UpdatedFacts cluster_pending = cluster_test;
  cluster_pending.created_by_this_run = true;
  row("test mode: created by this run wins over made by the cluster", cluster_pending,
      UpdatedAction::would_update_created);
  UpdatedFacts cluster_found = good;
  cluster_found.made_by_the_cluster_here = true;
  row("found: made by the cluster matters no more", cluster_found, UpdatedAction::already_good);

  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(std::string(to_string(kstate::states::decide_updated(r.facts))) == to_string(r.expected));
  }
}

TEST_CASE("decide_absent: delete what exists, wait only for real deletes", "[absent]") {
  struct Row {
    const char* name;
    AbsentFacts facts;
    AbsentAction expected;
  };
  const Row rows[] = {
      {"not found: nothing sent", {false, false, false}, AbsentAction::already_absent},
      {"not found, wait asked: nothing to wait for", {false, false, true}, AbsentAction::already_absent},
      {"found: delete", {true, false, false}, AbsentAction::remove},
      {"found, wait asked: delete, then wait until gone", {true, false, true}, AbsentAction::remove_and_wait},
      {"test mode: a dry-run delete", {true, true, false}, AbsentAction::remove},
      {"test mode, wait asked: a dry run deletes nothing to wait for", {true, true, true}, AbsentAction::remove},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(std::string(to_string(kstate::states::decide_absent(r.facts))) == to_string(r.expected));
  }
}

}  // namespace updated_decision_test
