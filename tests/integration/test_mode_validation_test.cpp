// `kstate test` validates everything it shows as "would be created" (issue 34, item 5),
// also in a namespace the same run creates, where even a dry run answers 404
// (recording 41): built-in kinds against the schema the server publishes (OpenAPI v3),
// custom resources against their CRD's, and an object_updated of an object the run
// creates for the fields it changes. What the server would refuse fails the state
// (exit 2) naming the field and the state's file:line; the rest stays pending (exit 1)
// and says what it was checked against, or why it could not be.
#include <catch2/catch.hpp>

#include "tests/support/kstate_cli.hpp"

namespace test_mode_validation_test {

using kstate::testing::state_block;
using kstate::testing::write_file;
using Cluster = kstate::testing::KstateCluster;

namespace {

// A Deployment in namespace `fresh` with this spec (15 lines with valid_spec).
std::string deployment(const std::string& name, const std::string& spec) {
  return "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: fresh}\nspec:\n" + spec;
}

const char* const valid_spec = R"(  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.25
          resources: {requests: {cpu: 0.5, memory: 64Mi}}
          ports: [{containerPort: 80}]
)";

std::string with(std::string spec, const std::string& from, const std::string& to) {
  spec.replace(spec.find(from), from.size(), to);
  return spec;
}

// The emulator publishing schemas of the built-in kinds, as kube-apiserver always does.
kstate::testing::EmulatorOptions with_schemas() {
  kstate::testing::EmulatorOptions options;
  options.openapi_schemas = true;
  return options;
}

void write_namespace(const std::string& dir) {
  write_file(std::filesystem::path(dir) / "00-namespace.yaml",
             "apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh}\n");
}

}  // namespace

TEST_CASE("test mode checks objects in a namespace the run creates against the server's schema") {
  Cluster cluster(with_schemas());
  const std::string dir = cluster.manifest_dir("fresh");
  write_namespace(dir);
  write_file(std::filesystem::path(dir) / "10-apps.yaml",
             // (each document starts on the line after its `---`: lines 2, 17, 32, 47 and 61)
             deployment("valid", valid_spec) +
                 deployment("three", with(valid_spec, "replicas: 2", "replicas: \"three\"")) +
                 deployment("misspelt", with(valid_spec, "  replicas: 2\n", "  replica: 2\n")) +
                 deployment("no-selector", with(valid_spec, "  selector: {matchLabels: {app: web}}\n", "")) +
                 "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: fresh, annotation: "
                 "{a: b}}\ndata: {a: b}\n");
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 2);
  const std::string file = dir + "/10-apps.yaml";

  const std::string valid = state_block(test.out, "Deployment/fresh/valid");
  CHECK(valid.find("Result: None") != std::string::npos);
  CHECK(valid.find("Comment: would be created; validated locally against the server's OpenAPI schema of apps/v1 "
                   "Deployment (server validation skipped because namespace fresh does not exist yet)") !=
        std::string::npos);

  const std::string three = state_block(test.out, "Deployment/fresh/three");
  CHECK(three.find("Result: False") != std::string::npos);
  CHECK(three.find("Comment: invalid against the server's OpenAPI schema of apps/v1 Deployment (checked locally: "
                   "namespace fresh does not exist yet):\n  spec.replicas: Invalid value: \"string\": spec.replicas "
                   "in body must be of type integer: \"string\"") != std::string::npos);
  CHECK(three.find("Source: " + file + ":17:1") != std::string::npos);

  const std::string misspelt = state_block(test.out, "Deployment/fresh/misspelt");
  CHECK(misspelt.find("Result: False") != std::string::npos);
  CHECK(misspelt.find("  unknown field \"spec.replica\"") != std::string::npos);
  CHECK(misspelt.find("Source: " + file + ":32:1") != std::string::npos);

  const std::string no_selector = state_block(test.out, "Deployment/fresh/no-selector");
  CHECK(no_selector.find("Result: False") != std::string::npos);
  CHECK(no_selector.find("  spec.selector: Required value") != std::string::npos);
  CHECK(no_selector.find("Source: " + file + ":47:1") != std::string::npos);

  const std::string settings = state_block(test.out, "ConfigMap/fresh/settings");
  CHECK(settings.find("Result: False") != std::string::npos);
  CHECK(settings.find("  unknown field \"metadata.annotation\"") != std::string::npos);
  CHECK(test.out.find("Failed: 4") != std::string::npos);
  // Nothing was written, not even the namespace.
  CHECK(cluster.get("/api/v1/namespaces/fresh").IsNull());

  // The real apply agrees with what test mode said about each.
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  CHECK_FALSE(cluster.get("/apis/apps/v1/namespaces/fresh/deployments/valid").IsNull());
  for (const char* refused : {"three", "misspelt", "no-selector"}) {
    INFO(refused);
    CHECK(cluster.get(std::string("/apis/apps/v1/namespaces/fresh/deployments/") + refused).IsNull());
  }
}

TEST_CASE("test mode: valid objects in a new namespace stay pending (exit 1), checked with a few requests") {
  Cluster cluster(with_schemas());
  const std::string dir = cluster.manifest_dir("fresh");
  write_namespace(dir);
  write_file(std::filesystem::path(dir) / "10-apps.yaml", deployment("web", valid_spec) + R"(---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: fresh}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: fresh, labels: {tier: web}}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: fresh}
stringData: {token: hunter2}
)");
  write_file(std::filesystem::path(dir) / "20-update.yaml", R"(web-replicas:
  object_updated:
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: fresh}
      spec: {replicas: 3}
    require: [Deployment/fresh/web]
)");
  cluster.emulator.reset_request_log();
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);
  CHECK(test.out.find("Failed: 0") != std::string::npos);
  for (const char* name :
       {"Deployment/fresh/web", "Service/fresh/web", "ConfigMap/fresh/settings", "Secret/fresh/token"}) {
    INFO(name);
    CHECK(state_block(test.out, name)
              .find("would be created; validated locally against the server's OpenAPI schema of ") !=
          std::string::npos);
  }
  CHECK(test.out.find("Comment: would be updated once this run creates it; validated locally against the server's "
                      "OpenAPI schema of apps/v1 Deployment (server validation skipped because "
                      "Deployment/fresh/web does not exist yet)") != std::string::npos);
  // The index and one document per group version (api/v1, apps/v1), read once.
  const int openapi = cluster.emulator.count_requests("GET", "/openapi/v3");
  CHECK(openapi == 3);
  WARN("kstate test of 5 states in a new namespace: " << openapi << " OpenAPI requests, "
                                                      << cluster.emulator.count_requests("", "/") << " in all");
  // The next run takes the documents from the cache: only the index is read again.
  cluster.emulator.reset_request_log();
  CHECK(cluster.test(dir).exit_code == 1);
  CHECK(cluster.emulator.count_requests("GET", "/openapi/v3") == 1);
}

TEST_CASE("test mode: an object_updated of an object the run creates is checked for the fields it changes") {
  Cluster cluster(with_schemas());
  const std::string dir = cluster.manifest_dir("fresh");
  write_namespace(dir);
  write_file(std::filesystem::path(dir) / "10-apps.yaml", deployment("web", valid_spec));
  write_file(std::filesystem::path(dir) / "20-update.yaml", R"(web-replicas:
  object_updated:
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: fresh}
      spec: {replicas: lots}
    require: [Deployment/fresh/web]
)");
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 2);
  CHECK(test.out.find("  spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer") !=
        std::string::npos);
  CHECK(test.out.find("Source: " + dir + "/20-update.yaml:1:1") != std::string::npos);
}

TEST_CASE("test mode: a custom resource in a new namespace is checked against its CRD's schema") {
  Cluster cluster(with_schemas());
  const std::string dir = cluster.manifest_dir("widgets");
  write_file(std::filesystem::path(dir) / "crd.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer}
)");
  REQUIRE(cluster.apply(dir).exit_code == 0);  // the CRD exists; the namespace does not
  std::filesystem::remove(std::filesystem::path(dir) / "crd.yaml");
  write_namespace(dir);
  write_file(std::filesystem::path(dir) / "10-widgets.yaml", R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: good, namespace: fresh}
spec: {size: 2}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: bad, namespace: fresh}
spec: {colour: red}
)");
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 2);
  const std::string good = state_block(test.out, "Widget/fresh/good");
  CHECK(good.find("Result: None") != std::string::npos);
  CHECK(good.find("would be created; validated locally against ") != std::string::npos);
  const std::string bad = state_block(test.out, "Widget/fresh/bad");
  CHECK(bad.find("Result: False") != std::string::npos);
  CHECK(bad.find("  spec.size: Required value") != std::string::npos);
  CHECK(bad.find("unknown field \"spec.colour\"") != std::string::npos);
  CHECK(bad.find("Source: " + dir + "/10-widgets.yaml:6:1") != std::string::npos);
}

}  // namespace test_mode_validation_test
