// Salt's requisites decided (states/requisites.hpp): when a state runs, is skipped or
// fails because of the states it requires, runs on changes of, or watches; and when a
// watch restarts its workload.
#include "states/requisites.hpp"

#include <catch2/catch.hpp>

#include "core/json.hpp"

namespace requisites_test {

using namespace kstate::states;
using kstate::manifests::Function;

namespace {

RequisiteStatus requisite(std::string id, RequisiteOutcome outcome, bool onchanges = false, bool watched = false) {
  RequisiteStatus status;
  status.id = std::move(id);
  status.outcome = outcome;
  status.onchanges = onchanges;
  status.watched = watched;
  return status;
}

constexpr auto unchanged = RequisiteOutcome::unchanged;
constexpr auto changed = RequisiteOutcome::changed;
constexpr auto failed = RequisiteOutcome::failed;

}  // namespace

TEST_CASE("decide_run: require, onchanges and watch as Salt runs them", "[requisites]") {
  struct Case {
    const char* what;
    std::vector<RequisiteStatus> requisites;
    BeforeRun action;
    std::string comment;
    std::vector<std::string> watched_changes;
  };
  const std::string no_change = "State was not run because none of the onchanges reqs changed";
  const std::vector<Case> cases = {
      {"no requisites", {}, BeforeRun::run, "", {}},
      {"required states unchanged", {requisite("ns", unchanged), requisite("sa", unchanged)}, BeforeRun::run, "", {}},
      {"a required state failed",
       {requisite("ns", unchanged), requisite("sa", failed)},
       BeforeRun::requisite_failed,
       "One or more requisite failed: sa",
       {}},
      {"onchanges: one of two changed",
       {requisite("a", unchanged, true), requisite("b", changed, true)},
       BeforeRun::run,
       "",
       {}},
      {"onchanges: none changed",
       {requisite("a", unchanged, true), requisite("b", unchanged, true)},
       BeforeRun::no_onchanges_change,
       no_change,
       {}},
      {"onchanges: a plain require changed, the onchanges one did not",
       {requisite("ns", changed), requisite("config", unchanged, true)},
       BeforeRun::no_onchanges_change,
       no_change,
       {}},
      {"onchanges: the one named failed",
       {requisite("config", failed, true)},
       BeforeRun::requisite_failed,
       "One or more requisite failed: config",
       {}},
      {"watch: unchanged runs like require", {requisite("config", unchanged, false, true)}, BeforeRun::run, "", {}},
      {"watch: changed ones are listed in order",
       {requisite("a", changed, false, true), requisite("b", unchanged, false, true),
        requisite("c", changed, false, true)},
       BeforeRun::run,
       "",
       {"a", "c"}},
      {"watch: a failed watched state fails it",
       {requisite("config", failed, false, true)},
       BeforeRun::requisite_failed,
       "One or more requisite failed: config",
       {}},
      {"watch and onchanges on the same state, changed",
       {requisite("config", changed, true, true)},
       BeforeRun::run,
       "",
       {"config"}},
      {"onchanges unchanged wins over a changed watch: nothing runs, nothing restarts",
       {requisite("config", unchanged, true), requisite("secret", changed, false, true)},
       BeforeRun::no_onchanges_change,
       no_change,
       {}},
  };
  for (const auto& test : cases) {
    INFO(test.what);
    RunDecision decision = decide_run(test.requisites);
    CHECK(decision.action == test.action);
    CHECK(decision.comment == test.comment);
    CHECK(decision.watched_changes == test.watched_changes);
  }
}

TEST_CASE("decide_restart: only a Deployment, DaemonSet or StatefulSet that applied is restarted", "[requisites]") {
  struct Case {
    const char* what;
    std::vector<std::string> watched_changes;
    const char* group;
    const char* kind;
    Function function;
    bool state_failed;
    bool created;
    bool test_mode;
    Restart expected;
  };
  const std::vector<std::string> config = {"config"};
  const std::vector<Case> cases = {
      {"nothing watched changed",
       {},
       "apps",
       "Deployment",
       Function::object_present,
       false,
       false,
       false,
       Restart::none},
      {"Deployment", config, "apps", "Deployment", Function::object_present, false, false, false, Restart::restart},
      {"a Deployment this run created", config, "apps", "Deployment", Function::object_present, false, true, false,
       Restart::none},
      {"DaemonSet, object_updated", config, "apps", "DaemonSet", Function::object_updated, false, false, false,
       Restart::restart},
      {"StatefulSet", config, "apps", "StatefulSet", Function::object_present, false, false, false, Restart::restart},
      {"test mode", config, "apps", "Deployment", Function::object_present, false, false, true, Restart::would_restart},
      {"the state failed", config, "apps", "Deployment", Function::object_present, true, false, false, Restart::none},
      {"object_absent", config, "apps", "Deployment", Function::object_absent, false, false, false, Restart::none},
      {"a ConfigMap", config, "", "ConfigMap", Function::object_present, false, false, false, Restart::not_a_workload},
      {"a Deployment of another group", config, "example.com", "Deployment", Function::object_present, false, false,
       false, Restart::not_a_workload},
  };
  for (const auto& test : cases) {
    INFO(test.what);
    RestartInput input;
    input.watched_changes = test.watched_changes;
    input.group = test.group;
    input.kind = test.kind;
    input.function = test.function;
    input.state_failed = test.state_failed;
    input.created = test.created;
    input.test_mode = test.test_mode;
    CHECK(to_string(decide_restart(input)) == std::string(to_string(test.expected)));
  }
}

TEST_CASE("restart_patch sets the pod template annotation kubectl rollout restart sets", "[requisites]") {
  CHECK(
      restart_patch("2026-11-27T12:00:00Z") ==
      R"({"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-27T12:00:00Z"}}}}})");
}

}  // namespace requisites_test
