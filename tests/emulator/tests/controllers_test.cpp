// The controllers' behaviour over (fake) time: each acts after its configured delay
// and not before, and writes what the recordings show: namespace termination with
// its conditions, the Deployment controller's status and revisions, the Job
// controller's status, the garbage collector's orphan finalizer, a deleted CRD's
// cleanup in two steps, and custom resource creates held right after Established.
#include "tests/emulator/controllers.hpp"

#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace controllers_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;
using std::chrono::milliseconds;

namespace {

void advance(Harness& h, milliseconds by) {
  h.clock->advance(by);
  h.api.tick();
}

std::string condition(const json::Value& object, const std::string& type, const char* field) {
  const json::Value* conditions = json::find_path(object, {"status", "conditions"});
  if (conditions == nullptr || !conditions->IsArray()) {
    return "";
  }
  for (const auto& item : conditions->GetArray()) {
    if (str(item, {"type"}) == type) {
      return str(item, {field});
    }
  }
  return "";
}

const std::string kNamespaces = "/api/v1/namespaces";
const char* kTeam = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})";
const std::string kTeamConfigMaps = "/api/v1/namespaces/team/configmaps";

const char* kWidgetCrd =
    R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)"
    R"("metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",)"
    R"("names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,)"
    R"("storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})";

std::string deployment(const std::string& image, int replicas) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":)" +
         std::to_string(replicas) +
         R"(,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},)"
         R"("spec":{"containers":[{"name":"c","image":")" +
         image + R"("}]}}}})";
}

}  // namespace

TEST_CASE("the namespace controller empties a deleted namespace only after its delay, then removes it") {
  ApiServer::Options options;
  options.controllers.namespace_deletion_delay = milliseconds(5000);
  Harness h(options);
  REQUIRE(h.post(kNamespaces, kTeam).status == 201);
  REQUIRE(h.post(kTeamConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}})").status == 201);
  auto deleted = parse(h.del(kNamespaces + "/team"));
  CHECK(str(deleted, {"status", "phase"}) == "Terminating");
  CHECK(json::find_path(deleted, {"metadata", "deletionGracePeriodSeconds"}) == nullptr);
  advance(h, milliseconds(4999));
  CHECK(h.get(kTeamConfigMaps + "/a").status == 200);
  CHECK(json::find_path(parse(h.get(kNamespaces + "/team")), {"status", "conditions"}) == nullptr);
  advance(h, milliseconds(1));
  CHECK(h.get(kTeamConfigMaps + "/a").status == 404);
  CHECK(h.get(kNamespaces + "/team").status == 404);
}

TEST_CASE("a namespace held by a finalizer inside it says so in its conditions, and goes at a recheck once released") {
  ApiServer::Options options;
  options.controllers.namespace_deletion_delay = milliseconds(100);
  options.controllers.namespace_recheck_interval = milliseconds(1000);
  Harness h(options);
  REQUIRE(h.post(kNamespaces, kTeam).status == 201);
  REQUIRE(h.post(kTeamConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held",)"
                                  R"("finalizers":["example.com/hold"]}})")
              .status == 201);
  REQUIRE(h.del(kNamespaces + "/team").status == 200);
  CHECK(h.del(kNamespaces + "/team").status == 409);  // already being deleted
  advance(h, milliseconds(100));
  auto held = parse(h.get(kNamespaces + "/team"));
  CHECK(condition(held, "NamespaceContentRemaining", "status") == "True");
  CHECK(condition(held, "NamespaceContentRemaining", "message") ==
        "Some resources are remaining: configmaps. has 1 resource instances");
  CHECK(condition(held, "NamespaceFinalizersRemaining", "message") ==
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances");
  CHECK(condition(held, "NamespaceDeletionContentFailure", "reason") == "ContentDeleted");
  CHECK(json::find_path(held, {"status", "conditions"})->Size() == 5);
  // Writes into it are refused; the object held inside is marked for deletion.
  auto refused = h.post(kTeamConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}})");
  CHECK(refused.status == 403);
  CHECK(str(parse(h.get(kTeamConfigMaps + "/held")), {"metadata", "deletionTimestamp"}) != "");

  REQUIRE(
      h.call("PATCH", kTeamConfigMaps + "/held", R"({"metadata":{"finalizers":null}})", "application/merge-patch+json")
          .status == 200);
  advance(h, milliseconds(999));
  CHECK(h.get(kNamespaces + "/team").status == 200);
  advance(h, milliseconds(1));
  CHECK(h.get(kNamespaces + "/team").status == 404);
}

TEST_CASE(
    "the Deployment controller writes status and the revision after its delay; a new pod template is a new revision") {
  ApiServer::Options options;
  options.controllers.deployment_delay = milliseconds(300);
  Harness h(options);
  const std::string path = "/apis/apps/v1/namespaces/default/deployments";
  auto created = parse(h.post(path, deployment("nginx:1.27", 2)));
  CHECK(json::dump(*json::find(created, "status")) == "{}");
  advance(h, milliseconds(299));
  CHECK(json::dump(*json::find(parse(h.get(path + "/web")), "status")) == "{}");
  advance(h, milliseconds(1));
  auto synced = parse(h.get(path + "/web"));
  CHECK(str(synced, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "1");
  CHECK(json::find_path(synced, {"status", "observedGeneration"})->GetInt() == 1);
  CHECK(json::find_path(synced, {"status", "unavailableReplicas"})->GetInt() == 2);  // no nodes: never available
  CHECK(condition(synced, "Available", "reason") == "MinimumReplicasUnavailable");
  CHECK(condition(synced, "Progressing", "reason") == "ReplicaSetUpdated");
  const auto* managed = json::find_path(synced, {"metadata", "managedFields"});
  REQUIRE(managed->Size() == 2);
  CHECK(str((*managed)[0], {"manager"}) == "kube-controller-manager");  // (same second: by manager name)
  CHECK(str((*managed)[0], {"subresource"}) == "status");

  auto scale_to_three = parse(h.get(path + "/web"));
  (*json::find(scale_to_three, "spec"))["replicas"].SetInt(3);
  REQUIRE(h.put(path + "/web", json::dump(scale_to_three)).status == 200);
  advance(h, milliseconds(300));
  auto scaled = parse(h.get(path + "/web"));
  CHECK(str(scaled, {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "1");
  CHECK(json::find_path(scaled, {"status", "observedGeneration"})->GetInt() == 2);

  REQUIRE(h.apply(path + "/web?fieldManager=kstate&force=true", deployment("nginx:1.28", 3)).status == 200);
  advance(h, milliseconds(300));
  CHECK(str(parse(h.get(path + "/web")), {"metadata", "annotations", "deployment.kubernetes.io/revision"}) == "2");
}

TEST_CASE(
    "a Job deleted without a policy keeps its dependents: the garbage collector orphans them, then the Job goes") {
  Harness h;
  const std::string jobs = "/apis/batch/v1/namespaces/default/jobs";
  auto job = parse(
      h.post(jobs, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"once"},"spec":{)"
                   R"("template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})"));
  REQUIRE(str(job, {"metadata", "uid"}) != "");
  auto started = parse(h.get(jobs + "/once"));
  CHECK(json::find_path(started, {"status", "active"})->GetInt() == 1);
  CHECK(str(started, {"status", "startTime"}) != "");
  REQUIRE(h.post("/api/v1/namespaces/default/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"output","ownerReferences":[)"
                 R"({"apiVersion":"batch/v1","kind":"Job","name":"once","uid":")" +
                     str(job, {"metadata", "uid"}) + R"("}]}})")
              .status == 201);
  auto deleted = h.del(jobs + "/once");
  REQUIRE(deleted.status == 200);
  CHECK(json::dump(*json::find_path(parse(deleted), {"metadata", "finalizers"})) == R"(["orphan"])");
  REQUIRE(deleted.headers.size() == 1);
  CHECK(deleted.headers[0].first == "Warning");
  CHECK(h.get(jobs + "/once").status == 200);  // until the collector's next look
  advance(h, milliseconds(50));
  CHECK(h.get(jobs + "/once").status == 404);
  auto orphan = h.get("/api/v1/namespaces/default/configmaps/output");
  REQUIRE(orphan.status == 200);
  CHECK(json::find_path(parse(orphan), {"metadata", "ownerReferences"}) == nullptr);
}

TEST_CASE("a deleted CRD first reports deletion in progress, then its custom resources and the CRD go") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = milliseconds(0);
  options.controllers.crd_deletion_delay = milliseconds(100);
  Harness h(options);
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  REQUIRE(h.post(crds, kWidgetCrd).status == 201);
  const std::string widgets = "/apis/example.com/v1/namespaces/default/widgets";
  REQUIRE(h.apply(widgets + "/w?fieldManager=kstate",
                  R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}})")
              .status == 201);
  auto deleted = parse(h.del(crds + "/widgets.example.com"));
  CHECK(json::dump(*json::find_path(deleted, {"metadata", "finalizers"})) ==
        R"(["customresourcecleanup.apiextensions.k8s.io"])");
  CHECK(condition(deleted, "Terminating", "reason") == "InstanceDeletionPending");
  advance(h, milliseconds(100));
  CHECK(condition(parse(h.get(crds + "/widgets.example.com")), "Terminating", "reason") ==
        "InstanceDeletionInProgress");
  CHECK(h.get(widgets + "/w").status == 200);
  advance(h, milliseconds(100));
  CHECK(h.get(crds + "/widgets.example.com").status == 404);
  auto gone = h.get(widgets + "/w");
  CHECK(gone.status == 404);
  CHECK(gone.content_type == "text/plain; charset=utf-8");
}

TEST_CASE("a custom resource's create right after Established is held; after the window, and applies, are not") {
  ApiServer::Options options;
  options.controllers.crd_establish_delay = milliseconds(0);
  options.crd_create_hold = milliseconds(2000);
  options.crd_create_hold_window = milliseconds(2000);
  Harness h(options);
  REQUIRE(h.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kWidgetCrd).status == 201);
  auto widget = [](const char* name) {
    return std::string(R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":")") + name + "\"}}";
  };
  Request request;
  request.method = "POST";
  request.path = "/apis/example.com/v1/namespaces/default/widgets";
  request.content_type = "application/json";
  request.body = widget("a");
  request.identity = Harness::admin();
  auto held = h.api.handle(request);
  CHECK(held.hold == milliseconds(2000));
  CHECK(h.get("/apis/example.com/v1/namespaces/default/widgets/a").status == 404);  // not created while held
  request.held = true;
  CHECK(h.api.handle(request).status == 201);
  CHECK(h.apply("/apis/example.com/v1/namespaces/default/widgets/b?fieldManager=kstate", widget("b")).status == 201);
  h.clock->advance(milliseconds(2000));
  request.held = false;
  request.body = widget("c");
  CHECK(h.api.handle(request).status == 201);
}

}  // namespace controllers_test
