// What `kstate apply` and `kstate test` print by default and with --state-output, on a
// 1,010-object corpus (10 Namespaces, 1,000 ConfigMaps), with the real binary: as
// kubectl apply, one line per object that changed; as kubectl diff, only what would
// change; Salt's terse and full on request; a file that does not load counted as a
// failure in the summary, as the exit code says.
#include <catch2/catch.hpp>
#include <sstream>

#include "tests/support/kstate_cli.hpp"

namespace state_output_test {

using kstate::testing::KstateCluster;
using kstate::testing::write_file;

namespace {

constexpr int namespaces = 10;
constexpr int maps_per_namespace = 100;

// One file per namespace: the Namespace, then its ConfigMaps; `changed` gets another value.
std::string namespace_file(int ns, const std::string& changed = "") {
  const std::string name = "output-" + std::to_string(ns);
  std::string text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n";
  for (int i = 0; i < maps_per_namespace; ++i) {
    const std::string map = "settings-" + std::to_string(i);
    text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + map + "\n  namespace: " + name +
            "\ndata:\n  colour: " + (map == changed ? "green" : "blue") + "\n";
  }
  return text;
}

std::size_t count_lines(const std::string& text) {
  std::size_t count = 0;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    ++count;
  }
  return count;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("kstate's output: one line per change by default, only the pending change's diff in test mode",
          "[integration]") {
  KstateCluster cluster;
  cluster.full_report = false;  // kstate's own default
  const std::string dir = cluster.manifest_dir("corpus");
  for (int ns = 0; ns < namespaces; ++ns) {
    write_file(cluster.work.path() / "corpus" / ("ns-" + std::to_string(ns) + ".yaml"), namespace_file(ns));
  }

  auto first = cluster.apply(dir);
  REQUIRE(first.exit_code == 0);
  CHECK(occurrences(first.out, " created (") == 1010);
  CHECK(first.out.find("ConfigMap/output-3/settings-7 created (" + dir + "/ns-3.yaml:") != std::string::npos);
  CHECK(first.out.find("+++") == std::string::npos);  // no diff of what was created
  CHECK(first.out.find("Succeeded: 1010 (changed=1010, unchanged=0)\nFailed: 0\n") != std::string::npos);

  // One ConfigMap changes: test prints that change and the summary, as kubectl diff would.
  write_file(cluster.work.path() / "corpus" / "ns-3.yaml", namespace_file(3, "settings-7"));
  auto test = cluster.test(dir);
  CHECK(test.exit_code == 1);
  CHECK(count_lines(test.out) < 40);
  CHECK(test.out.starts_with("ConfigMap/output-3/settings-7 would be configured (" + dir + "/ns-3.yaml:"));
  CHECK(test.out.find("\n    -  colour: blue\n    +  colour: green\n") != std::string::npos);
  CHECK(test.out.find("Succeeded: 1010 (changed=1, unchanged=1009)\nPending: 1\nFailed: 0\n") != std::string::npos);

  // apply: that one line and the summary.
  auto apply = cluster.apply(dir);
  CHECK(apply.exit_code == 0);
  CHECK(apply.out.starts_with("ConfigMap/output-3/settings-7 configured (" + dir + "/ns-3.yaml:"));
  CHECK(count_lines(apply.out) == 9);  // the line, a blank line, the summary's 7
  CHECK(apply.out.find("Succeeded: 1010 (changed=1, unchanged=1009)\n") != std::string::npos);

  // Salt's terse: every state one line; full: every state's block.
  auto terse = cluster.test(dir, {"--state-output", "terse"});
  CHECK(terse.exit_code == 0);
  CHECK(occurrences(terse.out, " unchanged (") == 1010);
  auto full = cluster.test(dir, {"--state-output=full"});
  CHECK(occurrences(full.out, "      Result: True\n") == 1010);

  auto mistyped = cluster.test(dir, {"--state-output", "verbose"});
  CHECK(mistyped.exit_code == 2);
  CHECK(mistyped.err.find("--state-output") != std::string::npos);
}

TEST_CASE("a file that does not load is a failure in the summary, as in the exit code", "[integration]") {
  KstateCluster cluster;
  cluster.full_report = false;
  write_file(cluster.work.path() / "m" / "good.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\ndata: {a: b}\n");
  write_file(cluster.work.path() / "m" / "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n");
  auto apply = cluster.apply(cluster.manifest_dir("m"));
  CHECK(apply.exit_code == 2);
  CHECK(apply.out.find("ConfigMap/default/good created (") != std::string::npos);
  CHECK(apply.out.find("Error: " + cluster.manifest_dir("m") + "/broken.yaml:") != std::string::npos);
  CHECK(apply.out.find("Failed: 1 (0 states, 1 error outside states)\n") != std::string::npos);
}

TEST_CASE("an object that existed without kstate's labels is reported adopted", "[integration]") {
  KstateCluster cluster;
  cluster.full_report = false;
  auto made = cluster.emulator.request("POST", "/api/v1/namespaces/default/configmaps",
                                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"theirs"},)"
                                       R"("data":{"a":"b"}})",
                                       "application/json");
  REQUIRE(made.status == 201);
  write_file(cluster.work.path() / "m" / "theirs.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs, namespace: default}\ndata: {a: c}\n");
  auto test = cluster.test(cluster.manifest_dir("m"));
  CHECK(test.out.starts_with("ConfigMap/default/theirs would be adopted ("));
  auto apply = cluster.apply(cluster.manifest_dir("m"));
  CHECK(apply.exit_code == 0);
  CHECK(
      apply.out.starts_with("ConfigMap/default/theirs adopted (" + cluster.manifest_dir("m") + "/theirs.yaml:1:1)\n"));
  CHECK(cluster.apply(cluster.manifest_dir("m")).out.starts_with("\nSummary\n"));  // kstate's now
}

}  // namespace state_output_test
