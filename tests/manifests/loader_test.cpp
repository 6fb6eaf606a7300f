// Loader behaviour a user sees: which files are read and in what order, which states
// come out (IDs, functions, arguments), and the exact one-line errors for mistakes.
#include "manifests/loader.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

namespace loader_test {

namespace fs = std::filesystem;
namespace json = kstate::json;
using namespace kstate::manifests;

namespace {

// A fresh directory under the system temp folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kstate-manifests-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string write(const std::string& relative, const std::string& text) const {
    fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }

 private:
  fs::path path_;
};

std::vector<std::string> ids(const LoadResult& result) {
  std::vector<std::string> out;
  for (const auto& state : result.states) {
    out.push_back(state.id);
  }
  return out;
}

std::vector<std::string> messages(const LoadResult& result) {
  std::vector<std::string> out;
  for (const auto& error : result.errors) {
    out.push_back(error.to_string());
  }
  return out;
}

const State& find_state(const LoadResult& result, const std::string& id) {
  for (const auto& state : result.states) {
    if (state.id == id) {
      return state;
    }
  }
  FAIL("no state " << id << " in " << ids(result).size() << " states");
  throw std::logic_error("unreachable");
}

constexpr const char* kConfigMap = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apps
data:
  mode: fast
)";

}  // namespace

TEST_CASE("Real kube-state-metrics example: the kustomization gets one clear error, the rest loads", "[loader]") {
  std::string directory = KSTATE_SHARED_TESTDATA "/real/kube-state-metrics-standard";
  LoadResult result = load_paths({directory});
  CHECK(ids(result) == std::vector<std::string>{
                           "ClusterRoleBinding/kube-state-metrics", "ClusterRole/kube-state-metrics",
                           "Deployment/kube-system/kube-state-metrics", "ServiceAccount/kube-system/kube-state-metrics",
                           "Service/kube-system/kube-state-metrics"});
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].to_string() ==
        directory +
            "/kustomization.yaml:1:1: kustomize.config.k8s.io/v1beta1 Kustomization is a kustomize build file, not a "
            "Kubernetes object: kstate does not run kustomize (render it with `kubectl kustomize DIR` into the "
            "manifests directory, or keep it out of it)");
  CHECK(result.failed_files == std::set<std::string>{directory + "/kustomization.yaml"});
  CHECK(result.files.size() == 6);
  CHECK(result.file_hashes.size() == 6);
  const State& deployment = find_state(result, "Deployment/kube-system/kube-state-metrics");
  CHECK(deployment.function == Function::object_present);
  CHECK(deployment.source.to_string() == directory + "/deployment.yaml:1:1");
  CHECK(json::find_path(deployment.object, {"spec", "replicas"})->GetInt() == 1);
}

TEST_CASE("Directory walk: recursive, lexical, skips dotfiles, editor leftovers and non-regular files", "[loader]") {
  TempDir dir;
  auto root = dir.path();
  dir.write("b.yaml", "");
  dir.write("a.json", "");
  dir.write("a/c.yml", "");
  dir.write("a/z/d.yaml", "");
  dir.write("notes.txt", "");
  dir.write("README.md", "");
  dir.write(".hidden.yaml", "");
  dir.write(".git/config.yaml", "");
  dir.write("b.yaml~", "");
  dir.write(".b.yaml.swp", "");
  dir.write("b.yaml.swp", "");
  dir.write(".#b.yaml", "");
  dir.write("#b.yaml#", "");
  dir.write("4913", "");
  REQUIRE(mkfifo((root / "pipe.yaml").c_str(), 0600) == 0);
  fs::create_directory_symlink(root / "a", root / "a-link");  // second route to a/: loaded once
  fs::create_directory_symlink(root, root / "a" / "loop");    // loop back to the root
  fs::create_symlink(root / "b.yaml", root / "e.yaml");       // second route to b.yaml
  // ConfigMap volume layout: visible key -> ..data/key -> ..<timestamp>/key.
  dir.write("cm/..2024_01_01_00_00_00.123/app.yaml", "");
  fs::create_directory_symlink("..2024_01_01_00_00_00.123", root / "cm" / "..data");
  fs::create_symlink("..data/app.yaml", root / "cm" / "app.yaml");

  std::vector<LoadError> errors;
  std::vector<std::string> files = list_manifest_files({root.string()}, errors);
  CHECK(errors.empty());
  std::vector<std::string> relative;
  for (auto& file : files) {
    relative.push_back(fs::path(file).lexically_relative(root).string());
  }
  CHECK(relative == std::vector<std::string>{"a.json", "a/c.yml", "a/z/d.yaml", "b.yaml", "cm/app.yaml"});
}

TEST_CASE("Files load in lexical order, documents in file order, Lists expand, JSON files load", "[loader]") {
  TempDir dir;
  dir.write("20-list.yaml", R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: one, namespace: apps}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: two, namespace: apps}
---
apiVersion: v1
kind: ConfigMapList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: three}
)");
  dir.write("10-multi.yaml",
            std::string("---\n") + kConfigMap + "---\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n");
  dir.write("30-object.json", R"({"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "web", "namespace": "apps"}, "spec": {"replicas": 2}})");
  LoadResult result = load_paths({dir.path().string()});
  CHECK(messages(result).empty());
  CHECK(ids(result) == std::vector<std::string>{"ConfigMap/apps/settings", "Namespace/apps", "ServiceAccount/apps/one",
                                                "ServiceAccount/apps/two", "ConfigMap/three", "Deployment/apps/web"});
  CHECK(result.states[3].source.line == 7);
  CHECK(result.states[3].source.column == 3);
  CHECK(json::find_path(result.states[5].object, {"spec", "replicas"})->GetInt() == 2);
}

TEST_CASE("Annotations choose the state function and options", "[loader]") {
  LoadResult result = load_text(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: old
  namespace: apps
  annotations:
    kstate.io/state: absent
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tuned
  namespace: apps
  annotations:
    kstate.io/state: updated
    kstate.io/strategy: replace
    kstate.io/prune: disabled
    kstate.io/takeover: disabled
    kstate.io/recreate: "true"
    kstate.io/wait: "true"
    kstate.io/depends-on: "ConfigMap/apps/old, Namespace/apps"
---
apiVersion: v1
kind: Namespace
metadata:
  name: apps
  annotations:
    addonmanager.kubernetes.io/mode: EnsureExists
    kustomize.toolkit.fluxcd.io/prune: disabled
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: reconciled
  annotations:
    addonmanager.kubernetes.io/mode: Reconcile
)",
                                "annotated.yaml");
  CHECK(messages(result).empty());
  REQUIRE(result.states.size() == 4);
  CHECK(result.states[0].function == Function::object_absent);
  const State& tuned = result.states[1];
  CHECK(tuned.function == Function::object_updated);
  CHECK(tuned.strategy == Strategy::replace);
  CHECK(tuned.prune_disabled);
  CHECK(tuned.takeover_disabled);
  CHECK_FALSE(result.states[2].takeover_disabled);
  CHECK(tuned.recreate);
  CHECK(tuned.wait.enabled);
  CHECK(tuned.require == std::vector<std::string>{"ConfigMap/apps/old", "Namespace/apps"});
  CHECK(result.states[2].strategy == Strategy::create_only);
  CHECK(result.states[2].prune_disabled);
  CHECK(result.states[3].strategy == Strategy::apply);
  CHECK_FALSE(result.states[3].prune_disabled);
}

TEST_CASE("Bad annotation values are errors with suggestions", "[loader]") {
  LoadResult result = load_text(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  annotations:
    kstate.io/state: absnet
    kstate.io/wait: true
)",
                                "bad.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{"bad.yaml:7:21: ConfigMap/a: metadata.annotations.kstate.io/wait must be a string "
                                 "(quote the value: an unquoted true, 1 or 1.10 is not a string)"});
  LoadResult typo = load_text(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n"
      "    kstate.io/state: absnet\n    kstate.io/strategy: create_only\n    kstate.io/takeover: disable\n",
      "typo.yaml");
  CHECK(
      messages(typo) ==
      std::vector<std::string>{
          "typo.yaml:6:22: ConfigMap/a: annotation kstate.io/state: unknown value \"absnet\", expected present, "
          "updated or absent (did you mean \"absent\"?)",
          "typo.yaml:7:25: ConfigMap/a: annotation kstate.io/strategy: unknown strategy \"create_only\", expected "
          "apply, replace or create-only (did you mean \"create-only\"?)",
          "typo.yaml:8:25: ConfigMap/a: annotation kstate.io/takeover: unknown value \"disable\", expected disabled or "
          "enabled (did you mean \"disabled\"?)"});
  CHECK(typo.states.empty());
  CHECK(typo.failed_files == std::set<std::string>{"typo.yaml"});
}

TEST_CASE("Salt-style state documents: functions, prefixes, mapping and list arguments", "[loader][states]") {
  LoadResult result = load_text(R"(kube-system-ns:
  metalk8s_kubernetes.object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: kube-system}}
coredns-replicas:
  object_updated:
    manifest: {apiVersion: apps/v1, kind: Deployment,
               metadata: {name: coredns, namespace: kube-system},
               spec: {replicas: 3}}
    require: [kube-system-ns]
    strategy: apply
old-dashboard:
  kubernetes.object_absent:
    - apiVersion: v1
    - kind: Service
    - name: dashboard
    - namespace: kube-system
    - wait: {attempts: 10, sleep: 2}
    - propagation: Foreground
    - require:
      - metalk8s_kubernetes: coredns-replicas
waiting:
  object_present:
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: w, namespace: kube-system}}
    wait: {timeout: 5m}
    recreate: true
counted:
  object_present:
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: kube-system}}
    wait: 3
    require: ConfigMap/kube-system/w
)",
                                "states.sls.yaml");
  CHECK(messages(result).empty());
  REQUIRE(ids(result) ==
          std::vector<std::string>{"kube-system-ns", "coredns-replicas", "old-dashboard", "waiting", "counted"});
  CHECK(result.states[0].function == Function::object_present);
  CHECK(result.states[0].source.to_string() == "states.sls.yaml:1:1");
  CHECK(result.states[1].function == Function::object_updated);
  CHECK(result.states[1].require == std::vector<std::string>{"kube-system-ns"});
  const State& absent = result.states[2];
  CHECK(absent.function == Function::object_absent);
  CHECK(json::dump(absent.object) ==
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"dashboard","namespace":"kube-system"}})");
  CHECK(absent.wait.enabled);
  CHECK(absent.wait.attempts == 10);
  CHECK(absent.wait.sleep_seconds == 2);
  CHECK(absent.propagation == "Foreground");
  CHECK(absent.require == std::vector<std::string>{"coredns-replicas"});
  CHECK(result.states[3].wait.timeout_seconds == 300);
  CHECK(result.states[3].recreate);
  CHECK(result.states[4].wait.attempts == 3);
}

TEST_CASE("State document mistakes: unknown function and argument with suggestions, missing object",
          "[loader][states]") {
  LoadResult result = load_text(R"(a:
  object_presnt:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: a}}
b:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: b}}
    requires: [a]
c:
  object_absent:
    wait: true
d: just a string
e:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: e}}
    strategy: server-side
)",
                                "s.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{
            "s.yaml:2:3: a: unknown function \"object_presnt\", expected object_present, object_updated or "
            "object_absent (did you mean \"object_present\"?)",
            "s.yaml:7:5: b: unknown argument \"requires\" for object_present (did you mean \"require\"?); accepted: "
            "manifest, source, name, require, require_in, onchanges, watch, wait, strategy, recreate, propagation",
            "s.yaml:9:3: c: object_absent needs manifest, source, or apiVersion/kind/name",
            "s.yaml:11:1: d: a state must map one function (object_present, object_updated or object_absent) to its "
            "arguments, not a string",
            "s.yaml:15:15: e: strategy: expected apply, replace or create-only"});
  CHECK(result.states.empty());
}

TEST_CASE("State arguments: each function accepts its own, every problem of an entry is reported", "[loader][states]") {
  struct Case {
    const char* text;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"a:\n  object_updated:\n    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n"
       "    recreate: true\n",
       {"s.yaml:4:5: a: unknown argument \"recreate\" for object_updated; accepted: manifest, source, name, require, "
        "require_in, onchanges, watch, wait, strategy"}},
      {"a:\n  object_absent:\n    kind: Namespace\n    name: a\n    strategy: apply\n",
       {"s.yaml:5:5: a: unknown argument \"strategy\" for object_absent; accepted: manifest, source, apiVersion, "
        "kind, name, namespace, require, require_in, onchanges, watch, wait, propagation"}},
      {"a:\n  object_present:\n    - manifest: {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n"
       "    - just-a-string\n    - recreate: maybe\n    - recreate: true\n",
       {"s.yaml:4:7: a: each argument in the list form must be a one-key mapping (- name: value)",
        "s.yaml:5:17: a: recreate: expected true or false, not a string",
        "s.yaml:6:7: a: argument \"recreate\" given twice"}},
      {"a:\n  object_absent:\n    apiVersion: 1\n    kind: Namespace\n    name: a\n    propagation: background\n",
       {"s.yaml:3:17: a: apiVersion: expected a string, not a number",
        "s.yaml:6:18: a: propagation: expected Background, Foreground or Orphan (did you mean \"Background\"?)"}},
      {"a:\n  object_present: [1, 2]\n",
       {"s.yaml:2:20: a: each argument in the list form must be a one-key mapping "
        "(- name: value)",
        "s.yaml:2:23: a: each argument in the list form must be a one-key mapping "
        "(- name: value)"}},
      {"a:\n  object_present: 3\n",
       {"s.yaml:2:19: a: arguments must be a mapping or a list of one-key mappings, not a number"}},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    LoadResult result = load_text(c.text, "s.yaml");
    CHECK(messages(result) == c.expected);
    CHECK(result.states.empty());
  }
}

TEST_CASE("Cross-state checks: duplicate IDs, conflicting objects, unknown require", "[loader][states]") {
  TempDir dir;
  dir.write("a.yaml", std::string(kConfigMap) + R"(---
web:
  object_present:
    manifest: {apiVersion: v1, kind: Service, metadata: {name: web, namespace: apps}}
    require: [ConfigMap/apps/settings, databse]
database:
  object_present:
    manifest: {apiVersion: v1, kind: Service, metadata: {name: db, namespace: apps}}
)");
  dir.write("b.yaml", R"(web:
  object_present:
    manifest: {apiVersion: v1, kind: Service, metadata: {name: web2, namespace: apps}}
changed-settings:
  object_present:
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: apps}, data: {mode: slow}}
same-settings:
  object_present:
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: apps}, data: {mode: fast}}
)");
  std::string a = (dir.path() / "a.yaml").string();
  std::string b = (dir.path() / "b.yaml").string();
  LoadResult result = load_paths({dir.path().string()});
  CHECK(
      messages(result) ==
      std::vector<std::string>{
          b + ":1:1: web: duplicate state ID (first declared at " + a + ":9:1)",
          b + ":4:1: changed-settings: ConfigMap/apps/settings is also declared by state ConfigMap/apps/settings at " +
              a + ":1:1, with different content",
          a + ":9:1: web: requires \"databse\", which is not a state ID or an object in the manifests (did you "
              "mean \"database\"?)"});
  // The identical declaration in a state document replaces the plain one (its ID is what people require).
  CHECK(ids(result) == std::vector<std::string>{"database", "same-settings"});
  CHECK(result.failed_files == std::set<std::string>{a, b});
}

TEST_CASE("source: includes relative to the including file, with derived IDs and cycle detection", "[loader][states]") {
  TempDir dir;
  dir.write("states/init.yaml", R"(monitoring-stack:
  object_present:
    source: ../stack/all.yaml
    require: [ns]
ns:
  object_present:
    source: ../stack/ns.yaml
)");
  dir.write("stack/all.yaml", R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: prometheus, namespace: monitoring}
---
apiVersion: v1
kind: Service
metadata: {name: prometheus, namespace: monitoring}
)");
  dir.write("stack/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: monitoring}\n");
  dir.write("cycle/a.yaml", "first:\n  object_present:\n    source: b.yaml\n");
  dir.write("cycle/b.yaml", "second:\n  object_present:\n    source: a.yaml\n");
  LoadResult result = load_paths({(dir.path() / "states").string()});
  CHECK(messages(result).empty());
  CHECK(ids(result) == std::vector<std::string>{"monitoring-stack/ServiceAccount/monitoring/prometheus",
                                                "monitoring-stack/Service/monitoring/prometheus", "ns"});
  CHECK(result.states[0].parent_id == "monitoring-stack");
  CHECK(result.states[0].require == std::vector<std::string>{"ns"});
  CHECK(result.states[1].source.to_string() == (dir.path() / "states/../stack/all.yaml").string() + ":5:1");
  CHECK(result.states[2].source.to_string() == (dir.path() / "states/init.yaml").string() + ":5:1");
  CHECK(result.included_by.at((dir.path() / "states/../stack/all.yaml").string()) ==
        std::set<std::string>{(dir.path() / "states/init.yaml").string()});
  CHECK(result.files.size() == 3);

  LoadResult cycle = load_file((dir.path() / "cycle/a.yaml").string());
  REQUIRE(cycle.errors.size() == 1);
  CHECK_THAT(cycle.errors[0].to_string(), Catch::Contains("b.yaml:3:13: second: source: include cycle: "));
  CHECK(cycle.states.empty());

  LoadResult missing = load_text("m:\n  object_present:\n    source: nowhere.yaml\n", (dir.path() / "m.yaml").string());
  REQUIRE(missing.errors.size() == 1);
  CHECK_THAT(missing.errors[0].to_string(), Catch::StartsWith((dir.path() / "m.yaml").string() + ":3:13: m: source: "));
}

TEST_CASE("Object validation before anything is sent", "[loader][validation]") {
  LoadResult result = load_text(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: Bad_Name
---
apiVersion: v1
kind: ConfigMap
metadata:
  namespace: Apps
  name: ok
---
apiVersion: v1
kind: Service
metadata:
  name: 1web
---
apiVersion: v1
kind: ConfigMap
metadata: {}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:controller:fine
---
apiVersion: v1
kind: Pod
metadata:
  generateName: job-
---
apiVersion: Apps/v1
kind: Deployment
metadata:
  name: x
---
apiVersion: v1
kind: 3d
metadata:
  name: x
---
apiVersion: v1
kind: Secret
)",
                                "v.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{
            "v.yaml:4:9: ConfigMap/Bad_Name: metadata.name \"Bad_Name\": a lowercase RFC 1123 subdomain must consist "
            "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
            "character",
            "v.yaml:9:14: ConfigMap/Apps/ok: metadata.namespace \"Apps\": a lowercase RFC 1123 label must consist of "
            "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            "v.yaml:15:9: Service/1web: metadata.name \"1web\": a DNS-1035 label must consist of lower case "
            "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
            "character",
            "v.yaml:19:11: ConfigMap/: metadata.name is required (or metadata.generateName)",
            "v.yaml:31:13: Deployment/x: apiVersion \"Apps/v1\": the group \"Apps\" is not valid: a lowercase RFC "
            "1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character",
            "v.yaml:37:7: 3d/x: kind \"3d\": must be a type name such as Deployment",
            "v.yaml:41:1: Secret/: metadata.name is required (metadata is missing or not a mapping)"});
  CHECK(ids(result) == std::vector<std::string>{"ClusterRole/system:controller:fine", "Pod/job-"});
}

TEST_CASE("Errors in one file never stop the others, YAML errors give exact positions", "[loader]") {
  TempDir dir;
  dir.write("1-good.yaml", kConfigMap);
  dir.write("2-broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n");
  dir.write("3-dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n");
  dir.write("4-good.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n");
  dir.write("5-scalar.yaml", "just text\n");
  LoadResult result = load_paths({dir.path().string()});
  std::string root = dir.path().string();
  CHECK(ids(result) == std::vector<std::string>{"ConfigMap/apps/settings", "Namespace/apps"});
  CHECK(messages(result) ==
        std::vector<std::string>{
            root + "/2-broken.yaml:5:1: YAML syntax error: did not find expected ',' or ']' (while parsing a flow "
                   "sequence at line 4, column 9)",
            root + "/3-dup.yaml:5:3: duplicate key \"name\" in this mapping",
            root + "/5-scalar.yaml:1:1: a manifest document must be a mapping (a Kubernetes object or state IDs), "
                   "not a string"});
  CHECK(result.failed_files ==
        std::set<std::string>{root + "/2-broken.yaml", root + "/3-dup.yaml", root + "/5-scalar.yaml"});
  CHECK(result.file_hashes.at(root + "/1-good.yaml") == sha256_hex(kConfigMap));
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  LoadResult missing = load_paths({root + "/nope"});
  CHECK(messages(missing) == std::vector<std::string>{root + "/nope: no such file or directory"});
}

TEST_CASE("Limits: file size and document size are reported per file", "[loader][limits]") {
  TempDir dir;
  std::string big = std::string(kConfigMap) + "  padding: \"" + std::string(2000, 'x') + "\"\n";
  std::string path = dir.write("big.yaml", big);
  LoadOptions options;
  options.limits.max_file_bytes = 1000;
  LoadResult result = load_file(path, options);
  CHECK(messages(result) == std::vector<std::string>{path + ": file is " + std::to_string(big.size()) +
                                                     " bytes, larger than the limit of 1000 bytes (max_file_bytes)"});
  options.limits.max_file_bytes = 1 << 20;
  options.limits.yaml.max_document_bytes = 500;
  LoadResult document = load_file(path, options);
  REQUIRE(document.errors.size() == 1);
  CHECK_THAT(document.errors[0].message, Catch::Contains("larger than the limit of 500 bytes (max_document_bytes)"));
}

namespace {

// Peak resident memory of this process in kB since reset_peak_rss (VmHWM).
long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace

namespace {

struct MemoryCase {
  std::string what;
  std::string text;
  std::string expected;
};

// Loads each case's text as one file: the limit's error comes, the peak RSS stays low.
void check_memory(const std::vector<MemoryCase>& cases) {
  for (const auto& one : cases) {
    INFO(one.what);
    reset_peak_rss();
    const long before = peak_rss_kb();
    const auto start = std::chrono::steady_clock::now();
    LoadResult result = load_text(one.text, "big.yaml");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long growth_kb = peak_rss_kb() - before;
    const auto limit_error = std::find_if(result.errors.begin(), result.errors.end(), [&](const LoadError& error) {
      return error.message.find(one.expected) != std::string::npos;
    });
    REQUIRE(limit_error != result.errors.end());
#if !defined(KSTATE_SANITIZED)  // (AddressSanitizer's quarantine and padding: printed only)
    CHECK(growth_kb < 400 * 1024);
#endif
    WARN(one.what << ": refused in " << took << " s, peak RSS +" << growth_kb / 1024 << " MB (" << growth_kb << " kB); "
                  << limit_error->to_string());
  }
}

}  // namespace

TEST_CASE("Memory: millions of documents in a file are refused after 10,000 (4 million took 4.2 GB)",
          "[loader][limits][memory]") {
  std::vector<MemoryCase> cases;
  std::string dashes;
  for (int i = 0; i < 4'000'000; ++i) {
    dashes += "---\n";
  }
  cases.push_back({"4,000,000 empty documents (16 MB)", std::move(dashes), "more than 10000 documents"});
  std::string tiny;
  while (tiny.size() < 30u << 20) {
    tiny += "a: 1\n---\n";
  }
  cases.push_back(
      {std::to_string(tiny.size() / 9) + " one-key documents (30 MB)", std::move(tiny), "more than 10000 documents"});
  check_memory(cases);
}

TEST_CASE("Memory: millions of YAML nodes in a file, parsed or made by aliases, are refused after 2 million",
          "[loader][limits][memory]") {
  std::vector<MemoryCase> cases;
  std::string flow;
  for (int document = 0; document < 10; ++document) {
    flow += "[";
    for (int i = 0; i < 1'500'000; ++i) {
      flow += "0,";
    }
    flow += "0]\n---\n";
  }
  cases.push_back({"10 documents of 1,500,000 numbers each (30 MB)", std::move(flow), "more than 2000000 YAML nodes"});
  std::string laughs;
  for (int document = 0; document < 100; ++document) {
    laughs +=
        "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: [*d, *d, *d, *d, *d, *d, *d, *d]\n---\n";
  }
  cases.push_back({"100 documents of 88,000 nodes by aliases each", std::move(laughs), "with what aliases expand to"});
  check_memory(cases);
}

TEST_CASE("Errors in files outside the manifests folder do not quote their content", "[loader][security]") {
  TempDir outside;
  const std::string secret = outside.write("shadow",
                                           "root:$y$j9T$secrethash:19000:0:99999:7:::\n"
                                           "daemon:*:19000:0:99999:7:::\n");
  const std::string fake = outside.write("fake.yaml", "secret-state-id:\n  object_presnt: {token: hunter2}\n");
  TempDir folder;
  folder.write("good.yaml", kConfigMap);
  fs::create_symlink(secret, folder.path() / "shadow.yaml");
  fs::create_symlink(fake, folder.path() / "linked.yaml");
  folder.write("inside.yaml", "inside-id:\n  object_presnt: {}\n");
  folder.write("includes.yaml", "includer:\n  object_present:\n    source: " + fake + "\n");

  LoadResult result = load_paths({folder.path().string()});
  CHECK(ids(result) == std::vector<std::string>{"ConfigMap/apps/settings"});
  std::string all;
  for (const auto& line : messages(result)) {
    all += line + "\n";
  }
  INFO(all);
  CHECK(all.find("secrethash") == std::string::npos);
  CHECK(all.find("root:") == std::string::npos);
  CHECK(all.find("secret-state-id") == std::string::npos);
  CHECK(all.find("hunter2") == std::string::npos);
  const std::string not_shown = "its content is not shown: the file is outside the manifests folder (it is ";
  CHECK_THAT(all, Catch::Contains((folder.path() / "shadow.yaml").string() + ":"));
  CHECK_THAT(all, Catch::Contains(not_shown + secret + ")"));
  CHECK_THAT(all, Catch::Contains((folder.path() / "linked.yaml").string() + ":2:3: " + not_shown + fake + ")"));
  CHECK_THAT(all, Catch::Contains(fake + ":2:3: " + not_shown + fake + ")"));  // included by source:
  // Inside the folder, errors quote as ever.
  CHECK_THAT(all, Catch::Contains("inside.yaml:2:3: inside-id: unknown function \"object_presnt\""));
  // A file given by name is the user's choice: quoted.
  LoadResult named = load_paths({fake});
  REQUIRE(named.errors.size() == 1);
  CHECK_THAT(named.errors[0].to_string(), Catch::Contains("secret-state-id: unknown function"));
}

TEST_CASE("check_references off defers cross-state checks to check_states", "[loader]") {
  LoadOptions options;
  options.check_references = false;
  LoadResult result = load_text(
      "x:\n  object_present:\n    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: x}}\n    require: "
      "[other]\n",
      "x.yaml", options);
  CHECK(result.errors.empty());
  std::set<std::string> failed;
  auto errors = check_states(result.states, failed);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].to_string() ==
        "x.yaml:1:1: x: requires \"other\", which is not a state ID or an object in the manifests");
  CHECK(result.states.empty());
}

TEST_CASE("Performance: 10,000 objects load well under a second", "[loader][performance]") {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    text += "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-" + std::to_string(i) +
            "\n  namespace: team-" + std::to_string(i % 50) +
            "\n  labels: {app: web, tier: frontend}\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n"
            "  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n"
            "        image: nginx:1.25\n        ports: [{containerPort: 80}]\n";
  }
  // Processor time, not wall time: the figure must not depend on what else the (shared) machine runs.
  std::clock_t start = std::clock();
  LoadResult result = load_text(text, "many.yaml");
  double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  CHECK(result.errors.empty());
  CHECK(result.states.size() == 10000);
  WARN("loaded 10000 objects (" << text.size() / 1024 << " KiB) in " << seconds << " s: " << 10000 / seconds
                                << " objects/s");
#ifndef KSTATE_SANITIZED
  CHECK(seconds < 1.0);  // about 0.3 s in a RelWithDebInfo build
#endif
}

TEST_CASE("Argument forms and their errors: wait, propagation, both manifest and source, List items",
          "[loader][states]") {
  LoadResult result = load_text(R"(plain-wait:
  object_absent:
    apiVersion: v1
    kind: Namespace
    name: gone
    wait: true
timeout-seconds:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: t}}
    wait: {timeout: 30, sleep: 500ms}
bad-wait:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: w}}
    wait: {atempts: 3}
bad-propagation:
  object_absent:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: p}}
    propagation: foreground
both:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: b}}
    source: other.yaml
---
apiVersion: v1
kind: List
items:
- just a string
---
kind: ConfigMap
metadata: {name: no-api-version}
)",
                                "forms.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{
            "forms.yaml:14:11: bad-wait: wait: unknown key \"atempts\" (did you mean \"attempts\"?); accepted: "
            "attempts, sleep, timeout",
            "forms.yaml:18:18: bad-propagation: propagation: expected Background, Foreground or Orphan (did you mean "
            "\"Foreground\"?)",
            "forms.yaml:20:3: both: give only one of manifest, source",
            "forms.yaml:27:3: List item 0 is not a Kubernetes object (needs apiVersion and kind)",
            "forms.yaml:29:1: a Kubernetes object needs both apiVersion and kind (missing apiVersion)"});
  REQUIRE(ids(result) == std::vector<std::string>{"plain-wait", "timeout-seconds"});
  CHECK(result.states[0].wait.enabled);
  CHECK(result.states[0].wait.attempts == 0);
  CHECK(result.states[1].wait.timeout_seconds == 30);
  CHECK(result.states[1].wait.sleep_seconds == 0.5);
}

TEST_CASE("A wait's sleep and timeout read seconds or Go durations, by the daemon config's rule", "[loader][states]") {
  LoadResult result = load_text(R"(go-durations:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: g}}
    wait: {timeout: 1h30m, sleep: 1.5s}
seconds-as-text:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: s}}
    wait: {timeout: "45", sleep: "0.25"}
minutes-then-bare-number:
  object_present:
    manifest: {apiVersion: v1, kind: Namespace, metadata: {name: m}}
    wait: {timeout: 1m30}
)",
                                "durations.yaml");
  REQUIRE(messages(result).size() == 1);
  CHECK_THAT(messages(result)[0], Catch::Contains("minutes-then-bare-number: wait:") &&
                                      Catch::Contains("timeout must be seconds or a duration"));
  REQUIRE(ids(result) == std::vector<std::string>{"go-durations", "seconds-as-text"});
  CHECK(result.states[0].wait.timeout_seconds == 5400);
  CHECK(result.states[0].wait.sleep_seconds == 1.5);
  CHECK(result.states[1].wait.timeout_seconds == 45);
  CHECK(result.states[1].wait.sleep_seconds == 0.25);
}

TEST_CASE("A file that is not UTF-8 fails alone, with the position of the bad byte", "[loader]") {
  LoadResult result = load_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n", "latin1.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{"latin1.yaml:4:12: incomplete UTF-8 sequence (manifests must be UTF-8 text)"});
  CHECK(result.states.empty());
  CHECK(result.file_hashes.count("latin1.yaml") == 1);
}

TEST_CASE("Error lines stay single lines when IDs or values hold line breaks", "[loader]") {
  LoadResult result = load_text("\"two\\nlines\":\n  object_presnt: {}\n", "nl.yaml");
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].state_id == "two\nlines");
  CHECK(result.errors[0].to_string() ==
        "nl.yaml:2:3: two\\nlines: unknown function \"object_presnt\", expected object_present, object_updated or "
        "object_absent (did you mean \"object_present\"?)");
}

TEST_CASE("load_paths gives the same states, errors and files whatever the number of threads", "[loader]") {
  TempDir dir;
  // Many files, a `source:` include of a file that is also in the directory (read once,
  // listed where first read), an identical duplicate, a conflicting duplicate across
  // files, a syntax error and a `require` across files.
  for (int i = 0; i < 40; ++i) {
    std::string name = "app-" + std::to_string(i);
    dir.write("apps/" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".yaml",
              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\ndata: {n: \"" +
                  std::to_string(i) + "\"}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: " + name +
                  ", namespace: default}\nstringData: {k: v}\n");
  }
  dir.write("a-includer.yaml",
            "bundle:\n  object_present:\n    source: z-shared.yaml\n    require: [ConfigMap/default/app-7]\n");
  dir.write("z-shared.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: shared, namespace: default}\n");
  dir.write("m-duplicate.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-3, namespace: default}\ndata: {n: \"3\"}\n");
  dir.write("n-conflict.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-4, namespace: default}\ndata: {n: other}\n");
  dir.write("o-broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n");

  auto load_with = [&](int threads) {
    LoadOptions options;
    options.threads = threads;
    return load_paths({dir.path().string()}, options);
  };
  LoadResult one = load_with(1);
  REQUIRE(one.states.size() > 80);
  REQUIRE(one.errors.size() >= 2);
  std::vector<std::string> one_errors;
  for (const auto& error : one.errors) {
    one_errors.push_back(error.to_string());
  }
  for (int threads : {2, 3, 8}) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      LoadResult many = load_with(threads);
      INFO("threads " << threads);
      CHECK(ids(many) == ids(one));
      std::vector<std::string> many_errors;
      for (const auto& error : many.errors) {
        many_errors.push_back(error.to_string());
      }
      CHECK(many_errors == one_errors);
      CHECK(many.files == one.files);
      CHECK(many.file_hashes == one.file_hashes);
      CHECK(many.failed_files == one.failed_files);
      CHECK(many.included_by == one.included_by);
      for (std::size_t i = 0; i < std::min(many.states.size(), one.states.size()); ++i) {
        CHECK(many.states[i].object == one.states[i].object);
        CHECK(many.states[i].source.to_string() == one.states[i].source.to_string());
      }
    }
  }
  // Started in the background (as `kstate apply` does while it connects), then finished.
  BackgroundLoad background({dir.path().string()}, {}, 2);
  LoadResult finished = background.finish();
  CHECK(ids(finished) == ids(one));
  CHECK(finished.files == one.files);
  {
    BackgroundLoad abandoned({dir.path().string()}, {}, 2);  // destroyed unfinished: joins its threads
  }
  // z-shared.yaml is read first by the include in a-includer.yaml, so it is listed there.
  auto includer = std::find(one.files.begin(), one.files.end(), (dir.path() / "a-includer.yaml").string());
  REQUIRE(includer != one.files.end());
  REQUIRE(includer + 1 != one.files.end());
  CHECK(*(includer + 1) == (dir.path() / "z-shared.yaml").string());
  CHECK(std::count(one.files.begin(), one.files.end(), (dir.path() / "z-shared.yaml").string()) == 1);
}

TEST_CASE("Variables: substituted in objects, List items, state documents, sources and object_absent's names",
          "[loader][variables]") {
  TempDir dir;
  dir.write("node/web.yaml", R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: web-${NODE}
  namespace: ${NS:=apps}
data:
  server: https://${API_SERVER}:6443
)");
  const std::string states = dir.write("node/states.yaml", R"(Deploy web:
  object_present:
    - source: web.yaml
Inline:
  metalk8s_kubernetes.object_present:
    - manifest:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: apps}
        spec:
          replicas: ${REPLICAS}
Old node:
  object_absent:
    - apiVersion: v1
    - kind: Node
    - name: ${OLD_NODE}
)");
  const std::string list = dir.write("list.yaml", R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: ${NODE}
    namespace: apps
)");
  LoadOptions options;
  options.variables = {{"NODE", "node-1"}, {"API_SERVER", "10.0.0.1"}, {"REPLICAS", "3"}, {"OLD_NODE", "node-0"}};
  LoadResult result = load_paths({states, list}, options);
  INFO(result.error_text());
  REQUIRE(result.ok());
  CHECK(ids(result) == std::vector<std::string>{"Deploy web", "Inline", "Old node", "ConfigMap/apps/node-1"});
  CHECK(json::dump(find_state(result, "Deploy web").object) ==
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-node-1","namespace":"apps"},)"
        R"("data":{"server":"https://10.0.0.1:6443"}})");
  CHECK(json::find_path(find_state(result, "Inline").object, {"spec", "replicas"})->GetInt() == 3);
  CHECK(json::dump(find_state(result, "Old node").object) ==
        R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-0"}})");
}

TEST_CASE("Variables: an undefined one fails its state at file:line with the state ID; the others load",
          "[loader][variables]") {
  LoadOptions options;
  options.variables = {{"DEFINED", "x"}};
  LoadResult result = load_text(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: ok
  namespace: apps
data:
  a: ${DEFINED}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
  namespace: apps
data:
  script: |
    echo ${HOME}
---
State with a typo:
  object_present:
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: other, namespace: apps}
      data:
        a: ${DEFIND}
)",
                                "/m/vars.yaml", options);
  CHECK(ids(result) == std::vector<std::string>{"ConfigMap/apps/ok"});
  CHECK(messages(result) ==
        std::vector<std::string>{
            "/m/vars.yaml:16: ConfigMap/apps/broken: undefined variable HOME in ${HOME}: set it (vars, vars-from, "
            "--var, --vars-from) or give a default, ${HOME:=value}; to keep the text write $${HOME}, or annotate the "
            "object kstate.io/substitute: disabled",
            "/m/vars.yaml:25:12: State with a typo: undefined variable DEFIND in ${DEFIND}: set it (vars, vars-from, "
            "--var, --vars-from) or give a default, ${DEFIND:=value}; to keep the text write $${DEFIND}, or annotate "
            "the object kstate.io/substitute: disabled"});
  CHECK(result.failed_files == std::set<std::string>{"/m/vars.yaml"});
}

TEST_CASE("Variables: kstate.io/substitute: disabled keeps the object as written; a typo in it is an error",
          "[loader][variables]") {
  LoadResult result = load_text(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: script
  namespace: apps
  annotations:
    kstate.io/substitute: disabled
data:
  run.sh: echo ${HOME} $${X}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: typo
  namespace: apps
  annotations:
    kstate.io/substitute: disable
)",
                                "/m/optout.yaml");
  CHECK(ids(result) == std::vector<std::string>{"ConfigMap/apps/script"});
  CHECK(json::find_path(result.states[0].object, {"data", "run.sh"})->GetString() == std::string("echo ${HOME} $${X}"));
  CHECK(messages(result) ==
        std::vector<std::string>{"/m/optout.yaml:17:27: ConfigMap/apps/typo: annotation kstate.io/substitute: unknown "
                                 "value \"disable\", expected disabled or enabled (did you mean \"disabled\"?)"});
}

TEST_CASE("Variables: braces in a flow collection get a hint with the YAML syntax error", "[loader][variables]") {
  LoadResult result =
      load_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: {a: ${A}}}\n", "/m/flow.yaml");
  REQUIRE(result.errors.size() == 1);
  CHECK_THAT(result.errors[0].to_string(),
             Catch::StartsWith("/m/flow.yaml:3:") &&
                 Catch::EndsWith("(a ${...} reference inside a flow collection, {...} or [...], must be quoted or "
                                 "written in block style)"));
}

}  // namespace loader_test

namespace loader_test {

namespace {

// A MetalK8s-style state tree (no Jinja): an init.sls including its siblings by
// relative and absolute SLS names, manifests named by `name:`, and every requisite.
struct SaltTree {
  TempDir dir;
  std::string init;
  std::string namespace_sls;
  std::string config_sls;
  SaltTree() {
    const std::string base = "metalk8s/addons/web/deployed/";
    init = dir.write(base + "init.sls", R"(include:
  - .namespace
  - metalk8s.addons.web.deployed.config

Create web deployment:
  metalk8s_kubernetes.object_present:
    - name: files/web-deployment.yaml
    - watch:
      - metalk8s_kubernetes: Create web config
    - require:
      - sls: metalk8s.addons.web.deployed.namespace

Run migration:
  metalk8s_kubernetes.object_present:
    - name: Run the migration job
    - manifest:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: migrate, namespace: web}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: migrate, image: "registry.k8s.io/pause:3.9"}]
    - onchanges:
      - Create web config

Delete old service:
  metalk8s_kubernetes.object_absent:
    - apiVersion: v1
    - kind: Service
    - name: web-old
    - namespace: web
    - require_in:
      - Create web deployment
)");
    namespace_sls = dir.write(base + "namespace.sls", R"(Create web namespace:
  metalk8s_kubernetes.object_present:
    - name: files/namespace.yaml
    - require_in:
      - Create web config
)");
    config_sls = dir.write(base + "config.sls", R"(include:
  - .namespace

Create web config:
  metalk8s_kubernetes.object_present:
    - manifest:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: web, namespace: web}
        data: {level: info}
)");
    dir.write(base + "files/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n");
    dir.write(base + "files/web-deployment.yaml", R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.k8s.io/pause:3.9"}]
)");
  }
  std::string real(const std::string& path) const { return fs::weakly_canonical(path).string(); }
};

}  // namespace

TEST_CASE("Salt: include, name:, require_in, onchanges, watch and - sls: load from MetalK8s-style state files",
          "[loader][salt]") {
  SaltTree tree;
  LoadResult result = load_paths({tree.init});
  INFO(result.error_text());
  REQUIRE(result.ok());
  // Included files come first, each once though two files include namespace.sls.
  CHECK(ids(result) == std::vector<std::string>{"Create web namespace", "Create web config", "Create web deployment",
                                                "Run migration", "Delete old service"});
  const State& deployment = find_state(result, "Create web deployment");
  CHECK(json::get_string(deployment.object, "kind").value_or("") == "Deployment");  // name: is the manifest's path
  CHECK(deployment.watch == std::vector<std::string>{"Create web config"});
  CHECK(deployment.require == std::vector<std::string>{"sls:" + tree.real(tree.namespace_sls)});
  const State& migration = find_state(result, "Run migration");
  CHECK(json::get_string(migration.object, "kind").value_or("") == "Job");  // with a manifest, name: is a label
  CHECK(migration.onchanges == std::vector<std::string>{"Create web config"});
  const State& old_service = find_state(result, "Delete old service");
  CHECK(old_service.function == Function::object_absent);
  CHECK(old_service.require_in == std::vector<std::string>{"Create web deployment"});
  CHECK(find_state(result, "Create web namespace").require_in == std::vector<std::string>{"Create web config"});
  CHECK(find_state(result, "Create web namespace").sls_file == tree.real(tree.namespace_sls));
  CHECK(find_state(result, "Create web config").source.file ==
        tree.dir.path().string() + "/metalk8s/addons/web/deployed/config.sls");
  // A change to an included file is traced to the files that include it.
  CHECK(result.included_by.at(tree.namespace_sls) == std::set<std::string>{tree.init, tree.config_sls});
}

TEST_CASE("Salt: a state file included by two files loaded separately is one state set", "[loader][salt]") {
  SaltTree tree;
  LoadResult result = load_paths({tree.init, tree.config_sls});
  INFO(result.error_text());
  CHECK(result.ok());
  CHECK(std::count_if(result.states.begin(), result.states.end(),
                      [](const State& state) { return state.id == "Create web namespace"; }) == 1);
}

TEST_CASE("Salt: include and requisite mistakes name the file, line and state", "[loader][salt]") {
  TempDir dir;
  const std::string path = dir.write("top.sls", R"(include:
  - .missing
  - 42

A:
  object_present:
    - manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}
    - onchanges:
      - sls: .other
B:
  object_present:
    - manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}
    - watch: Create confg
    - require_in: [{sls: ".."}]
C:
  object_present:
    - manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
    - require_in: [Nothing]
)");
  dir.write("other.sls",
            "X:\n  object_present:\n    - manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: "
            "x, namespace: default}}\n");
  dir.write("loop.sls", "include:\n  - loop\n");
  LoadResult result = load_paths({path, (dir.path() / "loop.sls").string()});
  const std::string real_dir = fs::weakly_canonical(dir.path()).string();
  CHECK(messages(result) ==
        std::vector<std::string>{
            path +
                ":2:5: include: cannot find \".missing\": no missing.sls, missing/init.sls, missing.yaml, "
                "missing.yml under " +
                dir.path().string(),
            path + ":3:5: include: expected an SLS name or a file path, not a number",
            path + ":14:19: B: require_in: sls: \"..\" is not an SLS name (a.b.c or .c)",
            dir.path().string() + "/loop.sls:2:5: include: include cycle: " + real_dir + "/loop.sls -> " + real_dir +
                "/loop.sls",
            path + ":5:1: A: onchanges names every state of " + real_dir +
                "/other.sls, which declares none that loaded (is it included?)",
            path + ":15:1: C: require_in names \"Nothing\", which is not a state ID or an object in the manifests",
        });
  CHECK(ids(result) == std::vector<std::string>{});
}

TEST_CASE("resolve_state_file: SLS names, relative names, salt:// URLs and paths", "[loader][salt]") {
  TempDir dir;
  const std::string from = dir.write("salt/metalk8s/addons/web/init.sls", "");
  const std::string root = dir.path().string() + "/salt";
  dir.write("salt/metalk8s/addons/web/config.sls", "");
  dir.write("salt/metalk8s/addons/web/files/deploy.yaml", "");
  dir.write("salt/metalk8s/addons/common.sls", "");
  dir.write("salt/metalk8s/addons/db/init.sls", "");
  dir.write("salt/metalk8s/addons/web/settings.yaml", "");
  struct Case {
    std::string name;
    std::string expected;  // "" for an error
  };
  const std::vector<Case> cases = {
      {".config", root + "/metalk8s/addons/web/config.sls"},
      {"..common", root + "/metalk8s/addons/common.sls"},
      {"..db", root + "/metalk8s/addons/db/init.sls"},
      {"metalk8s.addons.db", root + "/metalk8s/addons/db/init.sls"},
      {"metalk8s.addons.web.config", root + "/metalk8s/addons/web/config.sls"},
      {".settings", root + "/metalk8s/addons/web/settings.yaml"},
      {"salt://metalk8s/addons/web/files/deploy.yaml", root + "/metalk8s/addons/web/files/deploy.yaml"},
      {"files/deploy.yaml", root + "/metalk8s/addons/web/files/deploy.yaml"},
      {"../common.sls", root + "/metalk8s/addons/common.sls"},
      {"metalk8s.addons.nothing", ""},
      {".", ""},
      {"a..b", ""},
  };
  for (const auto& test : cases) {
    INFO(test.name);
    kstate::Result<std::string> found = resolve_state_file(test.name, from);
    if (test.expected.empty()) {
      CHECK_FALSE(found.ok());
    } else {
      REQUIRE(found.ok());
      CHECK(*found == test.expected);
    }
  }
}

}  // namespace loader_test

namespace loader_test {

TEST_CASE("Other tools' marks on manifests: labels and annotations set the strategy, unknown values fail",
          "[loader][conventions]") {
  LoadResult result = load_text(R"(apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  labels:
    addonmanager.kubernetes.io/mode: EnsureExists
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
  namespace: default
  annotations:
    kustomize.toolkit.fluxcd.io/ssa: Ignore
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  namespace: default
  annotations:
    kustomize.toolkit.fluxcd.io/ssa: Merge
    kstate.io/strategy: replace
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: typo
  namespace: default
  labels:
    addonmanager.kubernetes.io/mode: EnsureExist
)",
                                "m.yaml");
  CHECK(messages(result) ==
        std::vector<std::string>{"m.yaml:32:38: ConfigMap/default/typo: label addonmanager.kubernetes.io/mode: unknown "
                                 "value \"EnsureExist\", expected Reconcile, EnsureExists or Ignore (did you mean "
                                 "\"EnsureExists\"?)"});
  CHECK(find_state(result, "StorageClass/standard").strategy == Strategy::create_only);
  CHECK(find_state(result, "StorageClass/standard").prune_disabled);
  CHECK(find_state(result, "ConfigMap/default/ignored").left_alone_by == "kustomize.toolkit.fluxcd.io/ssa: Ignore");
  const State& shared = find_state(result, "ConfigMap/default/shared");
  CHECK(shared.takeover_disabled);
  CHECK(shared.strategy == Strategy::replace);  // kstate.io/strategy wins
  CHECK(shared.left_alone_by.empty());
}

}  // namespace loader_test
