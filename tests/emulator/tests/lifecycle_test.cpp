// Object lifecycle rules: immutable fields, fieldValidation, deletion with
// finalizers and propagation policies, namespace termination, garbage
// collection through ownerReferences, deletecollection and preconditions.
#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace lifecycle_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string deployment(const std::string& name, const std::string& app, const std::string& image = "nginx") {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
         R"("},"spec":{"selector":{"matchLabels":{"app":")" + app + R"("}},"template":{"metadata":{"labels":{"app":")" +
         app + R"("}},"spec":{"containers":[{"name":"c","image":")" + image + R"("}]}}}})";
}

void settle(Harness& h) {
  for (int i = 0; i < 10; ++i) {
    h.clock->advance(std::chrono::seconds(1));
    h.api.tick();
  }
}

}  // namespace

TEST_CASE("immutable fields: workload selectors, Job template, immutable ConfigMaps, PVC spec") {
  Harness h;
  const std::string deployments = "/apis/apps/v1/namespaces/default/deployments";
  REQUIRE(h.post(deployments, deployment("web", "web")).status == 201);
  auto selector = h.put(deployments + "/web", deployment("web", "other"));
  REQUIRE(selector.status == 422);
  CHECK(str(parse(selector), {"message"}).find("spec.selector: Invalid value:") != std::string::npos);
  CHECK(str(parse(selector), {"message"}).find("field is immutable") != std::string::npos);
  CHECK(h.put(deployments + "/web", deployment("web", "web", "nginx:2")).status == 200);

  const std::string jobs = "/apis/batch/v1/namespaces/default/jobs";
  auto job = [](const std::string& image) {
    return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":")" +
           image + R"("}]}}}})";
  };
  REQUIRE(h.post(jobs, job("a")).status == 201);
  auto template_change = h.put(jobs + "/j", job("b"));
  CHECK(template_change.status == 422);
  CHECK(str(parse(template_change), {"message"}).find("spec.template") != std::string::npos);

  auto frozen = [](const std::string& value, bool immutable) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":)" +
           std::string(immutable ? "true" : "false") + R"(,"data":{"k":")" + value + R"("}})";
  };
  REQUIRE(h.post(kConfigMaps, frozen("1", true)).status == 201);
  auto data_change = h.put(kConfigMaps + "/frozen", frozen("2", true));
  CHECK(data_change.status == 422);
  CHECK(str(parse(data_change), {"message"}).find("field is immutable when `immutable` is set") != std::string::npos);
  CHECK(h.put(kConfigMaps + "/frozen", frozen("1", false)).status == 422);
  CHECK(h.del(kConfigMaps + "/frozen").status == 200);

  const std::string claims = "/api/v1/namespaces/default/persistentvolumeclaims";
  auto claim = [](const std::string& size, const std::string& mode) {
    return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":[")" +
           mode + R"("],"resources":{"requests":{"storage":")" + size + R"("}}}})";
  };
  REQUIRE(h.post(claims, claim("1Gi", "ReadWriteOnce")).status == 201);
  CHECK(h.put(claims + "/data", claim("2Gi", "ReadWriteOnce")).status == 200);
  auto mode_change = h.put(claims + "/data", claim("2Gi", "ReadWriteMany"));
  CHECK(mode_change.status == 422);
  CHECK(str(parse(mode_change), {"message"}).find("spec is immutable after creation except resources.requests") !=
        std::string::npos);
}

TEST_CASE("fieldValidation: Strict rejects unknown fields, Warn warns and drops them, Ignore drops them silently") {
  Harness h;
  std::string body =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","bogus":1},"data":{},"extra":true})";
  auto strict = h.post(kConfigMaps + "?fieldValidation=Strict", body);
  CHECK(strict.status == 400);
  CHECK(str(parse(strict), {"message"}) ==
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field "
        "\"metadata.bogus\", unknown field \"extra\"");  // in the order the body has them
  auto warn = h.post(kConfigMaps + "?fieldValidation=Warn", body);
  REQUIRE(warn.status == 201);
  CHECK(json::find(parse(warn), "extra") == nullptr);
  REQUIRE(warn.headers.size() == 2);
  CHECK(warn.headers[0].first == "Warning");
  CHECK(warn.headers[0].second == "299 - \"unknown field \\\"metadata.bogus\\\"\"");
  CHECK(warn.headers[1].second == "299 - \"unknown field \\\"extra\\\"\"");
  h.del(kConfigMaps + "/a");
  auto ignore = h.post(kConfigMaps + "?fieldValidation=Ignore", body);
  CHECK(ignore.status == 201);
  CHECK(ignore.headers.empty());
  CHECK(h.post(kConfigMaps + "?fieldValidation=Loud", body).status == 400);
}

TEST_CASE("finalizers keep a deleted object with deletionTimestamp until the last one is removed") {
  Harness h;
  REQUIRE(h.post(kConfigMaps,
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f","finalizers":["example.com/hold"]}})")
              .status == 201);
  auto deleted = h.del(kConfigMaps + "/f");
  REQUIRE(deleted.status == 200);
  auto held = parse(h.get(kConfigMaps + "/f"));
  CHECK_FALSE(str(held, {"metadata", "deletionTimestamp"}).empty());
  auto released =
      h.call("PATCH", kConfigMaps + "/f", R"({"metadata":{"finalizers":null}})", "application/merge-patch+json");
  CHECK(released.status == 200);
  CHECK(h.get(kConfigMaps + "/f").status == 404);
}

TEST_CASE("deleting a namespace terminates it: creates into it are 403, its contents go, then it goes") {
  Harness h;
  REQUIRE(h.post("/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})").status ==
          201);
  REQUIRE(
      h.post("/api/v1/namespaces/team/configmaps", R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}})")
          .status == 201);
  auto deleted = parse(h.del("/api/v1/namespaces/team"));
  CHECK(str(deleted, {"status", "phase"}) == "Terminating");
  auto refused =
      h.post("/api/v1/namespaces/team/configmaps", R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}})");
  CHECK(refused.status == 403);
  auto status = parse(refused);
  CHECK(str(status, {"reason"}) == "Forbidden");
  CHECK(str(status, {"message"}).find("because it is being terminated") != std::string::npos);
  CHECK(str((*json::find_path(status, {"details", "causes"}))[0], {"reason"}) == "NamespaceTerminating");
  settle(h);
  CHECK(h.get("/api/v1/namespaces/team/configmaps/a").status == 404);
  CHECK(h.get("/api/v1/namespaces/team").status == 404);
}

TEST_CASE("every namespace gets kube-controller-manager's ServiceAccount `default` and ConfigMap `kube-root-ca.crt`") {
  ApiServer::Options options;
  options.root_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  Harness h(options);
  const std::string sa = "/api/v1/namespaces/team/serviceaccounts/default";
  const std::string ca = "/api/v1/namespaces/team/configmaps/kube-root-ca.crt";
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    CHECK(h.get("/api/v1/namespaces/" + std::string(ns) + "/serviceaccounts/default").status == 200);
    CHECK(h.get("/api/v1/namespaces/" + std::string(ns) + "/configmaps/kube-root-ca.crt").status == 200);
  }
  const std::string team = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})";
  REQUIRE(h.post("/api/v1/namespaces?dryRun=All", team).status == 201);
  CHECK(h.get(sa).status == 404);  // nothing for a dry run
  REQUIRE(h.post("/api/v1/namespaces", team).status == 201);
  auto account = parse(h.get(sa));
  CHECK(str(account, {"kind"}) == "ServiceAccount");
  CHECK(json::find_path(account, {"metadata", "managedFields"}) == nullptr);  // no field of its own
  auto bundle = parse(h.get(ca));
  CHECK(str(bundle, {"data", "ca.crt"}) == options.root_ca_pem);
  CHECK(str(bundle, {"metadata", "annotations", "kubernetes.io/description"}).find("CA bundle") != std::string::npos);
  const json::Value* managed = json::find_path(bundle, {"metadata", "managedFields"});
  REQUIRE(managed != nullptr);
  REQUIRE(managed->IsArray());
  REQUIRE(managed->Size() == 1);
  CHECK(str((*managed)[0], {"manager"}) == "kube-controller-manager");

  // Deleted, they come back; the bundle's data changed by someone else is put back, the
  // rest of what they changed is kept (as the root-ca-cert-publisher does).
  const std::string old_uid = str(account, {"metadata", "uid"});
  REQUIRE(h.del(sa).status == 200);
  REQUIRE(h.apply(ca + "?fieldManager=someone&force=true",
                  R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kube-root-ca.crt","labels":{"a":"b"}},)"
                  R"("data":{"ca.crt":"mine","extra":"x"}})")
              .status == 200);
  CHECK(str(parse(h.get(ca)), {"data", "ca.crt"}) == "mine");
  h.clock->advance(std::chrono::milliseconds(50));
  h.api.tick();
  CHECK(str(parse(h.get(sa)), {"metadata", "uid"}) != old_uid);
  auto restored = parse(h.get(ca));
  CHECK(str(restored, {"data", "ca.crt"}) == options.root_ca_pem);
  CHECK(json::find_path(restored, {"data", "extra"}) == nullptr);
  CHECK(str(restored, {"metadata", "labels", "a"}) == "b");

  // A terminating namespace gets nothing back, and goes.
  REQUIRE(h.del("/api/v1/namespaces/team").status == 200);
  REQUIRE(h.del(sa).status == 200);
  h.clock->advance(std::chrono::milliseconds(50));  // within its termination delay
  h.api.tick();
  CHECK(h.get("/api/v1/namespaces/team").status == 200);
  CHECK(h.get(sa).status == 404);
  settle(h);
  CHECK(h.get(ca).status == 404);
  CHECK(h.get("/api/v1/namespaces/team").status == 404);

  // With a delay (a real cluster takes 5-100 ms), they come on the first tick after it.
  options.controllers.namespace_defaults_delay = std::chrono::milliseconds(100);
  Harness later(options);
  REQUIRE(later.post("/api/v1/namespaces", team).status == 201);
  CHECK(later.get(sa).status == 404);
  later.clock->advance(std::chrono::milliseconds(60));
  later.api.tick();
  CHECK(later.get(sa).status == 404);
  later.clock->advance(std::chrono::milliseconds(60));
  later.api.tick();
  CHECK(later.get(sa).status == 200);
  CHECK(later.get(ca).status == 200);

  // Without those controllers: nothing.
  options.controllers.namespace_defaults = false;
  Harness bare(options);
  REQUIRE(bare.post("/api/v1/namespaces", team).status == 201);
  CHECK(bare.get(sa).status == 404);
  CHECK(bare.get(ca).status == 404);
  CHECK(bare.get("/api/v1/namespaces/default/serviceaccounts/default").status == 404);
}

TEST_CASE("ownerReferences: background deletion collects dependents, orphan keeps them, foreground waits for them") {
  Harness h;
  auto owner_uid = [&](const std::string& name) {
    auto created =
        parse(h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"("}})"));
    return str(created, {"metadata", "uid"});
  };
  auto dependent = [&](const std::string& name, const std::string& owner, const std::string& uid) {
    return h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                                   R"(","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":")" + owner +
                                   R"(","uid":")" + uid + R"("}]}})");
  };
  auto background = owner_uid("bg-owner");
  REQUIRE(dependent("bg-child", "bg-owner", background).status == 201);
  auto orphan = owner_uid("orphan-owner");
  REQUIRE(dependent("orphan-child", "orphan-owner", orphan).status == 201);
  auto foreground = owner_uid("fg-owner");
  REQUIRE(dependent("fg-child", "fg-owner", foreground).status == 201);

  CHECK(h.del(kConfigMaps + "/bg-owner?propagationPolicy=Background").status == 200);
  CHECK(h.del(kConfigMaps + "/orphan-owner", R"({"propagationPolicy":"Orphan"})").status == 200);
  auto fg = parse(h.del(kConfigMaps + "/fg-owner?propagationPolicy=Foreground"));
  CHECK_FALSE(str(fg, {"metadata", "deletionTimestamp"}).empty());
  CHECK(h.get(kConfigMaps + "/fg-owner").status == 200);  // waits for its dependents
  settle(h);
  CHECK(h.get(kConfigMaps + "/bg-child").status == 404);
  auto kept = h.get(kConfigMaps + "/orphan-child");
  REQUIRE(kept.status == 200);
  CHECK(json::find_path(parse(kept), {"metadata", "ownerReferences"}) == nullptr);
  CHECK(h.get(kConfigMaps + "/fg-child").status == 404);
  CHECK(h.get(kConfigMaps + "/fg-owner").status == 404);
  CHECK(h.del(kConfigMaps + "/orphan-child?propagationPolicy=Sideways").status == 400);
}

TEST_CASE("delete preconditions on uid and resourceVersion are checked") {
  Harness h;
  auto created = parse(h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}})"));
  auto stale = h.del(kConfigMaps + "/p", R"({"preconditions":{"resourceVersion":"1"}})");
  CHECK(stale.status == 409);
  CHECK(str(parse(stale), {"message"}).find("Precondition failed") != std::string::npos);
  CHECK(h.del(kConfigMaps + "/p", R"({"preconditions":{"uid":"wrong"}})").status == 409);
  CHECK(
      h.del(kConfigMaps + "/p", R"({"preconditions":{"uid":")" + str(created, {"metadata", "uid"}) + R"("}})").status ==
      200);
  CHECK(h.del(kConfigMaps + "/p").status == 404);
}

TEST_CASE("deletecollection deletes what the selector matches") {
  Harness h;
  for (const auto& [name, app] : {std::pair{"a", "x"}, std::pair{"b", "x"}, std::pair{"c", "y"}}) {
    h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + std::string(name) +
                            R"(","labels":{"app":")" + app + R"("}}})");
  }
  // The harness passes the query as the HTTP layer hands it over: already decoded.
  auto response = h.del(kConfigMaps + "?labelSelector=app=x");
  REQUIRE(response.status == 200);
  CHECK(json::find(parse(response), "items")->Size() == 2);
  CHECK(h.get(kConfigMaps + "/a").status == 404);
  CHECK(h.get(kConfigMaps + "/c").status == 200);
}

}  // namespace lifecycle_test
