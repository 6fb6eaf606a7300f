// Readiness as a user waiting on `wait: true` sees it: when each kind counts as ready,
// the reason shown while it is not (kubectl rollout status wording for workloads), the
// deleted check, and the delays a MetalK8s wait policy produces.
#include "states/readiness.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <numeric>

#include "tests/support/recordings.hpp"

namespace readiness_test {

using namespace kstate;
using states::Readiness;

namespace {

json::Document parse(const std::string& text) {
  auto document = json::parse(text);
  REQUIRE(document.ok());
  return std::move(document).value();
}

struct Row {
  const char* name;
  std::string object;
  Readiness expected;
  const char* reason_part;
};

void check_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    INFO(row.name);
    const json::Document object = parse(row.object);
    const states::ReadinessCheck check = states::check_ready(object);
    CHECK(states::to_string(check.readiness) == std::string(states::to_string(row.expected)));
    CHECK_THAT(check.reason, Catch::Contains(row.reason_part));
  }
}

std::string deployment(int generation, int observed, int desired, int replicas, int updated, int available,
                       const char* progressing_reason = "NewReplicaSetAvailable") {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generation":)" +
         std::to_string(generation) + R"(},"spec":{"replicas":)" + std::to_string(desired) +
         R"(},"status":{"observedGeneration":)" + std::to_string(observed) + R"(,"replicas":)" +
         std::to_string(replicas) + R"(,"updatedReplicas":)" + std::to_string(updated) + R"(,"availableReplicas":)" +
         std::to_string(available) + R"(,"conditions":[{"type":"Progressing","status":"True","reason":")" +
         progressing_reason + R"("}]}})";
}

}  // namespace

TEST_CASE("CRDs are ready when Established with names accepted", "[readiness]") {
  const std::string head = R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)"
                           R"("metadata":{"name":"widgets.example.com"},"status":{"conditions":)";
  check_rows({
      {"established", head + R"([{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}})",
       Readiness::ready, "Established"},
      {"no status yet",
       R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"}})",
       Readiness::not_ready, "widgets.example.com is not Established"},
      {"installing",
       head +
           R"([{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"False","reason":"Installing"}]}})",
       Readiness::not_ready, "(Installing)"},
      {"name conflict",
       head +
           R"([{"type":"NamesAccepted","status":"False","reason":"MultipleNames","message":"plural is already in use"}]}})",
       Readiness::failed, "MultipleNames: plural is already in use"},
  });
}

TEST_CASE("Namespaces are ready when Active", "[readiness]") {
  const std::string head = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"})";
  check_rows({
      {"active", head + R"(,"status":{"phase":"Active"}})", Readiness::ready, "Active"},
      {"no phase", head + "}", Readiness::not_ready, "apps is not Active yet"},
      {"terminating", head + R"(,"status":{"phase":"Terminating"}})", Readiness::failed, "terminating"},
  });
}

TEST_CASE("Deployments are ready when rolled out as kubectl rollout status computes it", "[readiness]") {
  check_rows({
      {"rolled out", deployment(3, 3, 2, 2, 2, 2), Readiness::ready, "successfully rolled out"},
      {"spec not observed", deployment(4, 3, 2, 2, 2, 2), Readiness::not_ready, "spec update to be observed"},
      {"new replicas updating", deployment(3, 3, 3, 3, 1, 1), Readiness::not_ready,
       "1 out of 3 new replicas have been updated"},
      {"old replicas terminating", deployment(3, 3, 2, 3, 2, 2), Readiness::not_ready,
       "1 old replicas are pending termination"},
      {"not yet available", deployment(3, 3, 2, 2, 2, 1), Readiness::not_ready,
       "1 of 2 updated replicas are available"},
      {"deadline exceeded", deployment(3, 3, 2, 2, 1, 1, "ProgressDeadlineExceeded"), Readiness::failed,
       "exceeded its progress deadline"},
  });
}

TEST_CASE("StatefulSets and DaemonSets are ready when their rollout is complete", "[readiness]") {
  const auto statefulset = [](const std::string& spec, const std::string& status) {
    return R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","generation":2},"spec":)" + spec +
           R"(,"status":)" + status + "}";
  };
  const auto daemonset = [](int generation, int observed, int desired, int updated, int available) {
    return R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent","generation":)" +
           std::to_string(generation) +
           R"(},"spec":{"updateStrategy":{"type":"RollingUpdate"}},"status":{"observedGeneration":)" +
           std::to_string(observed) + R"(,"desiredNumberScheduled":)" + std::to_string(desired) +
           R"(,"updatedNumberScheduled":)" + std::to_string(updated) + R"(,"numberAvailable":)" +
           std::to_string(available) + "}}";
  };
  check_rows({
      {"statefulset complete",
       statefulset(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"readyReplicas":3,"updatedReplicas":3,"currentRevision":"db-1","updateRevision":"db-1"})"),
       Readiness::ready, "rolling update complete 3 pods at revision db-1"},
      {"statefulset spec not observed",
       statefulset(R"({"replicas":3})", R"({"observedGeneration":1,"readyReplicas":3})"), Readiness::not_ready,
       "spec update to be observed"},
      {"statefulset pods not ready", statefulset(R"({"replicas":3})", R"({"observedGeneration":2,"readyReplicas":1})"),
       Readiness::not_ready, "Waiting for 2 pods to be ready"},
      {"statefulset revision rolling",
       statefulset(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"readyReplicas":3,"updatedReplicas":1,"currentRevision":"db-1","updateRevision":"db-2"})"),
       Readiness::not_ready, "complete 1 pods at revision db-2"},
      {"statefulset partition pending",
       statefulset(R"({"replicas":4,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}})",
                   R"({"observedGeneration":2,"readyReplicas":4,"updatedReplicas":1})"),
       Readiness::not_ready, "1 out of 2 new pods have been updated"},
      {"statefulset partition done",
       statefulset(R"({"replicas":4,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}})",
                   R"({"observedGeneration":2,"readyReplicas":4,"updatedReplicas":2})"),
       Readiness::ready, "partitioned roll out complete"},
      {"statefulset OnDelete", statefulset(R"({"replicas":3,"updateStrategy":{"type":"OnDelete"}})", R"({})"),
       Readiness::ready, "OnDelete"},
      {"daemonset rolled out", daemonset(5, 5, 3, 3, 3), Readiness::ready, "successfully rolled out"},
      {"daemonset spec not observed", daemonset(5, 4, 3, 3, 3), Readiness::not_ready, "spec update to be observed"},
      {"daemonset updating", daemonset(5, 5, 3, 1, 1), Readiness::not_ready, "1 out of 3 new pods have been updated"},
      {"daemonset not available", daemonset(5, 5, 3, 3, 2), Readiness::not_ready, "2 of 3 updated pods are available"},
  });
}

TEST_CASE("Jobs, PVCs and objects with a Ready condition", "[readiness]") {
  const std::string job =
      R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate"},"spec":{"completions":2},"status":)";
  const std::string pvc = R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"status":)";
  const std::string custom =
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":3},"status":)";
  check_rows({
      {"job complete", job + R"({"succeeded":2,"conditions":[{"type":"Complete","status":"True"}]}})", Readiness::ready,
       "complete"},
      {"job running", job + R"({"succeeded":1,"active":1}})", Readiness::not_ready,
       "1 of 2 completions succeeded, 1 active"},
      {"job failed",
       job +
           R"({"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}})",
       Readiness::failed, "BackoffLimitExceeded: Job has reached the specified backoff limit"},
      {"pvc bound", pvc + R"({"phase":"Bound"}})", Readiness::ready, "Bound"},
      {"pvc pending", pvc + R"({"phase":"Pending"}})", Readiness::not_ready, "data is Pending"},
      {"pvc lost", pvc + R"({"phase":"Lost"}})", Readiness::failed, "lost its volume"},
      {"ready condition", custom + R"({"observedGeneration":3,"conditions":[{"type":"Ready","status":"True"}]}})",
       Readiness::ready, "Ready"},
      {"ready false",
       custom + R"({"observedGeneration":3,"conditions":[{"type":"Ready","status":"False","reason":"Reconciling"}]}})",
       Readiness::not_ready, "Ready is False (Reconciling)"},
      {"stale observedGeneration",
       custom + R"({"observedGeneration":2,"conditions":[{"type":"Ready","status":"True"}]}})", Readiness::not_ready,
       "older than generation 3"},
      {"stale condition", custom + R"({"conditions":[{"type":"Ready","status":"True","observedGeneration":2}]}})",
       Readiness::not_ready, "for generation 2, not the current 3"},
      {"no conditions", custom + "{}}", Readiness::ready, "no Ready condition"},
      {"configmap", R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})", Readiness::ready, "exists"},
  });
}

TEST_CASE("an object is deleted when the server no longer has it (or has a new one)", "[readiness]") {
  CHECK(states::check_deleted(nullptr, "uid-1").ready());
  struct DeleteRow {
    const char* name;
    const char* live;
    Readiness expected;
    const char* reason_part;
  };
  const DeleteRow rows[] = {
      {"still there", R"({"metadata":{"name":"c","uid":"uid-1"}})", Readiness::not_ready, "still exists"},
      {"terminating",
       R"({"metadata":{"name":"c","uid":"uid-1","deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["a/b","c/d"]}})",
       Readiness::not_ready, "terminating; finalizers: a/b, c/d"},
      {"recreated", R"({"metadata":{"name":"c","uid":"uid-2"}})", Readiness::ready, "new object"},
  };
  for (const DeleteRow& row : rows) {
    INFO(row.name);
    const json::Document live = parse(row.live);
    auto check = states::check_deleted(&live, "uid-1");
    CHECK(check.readiness == row.expected);
    CHECK_THAT(check.reason, Catch::Contains(row.reason_part));
  }
}

// A recorded answer's object (its body), as the engine last saw it.
json::Document recorded_object(int number) {
  static const std::map<int, std::string> files{{32, "32-get-deployment-after-controller.json"},
                                                {69, "69-get-crd-terminating.json"},
                                                {76, "76-get-namespace-held-by-finalizer.json"},
                                                {77, "77-delete-namespace-200.json"},
                                                {78, "78-get-namespace-last-before-404.json"}};
  return kstate::testing::recorded_response_body(files.at(number));
}

TEST_CASE("a wait that runs out quotes what the object reports about itself (recordings 76, 77, 78, 69, 32)",
          "[readiness]") {
  struct Row {
    const char* name;
    int recording;
    std::string expected;  // the whole reason, as a user reads it
  };
  const Row rows[] = {
      {"a namespace held by a finalizer on its content (76): the namespace controller's conditions say why", 76,
       "terminating; conditions: NamespaceContentRemaining=True (SomeResourcesRemain: Some resources are "
       "remaining: configmaps. has 1 resource instances), NamespaceFinalizersRemaining=True "
       "(SomeFinalizersRemain: Some content in the namespace has finalizers remaining: kstate.test/hold in 1 "
       "resource instances); finalizers: kubernetes"},
      {"a namespace just deleted (77): no conditions yet, its finalizer", 77, "terminating; finalizers: kubernetes"},
      {"the last answer before it was gone (78)", 78, "terminating; finalizers: kubernetes"},
      {"a CRD whose custom resources are being removed (69)", 69,
       "terminating; conditions: Terminating=True (InstanceDeletionInProgress: CustomResource deletion is in "
       "progress); finalizers: customresourcecleanup.apiextensions.k8s.io"},
      {"a Deployment that was not deleted (32)", 32,
       "still exists; conditions: Available=False (MinimumReplicasUnavailable: Deployment does not have minimum "
       "availability.), Progressing=True (ReplicaSetUpdated: ReplicaSet \"sized-645d96d8c8\" is progressing.)"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const json::Document object = recorded_object(row.recording);
    const auto check = states::check_deleted(&object, "");
    CHECK(check.readiness == Readiness::not_ready);
    CHECK(check.reason == row.expected);
  }
}

TEST_CASE("a rollout that does not finish says what the Deployment reports (recording 32)", "[readiness]") {
  const json::Document object = recorded_object(32);
  const auto check = states::check_ready(object);
  CHECK(check.readiness == Readiness::not_ready);
  CHECK(check.reason ==
        "Waiting for deployment \"sized\" rollout to finish: 0 of 1 updated replicas are available...; conditions: "
        "Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.), "
        "Progressing=True (ReplicaSetUpdated: ReplicaSet \"sized-645d96d8c8\" is progressing.)");
  // A namespace that is going away will not become Active: the reason says why it is slow.
  const json::Document held = recorded_object(76);
  CHECK(states::check_ready(held).readiness == Readiness::failed);
  CHECK_THAT(states::check_ready(held).reason,
             Catch::StartsWith("namespace rec-1-held is terminating; conditions: NamespaceContentRemaining=True"));
}

TEST_CASE("which conditions are worth quoting: known types by their polarity, the others always", "[readiness]") {
  using states::ConditionHealth;
  struct Row {
    const char* type;
    const char* status;
    ConditionHealth expected;
  };
  const Row rows[] = {
      {"Available", "True", ConditionHealth::healthy},
      {"Available", "False", ConditionHealth::unhealthy},
      {"Ready", "Unknown", ConditionHealth::unhealthy},
      {"Established", "True", ConditionHealth::healthy},
      {"NamespaceDeletionDiscoveryFailure", "False", ConditionHealth::healthy},
      {"NamespaceDeletionDiscoveryFailure", "True", ConditionHealth::unhealthy},
      {"NamespaceContentRemaining", "True", ConditionHealth::unhealthy},
      {"NamespaceFinalizersRemaining", "False", ConditionHealth::healthy},
      {"Failed", "True", ConditionHealth::unhealthy},
      {"Progressing", "True", ConditionHealth::news},
      {"Progressing", "False", ConditionHealth::news},
      {"SomethingOperatorSpecific", "True", ConditionHealth::news},
  };
  for (const Row& row : rows) {
    INFO(row.type << "=" << row.status);
    CHECK(states::condition_health(row.type, row.status) == row.expected);
  }
}

TEST_CASE("what an object reports is made printable and bounded", "[readiness]") {
  std::string long_message(2000, 'x');
  const json::Document object = parse(R"({"kind":"Widget","metadata":{"finalizers":["evil\u001b[31m/x"]},
    "status":{"conditions":[{"type":"Stuck","status":"True","reason":"Webhook","message":"line\nforged )" +
                                      long_message + R"("}]}})");
  const std::string report = states::self_report(object);
  CHECK(report.find('\n') == std::string::npos);
  CHECK(report.find('\x1b') == std::string::npos);
  CHECK_THAT(report, Catch::Contains("finalizers: evil\\x1b[31m/x"));
  CHECK_THAT(report, Catch::Contains("more bytes)"));
  CHECK(report.size() < 1200);
  CHECK(states::self_report(parse(R"({"kind":"ConfigMap","metadata":{"name":"c"}})")).empty());
}

TEST_CASE("wait policies become schedules of delays", "[readiness][wait]") {
  using std::chrono::milliseconds;
  states::WaitDefaults defaults;
  defaults.timeout = milliseconds(10'000);
  defaults.initial_delay = milliseconds(500);
  defaults.max_delay = milliseconds(4'000);
  defaults.backoff_factor = 2;
  struct WaitRow {
    const char* name;
    manifests::Wait wait;
    bool enabled;
    std::vector<long> delays_ms;
    long deadline_ms;  // -1: none
  };
  const std::vector<WaitRow> rows = {
      {"no wait", {false, 0, 0, 0}, false, {}, -1},
      {"attempts with sleep", {true, 4, 2.5, 0}, true, {2500, 2500, 2500}, -1},
      {"attempts with backoff", {true, 5, 0, 0}, true, {500, 1000, 2000, 4000}, -1},
      {"attempts alone enable the wait", {false, 2, 1, 0}, true, {1000}, -1},
      {"single attempt", {true, 1, 3, 0}, true, {}, -1},
      {"timeout alone", {true, 0, 0, 5}, true, {500, 1000, 2000, 1500}, 5000},
      {"timeout bounds attempts", {true, 10, 2, 5}, true, {2000, 2000, 1000}, 5000},
      {"wait: true uses the default timeout", {true, 0, 0, 0}, true, {500, 1000, 2000, 4000, 2500}, 10'000},
  };
  for (const WaitRow& row : rows) {
    INFO(row.name);
    auto schedule = states::wait_schedule(row.wait, defaults);
    CHECK(schedule.enabled == row.enabled);
    std::vector<long> delays;
    for (auto delay : schedule.delays)
      delays.push_back(static_cast<long>(delay.count()));
    CHECK(delays == row.delays_ms);
    CHECK(schedule.checks() == (row.enabled ? row.delays_ms.size() + 1 : 0));
    if (row.deadline_ms < 0) {
      CHECK_FALSE(schedule.deadline.has_value());
    } else {
      REQUIRE(schedule.deadline.has_value());
      CHECK(schedule.deadline->count() == row.deadline_ms);
      CHECK(std::accumulate(delays.begin(), delays.end(), 0L) <= row.deadline_ms);
    }
  }
}

}  // namespace readiness_test
