// Taking over objects that `kubectl apply` (client-side) made: kstate's first apply
// moves kubectl-client-side-apply's fields to its own field manager, so a key the
// manifest no longer has is removed and the last-applied-configuration annotation goes
// (with the old Secret value it held); the report names the manager; a Secret's old
// value never shows; `kstate.io/takeover: disabled` leaves a shared object's fields to
// kubectl. The objects are made as kubectl makes them: a POST of the object with its
// last-applied annotation under fieldManager=kubectl-client-side-apply (recording 49),
// and with real kubectl too when it is installed.
#include <catch2/catch.hpp>
#include <filesystem>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace takeover_test {

namespace fs = std::filesystem;
namespace json = kstate::json;
using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;

namespace {

ProcessResult kstate(const Emulator& emulator, const TempDir& work, std::vector<std::string> args) {
  std::vector<std::string> argv{KSTATE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  if (args.front() == "apply" || args.front() == "test") {
    argv.insert(argv.end(), {"--applyset-name", "kstate"});  // (a one-shot run records into a named set only)
  }
  // (full: the comments say whose fields were taken over)
  argv.insert(argv.end(), {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir",
                           (work.path() / "cache").string(), "--state-output", "full"});
  auto result = kstate::testing::run_process(argv);
  UNSCOPED_INFO("kstate " << args.front() << " exit " << result.exit_code << "\nstdout:\n"
                          << result.out << "\nstderr:\n"
                          << result.err);
  return result;
}

// What `kubectl apply` (client-side) sends to create an object: the object with its
// last-applied annotation (the manifest as JSON), fieldManager=kubectl-client-side-apply.
void kubectl_client_side_create(Emulator& emulator, const std::string& collection, const std::string& manifest_json) {
  auto manifest = json::parse(manifest_json);
  REQUIRE(manifest.ok());
  json::Document object = json::copy(*manifest);
  auto& metadata = json::ensure_object(object, "metadata", object.GetAllocator());
  json::set_string(json::ensure_object(metadata, "annotations", object.GetAllocator()),
                   "kubectl.kubernetes.io/last-applied-configuration", manifest_json + "\n", object.GetAllocator());
  auto created = emulator.request("POST", collection + "?fieldManager=kubectl-client-side-apply", json::dump(object));
  REQUIRE(created.status == 201);
}

json::Document get(Emulator& emulator, const std::string& path) {
  auto reply = emulator.request("GET", path);
  REQUIRE(reply.status == 200);
  auto parsed = json::parse(reply.body);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

std::string managers(const json::Value& object) {
  std::string names;
  if (const json::Value* entries = json::find_path(object, {"metadata", "managedFields"})) {
    for (const auto& entry : entries->GetArray()) {
      names += std::string(json::string_or(json::find(entry, "manager"), "")) + "/" +
               std::string(json::string_or(json::find(entry, "operation"), "")) + " ";
    }
  }
  return names;
}

int writes(const Emulator& emulator) {
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  int count = 0;
  for (const auto& request : json::find(*log, "requests")->GetArray()) {
    count += json::string_or(json::find(request, "method"), "") != "GET" ? 1 : 0;
  }
  return count;
}

constexpr const char* last_applied = "kubectl.kubernetes.io/last-applied-configuration";
constexpr const char* old_secret = "old-secret-kept-by-kubectl";

}  // namespace

TEST_CASE("kstate takes objects over from kubectl apply: removed keys and last-applied go, the report says so") {
  Emulator emulator;
  TempDir work{"kstate-takeover"};
  const std::string configmaps = "/api/v1/namespaces/default/configmaps";
  kubectl_client_side_create(emulator, configmaps,
                             R"({"apiVersion":"v1","data":{"one":"1","three":"3","two":"2"},"kind":"ConfigMap",)"
                             R"("metadata":{"annotations":{},"name":"from-kubectl","namespace":"default"}})");
  kubectl_client_side_create(emulator, "/api/v1/namespaces/default/secrets",
                             std::string(R"({"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{},)"
                                         R"("name":"credentials","namespace":"default"},"stringData":{"password":")") +
                                 old_secret + R"("}})");
  kubectl_client_side_create(emulator, configmaps,
                             R"({"apiVersion":"v1","data":{"mine":"a","theirs":"b"},"kind":"ConfigMap",)"
                             R"("metadata":{"annotations":{},"name":"shared","namespace":"default"}})");
  REQUIRE(managers(get(emulator, configmaps + "/from-kubectl")) == "kubectl-client-side-apply/Update ");

  const fs::path manifests = work.path() / "manifests";
  write_file(manifests / "objects.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: from-kubectl
  namespace: default
data:
  one: "1"
  two: "22"
---
apiVersion: v1
kind: Secret
metadata:
  name: credentials
  namespace: default
stringData:
  password: new-secret
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  namespace: default
  annotations:
    kstate.io/takeover: disabled
data:
  mine: "a"
)");

  // Test mode says what the takeover will do, and changes nothing.
  emulator.reset_request_log();
  auto test = kstate(emulator, work, {"test", manifests.string()});
  CHECK(test.exit_code == 1);
  // (kstate did not create it: an adoption, issue 35)
  CHECK(test.out.find("would be adopted (taken over from kubectl-client-side-apply)") != std::string::npos);
  CHECK(test.out.find("-  three: \"3\"") != std::string::npos);
  CHECK(test.out.find(old_secret) == std::string::npos);
  CHECK(test.err.find(old_secret) == std::string::npos);
  CHECK(get(emulator, configmaps + "/from-kubectl").HasMember("data"));
  CHECK(json::find_path(get(emulator, configmaps + "/from-kubectl"), {"data", "three"}) != nullptr);

  auto apply = kstate(emulator, work, {"apply", manifests.string(), "-o", "json"});
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.find("adopted (taken over from kubectl-client-side-apply)") != std::string::npos);
  CHECK(apply.out.find(old_secret) == std::string::npos);
  CHECK(apply.err.find(old_secret) == std::string::npos);

  json::Document taken = get(emulator, configmaps + "/from-kubectl");
  CHECK(json::dump(*json::find(taken, "data")) == R"({"one":"1","two":"22"})");
  CHECK(json::find_path(taken, {"metadata", "annotations", last_applied}) == nullptr);
  CHECK(managers(taken).find("kubectl-client-side-apply") == std::string::npos);
  json::Document secret = get(emulator, "/api/v1/namespaces/default/secrets/credentials");
  CHECK(json::find_path(secret, {"metadata", "annotations", last_applied}) == nullptr);
  CHECK(json::dump(secret).find(old_secret) == std::string::npos);

  // Opted out: kubectl keeps its fields (theirs stays) and its annotation.
  json::Document shared = get(emulator, configmaps + "/shared");
  CHECK(json::find_path(shared, {"data", "theirs"}) != nullptr);
  CHECK(json::find_path(shared, {"metadata", "annotations", last_applied}) != nullptr);
  CHECK(managers(shared).find("kubectl-client-side-apply/Update") != std::string::npos);
  CHECK(managers(shared).find("kstate/Apply") != std::string::npos);

  // Taken over once: the next apply has nothing to do.
  emulator.reset_request_log();
  auto again = kstate(emulator, work, {"apply", manifests.string()});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("(changed=0,") != std::string::npos);
  CHECK(writes(emulator) == 0);

  // A later `kubectl apply` (client-side) of an old manifest: taken over again.
  auto csa = emulator.request(
      "PATCH", configmaps + "/from-kubectl?fieldManager=kubectl-client-side-apply",
      std::string(R"({"metadata":{"annotations":{")") + last_applied + R"(":"{}"}},"data":{"four":"4"}})",
      "application/strategic-merge-patch+json");
  REQUIRE(csa.status == 200);
  auto retaken = kstate(emulator, work, {"apply", manifests.string()});
  CHECK(retaken.out.find("updated (taken over from kubectl-client-side-apply)") != std::string::npos);
  json::Document after = get(emulator, configmaps + "/from-kubectl");
  CHECK(json::dump(*json::find(after, "data")) == R"({"one":"1","two":"22"})");
  CHECK(json::find_path(after, {"metadata", "annotations", last_applied}) == nullptr);
}

TEST_CASE("an object real kubectl applied (client-side) is taken over: the key removed from the manifest goes") {
  const fs::path kubectl = "/usr/bin/kubectl";
  if (!fs::exists(kubectl)) {
    WARN("kubectl is not installed: skipped (the case above replays what it sends)");
    return;
  }
  Emulator emulator;
  TempDir work{"kstate-takeover-kubectl"};
  write_file(work.path() / "kubectl" / "configmap.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kubectl\n  namespace: default\n"
             "data:\n  one: \"1\"\n  two: \"2\"\n  three: \"3\"\n");
  kstate::testing::RunOptions options;
  options.env["HOME"] = work.path().string();
  auto applied = kstate::testing::run_process(
      {kubectl.string(), "--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir",
       (work.path() / "kubectl-cache").string(), "apply", "-f", (work.path() / "kubectl" / "configmap.yaml").string()},
      options);
  INFO(applied.out << applied.err);
  REQUIRE(applied.exit_code == 0);
  const std::string path = "/api/v1/namespaces/default/configmaps/from-kubectl";
  REQUIRE(managers(get(emulator, path)).find("kubectl-client-side-apply/Update") != std::string::npos);

  write_file(work.path() / "manifests" / "configmap.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kubectl\n  namespace: default\n"
             "data:\n  one: \"1\"\n  two: \"22\"\n");
  auto apply = kstate(emulator, work, {"apply", (work.path() / "manifests").string()});
  CHECK(apply.exit_code == 0);
  // (kstate did not create it: an adoption, issue 35)
  CHECK(apply.out.find("adopted (taken over from kubectl-client-side-apply)") != std::string::npos);
  json::Document taken = get(emulator, path);
  CHECK(json::dump(*json::find(taken, "data")) == R"({"one":"1","two":"22"})");
  CHECK(json::find_path(taken, {"metadata", "annotations", last_applied}) == nullptr);
}

}  // namespace takeover_test
