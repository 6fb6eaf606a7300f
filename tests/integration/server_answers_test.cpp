// What the API server's answers mean, as a user of `kstate apply` / `kstate test` sees
// them (issue 34, item 4): server-side apply's 500 for a field the schema does not
// declare is a manifest error naming the field and the state's file:line, sent once;
// the server's Warning headers are shown with the state they belong to in every report
// format and logged once per run, escaped and bounded; a path the server does not serve
// ("404 page not found") reads discovery again instead of failing on a stale kind;
// leader election's Lease times are written as the server accepts them.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <regex>
#include <thread>

#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "daemon/lease_store.hpp"
#include "tests/support/kstate_cli.hpp"

namespace server_answers_test {

using kstate::testing::field;
using kstate::testing::state_block;
using kstate::testing::write_file;
using Cluster = kstate::testing::KstateCluster;
namespace json = kstate::json;

namespace {

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
    ++count;
  }
  return count;
}

const char* const misspelt = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: fine
  namespace: default
data:
  color: blue
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: typo
  namespace: default
  annotation:
    note: typo
data:
  color: blue
)";

}  // namespace

TEST_CASE("apply: a field the server's schema does not declare is a manifest error naming it, never retried") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("misspelt");
  write_file(std::filesystem::path(dir) / "app.yaml", misspelt);
  const std::string typo_path = "/api/v1/namespaces/default/configmaps/typo";

  for (const char* command : {"test", "apply"}) {
    INFO(command);
    cluster.emulator.reset_request_log();
    auto run = std::string(command) == "test" ? cluster.test(dir) : cluster.apply(dir);
    CHECK(run.exit_code == 2);
    const std::string typo = state_block(run.out, "ConfigMap/default/typo");
    CHECK(typo.find("Result: False") != std::string::npos);
    // The field as a manifest path, and where the state is.
    CHECK(typo.find("Comment: the object does not match the server's schema for its kind\n"
                    "  * metadata.annotation: field not declared in schema") != std::string::npos);
    CHECK(typo.find("Source: " + dir + "/app.yaml:9:1") != std::string::npos);
    // Server-side apply answered 500 (recording 26): the request's fault, sent once.
    CHECK(cluster.emulator.count_requests("PATCH", typo_path) == 1);
    CHECK(run.out.find("gave up after") == std::string::npos);
    // The log (the daemon's too) says it on one line, with the state's file:line.
    CHECK(run.err.find("failed ConfigMap/default/typo (" + dir +
                       "/app.yaml:9:1): the object does not match the server's schema for its kind; "
                       "metadata.annotation: field not declared in schema") != std::string::npos);
    // The other state is unaffected.
    CHECK(state_block(run.out, "ConfigMap/default/fine").find("Result: False") == std::string::npos);
  }
  CHECK(cluster.get(typo_path).IsNull());
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/fine").IsNull());
}

TEST_CASE("apply: a custom resource's undeclared field is named the same way (recording 66)") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("gizmos");
  write_file(std::filesystem::path(dir) / "00-crd.yaml", R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.recorder.example.org
spec:
  group: recorder.example.org
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
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
)");
  write_file(std::filesystem::path(dir) / "10-gizmo.yaml", R"(apiVersion: recorder.example.org/v1
kind: Gizmo
metadata: {name: gizmo-c, namespace: default}
spec:
  size: 4
  colour: red
)");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  const std::string gizmo = state_block(apply.out, "Gizmo/default/gizmo-c");
  CHECK(gizmo.find("Result: False") != std::string::npos);
  CHECK(gizmo.find("  * spec.colour: field not declared in schema") != std::string::npos);
  CHECK(gizmo.find("10-gizmo.yaml:1:1") != std::string::npos);
  CHECK(cluster.emulator.count_requests("PATCH", "/apis/recorder.example.org/v1/namespaces/default/gizmos/gizmo-c") ==
        1);
}

TEST_CASE("the server's warnings are shown with their state in text, JSON and JUnit, and logged once per run") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("warned");
  write_file(std::filesystem::path(dir) / "cms.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: default}
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: default}
data: {a: b}
)");
  const std::string text = "policy/v1beta1 Widget is deprecated in v1.21+, unavailable in v1.25+";
  cluster.emulator.set_faults(
      R"({"warnNext": 2, "method": "PATCH", "pathPrefix": "/api/v1/namespaces/default/configmaps", "warning": ")" +
      text + R"("})");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  for (const char* name : {"ConfigMap/default/one", "ConfigMap/default/two"}) {
    INFO(name);
    CHECK(state_block(apply.out, name).find("     Warning: " + text + "\n") != std::string::npos);
  }
  // The log (the daemon's, and apply's stderr) says it once per run, as kubectl prints it.
  CHECK(occurrences(apply.err, "Warning: " + text) == 1);

  // JSON and JUnit carry them too; a warning on a failed request is shown as well.
  cluster.emulator.set_faults(R"({"warnNext": 1, "method": "PATCH", "path": "/api/v1/namespaces/default/configmaps/two",
                                  "warning": "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"})");
  write_file(std::filesystem::path(dir) / "cms.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: default}
data: {a: changed}
)");
  auto json_run = cluster.apply(dir, {"-o", "json"});
  CHECK(json_run.exit_code == 0);
  auto report = json::parse(json_run.out);
  REQUIRE(report.ok());
  const json::Value* warnings = json::find_path(
      *report, {"local", "kstate_|-ConfigMap/default/two_|-ConfigMap/default/two_|-object_present", "warnings"});
  REQUIRE(warnings != nullptr);
  REQUIRE(warnings->IsArray());
  REQUIRE(warnings->Size() == 1);
  CHECK(std::string((*warnings)[0].GetString()) ==
        R"(would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false)");

  cluster.emulator.set_faults(
      R"({"warnNext": 1, "method": "PATCH", "pathPrefix": "/api/v1/namespaces/default/configmaps",
                                  "warning": "from a webhook"})");
  write_file(std::filesystem::path(dir) / "cms.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: default}
data: {a: again}
)");
  auto junit = cluster.apply(dir, {"-o", "junit"});
  CHECK(junit.exit_code == 0);
  CHECK(junit.out.find("<system-err>Warning: from a webhook</system-err>") != std::string::npos);
}

TEST_CASE("a warning's control characters are escaped and a long one is cut, in reports and logs") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("hostile");
  write_file(std::filesystem::path(dir) / "cm.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: default}
data: {a: b}
)");
  // An 8-bit CSI (U+009B, which terminals obey) and 2,000 bytes: what a header may hold.
  const std::string tail(2000, 'x');
  cluster.emulator.set_faults(
      R"({"warnNext": 1, "method": "PATCH", "pathPrefix": "/api/v1/namespaces/default/configmaps", "warning": "paint \u009b31mred )" +
      tail + R"("})");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  const std::string shown = state_block(apply.out, "ConfigMap/default/one");
  CHECK(shown.find("     Warning: paint \\u009b31mred xxx") != std::string::npos);
  CHECK(shown.find("\xc2\x9b") == std::string::npos);
  CHECK(shown.find(" more bytes)\n") != std::string::npos);
  CHECK(shown.find(tail) == std::string::npos);
  CHECK(apply.err.find("\xc2\x9b") == std::string::npos);
  CHECK(apply.err.find("Warning: paint \\u009b31mred") != std::string::npos);
}

TEST_CASE("a kind discovery still lists but the server no longer serves (404 page not found) is read again") {
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("widgets");
  const std::string crd = R"(apiVersion: apiextensions.k8s.io/v1
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
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";
  const std::string widget = R"(apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
spec: {size: 1}
)";
  write_file(std::filesystem::path(dir) / "00-crd.yaml", crd);
  write_file(std::filesystem::path(dir) / "10-widget.yaml", widget);
  REQUIRE(cluster.apply(dir).exit_code == 0);  // the discovery cache now lists Widget
  // Someone deletes the CRD (and with it the Widget); the manifests keep only the Widget.
  REQUIRE(
      cluster.emulator.request("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
          .status == 200);
  std::filesystem::remove(std::filesystem::path(dir) / "00-crd.yaml");
  for (int i = 0;
       i < 100 && cluster.emulator.request("GET", "/apis/example.com/v1/namespaces/default/widgets").status != 404;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the emulator removes the kind
  }
  cluster.emulator.reset_request_log();
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 2);
  const std::string shown = state_block(apply.out, "Widget/default/w");
  CHECK(shown.find("Result: False") != std::string::npos);
  // Not the raw 404, but what the server's discovery now says.
  CHECK(shown.find("the server does not offer kind \"Widget\" in version \"example.com/v1\"") != std::string::npos);
  CHECK(shown.find("its path answered 404 page not found; discovery was read again") != std::string::npos);
  CHECK(cluster.emulator.count_requests("GET", "/apis") >= 1);
}

TEST_CASE("a write answered 404 page not found while discovery lists the kind is sent again (recording 60)") {
  // As an API server that does not serve a new CRD's custom resources yet answers.
  Cluster cluster;
  const std::string dir = cluster.manifest_dir("late");
  write_file(std::filesystem::path(dir) / "cm.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata: {name: late, namespace: default}
data: {a: b}
)");
  cluster.emulator.set_faults(
      R"({"failNext": 1, "failCode": 404, "method": "PATCH", "path": "/api/v1/namespaces/default/configmaps/late"})");
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(state_block(apply.out, "ConfigMap/default/late").find("Comment: created") != std::string::npos);
  CHECK(cluster.emulator.count_requests("PATCH", "/api/v1/namespaces/default/configmaps/late") == 2);
  CHECK(apply.err.find("reading discovery again") != std::string::npos);
  CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/late").IsNull());
}

// ApplySet `mine` applied (with --prune) from two ConfigMaps, `one` and `two`; then
// two's manifest is removed, so that the next `apply --prune` prunes it. The folder.
std::string set_applied_then_two_removed(Cluster& cluster) {
  const std::string dir = cluster.manifest_dir("set");
  write_file(std::filesystem::path(dir) / "one.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: default}\ndata: {a: '1'}\n");
  write_file(std::filesystem::path(dir) / "two.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: default}\ndata: {a: '2'}\n");
  REQUIRE(cluster.apply(dir, {"--applyset-name", "mine", "--prune"}).exit_code == 0);
  std::filesystem::remove(std::filesystem::path(dir) / "two.yaml");
  return dir;
}

TEST_CASE("an ApplySet parent read answered 404 page not found is an error, not a set without a parent") {
  // A proxy or an aggregation layer that does not serve a path answers "404 page not
  // found" (text/plain, no Status): that says nothing about whether the parent Secret
  // exists. Read as "no parent", the run would write a fresh record of only what it
  // declares, and an object whose manifest was removed meanwhile would drop out of the
  // inventory: never pruned again.
  Cluster cluster;
  const std::string dir = set_applied_then_two_removed(cluster);

  cluster.emulator.set_faults(
      R"({"failNext": 1, "failCode": 404, "method": "GET", "path": "/api/v1/namespaces/kube-system/secrets/mine"})");
  auto faulted = cluster.apply(dir, {"--applyset-name", "mine", "--prune"});
  cluster.emulator.clear_faults();
  CHECK(faulted.exit_code == 2);
  CHECK(faulted.out.find("cannot read the ApplySet parent Secret kube-system/mine") != std::string::npos);
  CHECK(faulted.out.find("(nothing applied, nothing pruned)") != std::string::npos);
  CHECK(!cluster.get("/api/v1/namespaces/default/configmaps/two").IsNull());

  // The record still names `two`: the next run prunes it.
  auto next = cluster.apply(dir, {"--applyset-name", "mine", "--prune"});
  CHECK(next.exit_code == 0);
  CHECK(cluster.get("/api/v1/namespaces/default/configmaps/two").IsNull());
  CHECK(!cluster.get("/api/v1/namespaces/default/configmaps/one").IsNull());
}

TEST_CASE(
    "a prune candidate's read or delete answered 404 page not found keeps it recorded, and a later run prunes it") {
  const std::string method = GENERATE(std::string("GET"), std::string("DELETE"));
  INFO("answered 404 page not found: " << method);
  Cluster cluster;
  const std::string dir = set_applied_then_two_removed(cluster);

  cluster.emulator.set_faults(R"({"failNext": 1, "failCode": 404, "method": ")" + method +
                              R"(", "path": "/api/v1/namespaces/default/configmaps/two"})");
  auto faulted = cluster.apply(dir, {"--applyset-name", "mine", "--prune"});
  cluster.emulator.clear_faults();
  CHECK(faulted.out.find("pruned (no longer in any manifest)") == std::string::npos);
  CHECK(!cluster.get("/api/v1/namespaces/default/configmaps/two").IsNull());

  auto next = cluster.apply(dir, {"--applyset-name", "mine", "--prune"});
  CHECK(next.exit_code == 0);
  CHECK(next.out.find("pruned (no longer in any manifest)") != std::string::npos);
  CHECK(cluster.get("/api/v1/namespaces/default/configmaps/two").IsNull());
}

TEST_CASE("leader election writes Lease times as the server accepts them: 6 fractional digits, UTC (51, 52)") {
  Cluster cluster;
  boost::asio::io_context io;
  kstate::KubeconfigSources sources;
  sources.kubeconfig_flag = cluster.emulator.kubeconfig_path().string();
  sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
  auto client = kstate::make_client(io.get_executor(), sources, kstate::TransportOptions{});
  REQUIRE(client.ok());
  kstate::DynamicClient* dynamic = (*client)->dynamic.get();
  kstate::daemon::KubernetesLeaseStore store([dynamic]() -> kstate::Result<kstate::DynamicClient*> { return dynamic; },
                                             "kstate-leader", "default");
  kstate::daemon::LeaseRecord record;
  record.holder_identity = "node-a_5f1e";
  record.lease_duration = std::chrono::seconds(15);
  // Whole seconds and milliseconds: the server refuses both spelt as they are (recording 52).
  record.acquire_time = std::chrono::system_clock::time_point(std::chrono::seconds(1798761600));
  record.renew_time = record.acquire_time + std::chrono::milliseconds(123);
  auto created = kstate::run_sync(io, store.create(record));
  INFO((created.ok() ? "" : created.error().describe()));
  REQUIRE(created.ok());
  auto lease = cluster.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/kstate-leader");
  CHECK(field(lease, {"spec", "acquireTime"}) == "2027-01-01T00:00:00.000000Z");
  CHECK(field(lease, {"spec", "renewTime"}) == "2027-01-01T00:00:00.123000Z");
  // A renewal (PUT with the resourceVersion read) is accepted too, and reads back exactly.
  record = *created;
  record.renew_time += std::chrono::microseconds(456789);
  auto renewed = kstate::run_sync(io, store.update(record));
  REQUIRE(renewed.ok());
  CHECK(renewed->renew_time == record.renew_time);
  auto read = kstate::run_sync(io, store.get());
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CHECK((*read)->renew_time == record.renew_time);
  const std::regex micro_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  lease = cluster.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/kstate-leader");
  CHECK(std::regex_match(field(lease, {"spec", "renewTime"}), micro_time));
}

}  // namespace server_answers_test
