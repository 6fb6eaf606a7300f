// Request building: the exact verbs, URLs, query strings, content types and the
// idempotency flag for core and named groups, namespaced and cluster-scoped
// resources, subresources and every option; names and namespaces validated.
#include "core/request.hpp"

#include <catch2/catch.hpp>

#include "tests/support/api_resources.hpp"

namespace request_test {

using namespace kstate;

namespace {

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

ApiResource deployments() {
  ApiResource resource;
  resource.group = "apps";
  resource.version = "v1";
  resource.kind = "Deployment";
  resource.plural = "deployments";
  resource.namespaced = true;
  resource.subresources = {"status", "scale"};
  return resource;
}

ApiResource cluster_roles() {
  ApiResource resource;
  resource.group = "rbac.authorization.k8s.io";
  resource.version = "v1";
  resource.kind = "ClusterRole";
  resource.plural = "clusterroles";
  resource.namespaced = false;
  return resource;
}

}  // namespace

TEST_CASE("get builds core, named-group and cluster-scoped object URLs", "[request]") {
  auto cm = requests::get(configmaps(), "kube-system", "coredns");
  REQUIRE(cm.ok());
  CHECK(cm->verb == "GET");
  CHECK(cm->target() == "/api/v1/namespaces/kube-system/configmaps/coredns");
  CHECK(cm->idempotent);

  auto deploy = requests::get(deployments(), "default", "web");
  REQUIRE(deploy.ok());
  CHECK(deploy->target() == "/apis/apps/v1/namespaces/default/deployments/web");

  // A namespace given for a cluster-scoped resource is ignored, as kubectl does.
  auto role = requests::get(cluster_roles(), "default", "system:controller:foo");
  REQUIRE(role.ok());
  CHECK(role->target() == "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Acontroller%3Afoo");
}

TEST_CASE("subresources are appended to the object path", "[request]") {
  auto status = requests::get(deployments(), "default", "web", "status");
  REQUIRE(status.ok());
  CHECK(status->target() == "/apis/apps/v1/namespaces/default/deployments/web/status");
  auto scale = requests::replace(deployments(), "default", "web", "{}", {}, "scale");
  REQUIRE(scale.ok());
  CHECK(scale->verb == "PUT");
  CHECK(scale->target() == "/apis/apps/v1/namespaces/default/deployments/web/scale");
  CHECK_FALSE(requests::get(deployments(), "default", "web", "../secrets").ok());
}

TEST_CASE("list and watch encode selectors, paging and resourceVersion", "[request]") {
  ListOptions options;
  options.label_selector = "app=web,tier!=db";
  options.field_selector = "metadata.name=x";
  options.limit = 500;
  options.continue_token = "abc/+=";
  options.resource_version = "42";
  auto all = requests::list(configmaps(), "", options);
  REQUIRE(all.ok());
  CHECK(all->target() ==
        "/api/v1/configmaps?labelSelector=app%3Dweb%2Ctier%21%3Ddb&fieldSelector=metadata.name%3Dx&limit=500"
        "&continue=abc%2F%2B%3D&resourceVersion=42");

  ListOptions watch_options;
  watch_options.resource_version = "100";
  watch_options.allow_watch_bookmarks = true;
  watch_options.timeout_seconds = 300;
  auto watch = requests::watch(deployments(), "prod", watch_options);
  REQUIRE(watch.ok());
  CHECK(watch->target() ==
        "/apis/apps/v1/namespaces/prod/deployments?watch=true&resourceVersion=100&timeoutSeconds=300"
        "&allowWatchBookmarks=true");
  CHECK(watch->streaming);
  CHECK(watch->idempotent);
  CHECK(watch->accept == "application/json");
}

TEST_CASE("metadata-only lists and watches ask for PartialObjectMetadata, full objects as the fallback", "[request]") {
  ListOptions options;
  options.metadata_only = true;
  options.label_selector = "applyset.kubernetes.io/part-of=applyset-x";
  auto watch = requests::watch(deployments(), "", options);
  REQUIRE(watch.ok());
  CHECK(watch->target() ==
        "/apis/apps/v1/deployments?watch=true&labelSelector=applyset.kubernetes.io%2Fpart-of%3Dapplyset-x");
  CHECK(watch->accept == "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  auto list = requests::list(deployments(), "", options);
  REQUIRE(list.ok());
  CHECK(list->accept == watch->accept);
}

TEST_CASE("writes carry dryRun, fieldManager, fieldValidation and the patch content type", "[request]") {
  WriteOptions options;
  options.dry_run = true;
  options.field_manager = "kstate";
  options.field_validation = "Strict";
  auto create = requests::create(configmaps(), "default", R"({"kind":"ConfigMap"})", options);
  REQUIRE(create.ok());
  CHECK(create->verb == "POST");
  CHECK(create->target() ==
        "/api/v1/namespaces/default/configmaps?dryRun=All&fieldManager=kstate&fieldValidation=Strict");
  CHECK(create->content_type == "application/json");
  CHECK(create->body == R"({"kind":"ConfigMap"})");
  CHECK(create->idempotent);  // dryRun writes are safe to repeat

  CHECK_FALSE(requests::create(configmaps(), "default", "{}")->idempotent);  // a real create is never repeated

  WriteOptions apply_options;
  apply_options.field_manager = "kstate";
  apply_options.force = true;
  auto apply = requests::patch(deployments(), "default", "web", PatchType::apply, "{}", apply_options);
  REQUIRE(apply.ok());
  CHECK(apply->verb == "PATCH");
  CHECK(apply->target() == "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kstate&force=true");
  CHECK(apply->content_type == "application/apply-patch+yaml");
  CHECK(apply->idempotent);

  auto merge = requests::patch(deployments(), "default", "web", PatchType::merge, "{}");
  REQUIRE(merge.ok());
  CHECK(merge->content_type == "application/merge-patch+json");
  CHECK_FALSE(merge->idempotent);
  CHECK(requests::patch(deployments(), "default", "web", PatchType::json, "[]")->content_type ==
        "application/json-patch+json");
  CHECK(requests::patch(deployments(), "default", "web", PatchType::strategic, "{}")->content_type ==
        "application/strategic-merge-patch+json");

  // Apply needs a field manager; force is only meaningful for apply.
  CHECK_FALSE(requests::patch(deployments(), "default", "web", PatchType::apply, "{}").ok());
  WriteOptions forced_merge;
  forced_merge.force = true;
  CHECK_FALSE(requests::patch(deployments(), "default", "web", PatchType::merge, "{}", forced_merge).ok());
}

TEST_CASE("delete and deletecollection carry propagation, grace period and preconditions", "[request]") {
  DeleteOptions options;
  options.propagation_policy = "Foreground";
  options.grace_period_seconds = 0;
  options.dry_run = true;
  auto remove = requests::remove(deployments(), "default", "web", options);
  REQUIRE(remove.ok());
  CHECK(remove->verb == "DELETE");
  CHECK(
      remove->target() ==
      "/apis/apps/v1/namespaces/default/deployments/web?dryRun=All&propagationPolicy=Foreground&gracePeriodSeconds=0");
  CHECK(remove->body.empty());

  DeleteOptions guarded;
  guarded.precondition_resource_version = "7";
  auto with_precondition = requests::remove(configmaps(), "default", "x", guarded);
  REQUIRE(with_precondition.ok());
  CHECK(with_precondition->body ==
        R"({"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"7"}})");
  CHECK_FALSE(with_precondition->idempotent);

  ListOptions selector;
  selector.label_selector = "app=old";
  auto collection = requests::delete_collection(configmaps(), "default", selector, {});
  REQUIRE(collection.ok());
  CHECK(collection->target() == "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dold");
}

TEST_CASE("names and namespaces are validated before they enter a URL", "[request]") {
  for (const char* bad_name : {"", ".", "..", "a/b", "../../secrets", "a%2Fb", "tab\there"}) {
    INFO(bad_name);
    CHECK(requests::get(configmaps(), "default", bad_name).error().kind == ErrorKind::invalid_input);
  }
  for (const char* bad_ns : {"Default", "-a", "a-", "a/b", "..", "a_b", "a.b"}) {
    INFO(bad_ns);
    CHECK_FALSE(requests::get(configmaps(), bad_ns, "x").ok());
    CHECK_FALSE(requests::list(configmaps(), bad_ns).ok());
  }
  CHECK_FALSE(requests::get(configmaps(), std::string(64, 'a'), "x").ok());
  CHECK(requests::get(configmaps(), std::string(63, 'a'), "x").ok());
  // A namespaced object needs a namespace (only list/watch accept "all namespaces").
  CHECK_FALSE(requests::get(configmaps(), "", "x").ok());
  CHECK_FALSE(requests::create(configmaps(), "", "{}").ok());
  CHECK(requests::list(configmaps(), "").ok());
  // Names that are valid for the server but need escaping are escaped, not rejected.
  CHECK(requests::get(configmaps(), "default", "a b?c#d")->target() ==
        "/api/v1/namespaces/default/configmaps/a%20b%3Fc%23d");
  // Discovery data cannot inject path segments either.
  auto hostile = configmaps();
  hostile.plural = "configmaps/../../x";
  CHECK_FALSE(requests::list(hostile, "default").ok());
}

}  // namespace request_test
