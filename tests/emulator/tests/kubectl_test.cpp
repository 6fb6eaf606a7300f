// Real kubectl against the emulator: if kubectl accepts what the emulator
// serves (discovery, OpenAPI, apply, diff, dry-run, delete, wait, auth), the
// emulator is faithful where clients look. Skipped when kubectl is absent.
#include <catch2/catch.hpp>
#include <regex>

#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace kubectl_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;

namespace {

const char* kKubectl = KSTATE_KUBECTL;

struct Kubectl {
  Emulator& emulator;
  TempDir cache{"kstate-kubectl-cache"};

  ProcessResult operator()(std::vector<std::string> args, const std::optional<std::string>& stdin_data = {}) {
    std::vector<std::string> argv = {kKubectl, "--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir",
                                     cache.path().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    kstate::testing::RunOptions options;
    options.stdin_data = stdin_data;
    options.timeout = std::chrono::seconds(60);
    options.env["HOME"] = cache.path().string();
    return kstate::testing::run_process(argv, options);
  }
};

const char* kManifest = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: demo}
data:
  key: value
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
)";

const char* kCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
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
            properties:
              size: {type: integer}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

#define SKIP_WITHOUT_KUBECTL()                            \
  if (!kstate::testing::program_available(kKubectl)) {    \
    WARN("kubectl not installed; skipping kubectl test"); \
    return;                                               \
  }

}  // namespace

TEST_CASE("kubectl: version, get and api-resources") {
  SKIP_WITHOUT_KUBECTL();
  Emulator emulator;
  Kubectl kubectl{emulator};
  auto version = kubectl({"version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("Server Version: v1.31.0") != std::string::npos);
  auto namespaces = kubectl({"get", "namespaces"});
  REQUIRE(namespaces.exit_code == 0);
  CHECK(namespaces.out.find("kube-system") != std::string::npos);
  auto resources = kubectl({"api-resources"});
  REQUIRE(resources.exit_code == 0);
  CHECK(std::regex_search(resources.out, std::regex("\ndeployments +deploy +apps/v1 +true +Deployment\n")));
  CHECK(resources.out.find("customresourcedefinitions") != std::string::npos);
  auto namespaced = kubectl({"api-resources", "--namespaced=false", "-o", "name"});
  CHECK(namespaced.out.find("namespaces\n") != std::string::npos);
  CHECK(namespaced.out.find("configmaps") == std::string::npos);
}

TEST_CASE("kubectl: apply --server-side, diff --server-side (0 equal, 1 changed), apply --dry-run=server, delete") {
  SKIP_WITHOUT_KUBECTL();
  Emulator emulator;
  Kubectl kubectl{emulator};
  auto applied = kubectl({"apply", "--server-side", "-f", "-"}, kManifest);
  REQUIRE(applied.exit_code == 0);
  CHECK(applied.out.find("configmap/demo serverside-applied") != std::string::npos);
  CHECK(applied.out.find("deployment.apps/web serverside-applied") != std::string::npos);

  auto same = kubectl({"diff", "--server-side", "-f", "-"}, kManifest);
  CHECK(same.exit_code == 0);
  CHECK(same.out.empty());

  std::string changed = replace(kManifest, "key: value", "key: other");
  auto different = kubectl({"diff", "--server-side", "-f", "-"}, changed);
  CHECK(different.exit_code == 1);
  CHECK(different.out.find("-  key: value") != std::string::npos);
  CHECK(different.out.find("+  key: other") != std::string::npos);

  auto dry = kubectl({"apply", "--server-side", "--dry-run=server", "-f", "-"}, changed);
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("(server dry run)") != std::string::npos);
  auto value = kubectl({"get", "configmap", "demo", "-o", "jsonpath={.data.key}"});
  CHECK(value.out == "value");

  auto service = kubectl({"get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"});
  CHECK(service.out.rfind("10.96.", 0) == 0);

  auto deleted = kubectl({"delete", "-f", "-"}, kManifest);
  CHECK(deleted.exit_code == 0);
  CHECK(deleted.out.find("configmap \"demo\" deleted") != std::string::npos);
  auto gone = kubectl({"get", "configmap", "demo"});
  CHECK(gone.exit_code == 1);
  CHECK(gone.err.find("Error from server (NotFound): configmaps \"demo\" not found") != std::string::npos);
}

TEST_CASE("kubectl: a server-side apply conflict is reported, and --force-conflicts takes ownership") {
  SKIP_WITHOUT_KUBECTL();
  Emulator emulator;
  Kubectl kubectl{emulator};
  REQUIRE(kubectl({"apply", "--server-side", "-f", "-"}, kManifest).exit_code == 0);
  std::string changed = replace(kManifest, "key: value", "key: other");
  auto clash = kubectl({"apply", "--server-side", "--field-manager", "intruder", "-f", "-"}, changed);
  CHECK(clash.exit_code == 1);
  CHECK(clash.err.find("conflict with \"kubectl\"") != std::string::npos);
  CHECK(clash.err.find(".data.key") != std::string::npos);
  auto forced =
      kubectl({"apply", "--server-side", "--field-manager", "intruder", "--force-conflicts", "-f", "-"}, changed);
  CHECK(forced.exit_code == 0);
  CHECK(kubectl({"get", "configmap", "demo", "-o", "jsonpath={.data.key}"}).out == "other");
}

TEST_CASE("kubectl: client-side apply creates, then patches with a strategic merge patch") {
  SKIP_WITHOUT_KUBECTL();
  Emulator emulator;
  Kubectl kubectl{emulator};
  auto created = kubectl({"apply", "-f", "-"}, kManifest);
  REQUIRE(created.exit_code == 0);
  CHECK(created.out.find("configmap/demo created") != std::string::npos);
  std::string changed = replace(kManifest, "image: nginx:1.25", "image: nginx:1.27");
  auto configured = kubectl({"apply", "-f", "-"}, changed);
  REQUIRE(configured.exit_code == 0);
  CHECK(configured.out.find("deployment.apps/web configured") != std::string::npos);
  CHECK(configured.out.find("configmap/demo unchanged") != std::string::npos);
  auto image = kubectl({"get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"});
  CHECK(image.out == "nginx:1.27");
  auto generation = kubectl({"get", "deployment", "web", "-o", "jsonpath={.metadata.generation}"});
  CHECK(generation.out == "2");
}

TEST_CASE("kubectl: wait --for=condition=Established on a CRD, then use the new kind") {
  SKIP_WITHOUT_KUBECTL();
  kstate::testing::EmulatorOptions options;
  // A real CRD has `status.conditions: null` until it is established (~25 ms, recordings
  // 59 and 62), and kubectl 1.32's wait fails on that null ("accessor error: <nil> is of
  // the type <nil>"): kubectl wait works against a real server because it starts later.
  options.crd_establish_delay_seconds = 0.05;
  Emulator emulator(options);
  Kubectl kubectl{emulator};
  REQUIRE(kubectl({"apply", "--server-side", "-f", "-"}, kCrd).exit_code == 0);
  auto waited = kubectl({"wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s"});
  CHECK(waited.exit_code == 0);
  CHECK(waited.out.find("condition met") != std::string::npos);
  auto created =
      kubectl({"apply", "--server-side", "-f", "-"},
              std::string("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n"));
  CHECK(created.exit_code == 0);
  auto listed = kubectl({"get", "wd", "-o", "name"});
  CHECK(listed.out == "widget.example.com/w\n");
  auto unknown =
      kubectl({"apply", "--server-side", "-f", "-"},
              std::string("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: x\nspec:\n  bogus: 3\n"));
  CHECK(unknown.exit_code == 1);
  // Server-side apply refuses an unknown field with 500, whatever fieldValidation (recording 66).
  CHECK(unknown.err.find(".spec.bogus: field not declared in schema") != std::string::npos);
  REQUIRE(kubectl({"delete", "crd", "widgets.example.com"}).exit_code == 0);
  auto after = kubectl({"get", "widgets"});
  CHECK(after.exit_code == 1);
}

TEST_CASE("kubectl: the readonly context is forbidden to write - the cert-admin context authenticates by certificate") {
  SKIP_WITHOUT_KUBECTL();
  Emulator emulator;
  Kubectl kubectl{emulator};
  auto forbidden = kubectl({"--context", "readonly", "create", "configmap", "x"});
  CHECK(forbidden.exit_code == 1);
  CHECK(forbidden.err.find("configmaps is forbidden: User \"readonly\" cannot create resource \"configmaps\"") !=
        std::string::npos);
  CHECK(kubectl({"--context", "readonly", "get", "configmaps"}).exit_code == 0);
  auto by_certificate = kubectl({"--context", "cert-admin", "create", "configmap", "y"});
  CHECK(by_certificate.exit_code == 0);
  auto log = emulator.request_log();
  CHECK(log.find("\"user\":\"cert-admin\"") != std::string::npos);
}

}  // namespace kubectl_test
