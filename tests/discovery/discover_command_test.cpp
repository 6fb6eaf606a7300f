// `kstate discover` end to end: against the emulator it lists the same resources as
// `kubectl api-resources` (skipped without kubectl), reports its requests, and the
// second run is answered by the cache with zero requests.
#include <catch2/catch.hpp>
#include <set>
#include <sstream>

#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace discover_command_test {

using kstate::testing::Emulator;
using kstate::testing::run_process;
using kstate::testing::TempDir;

TEST_CASE("kstate discover prints what kubectl api-resources prints, then uses its cache", "[discover][emulator]") {
  Emulator emulator;
  TempDir cache;
  std::vector<std::string> command{KSTATE_BINARY,  "discover",
                                   "--kubeconfig", emulator.kubeconfig_path().string(),
                                   "--cache-dir",  cache.path().string()};
  auto first = run_process(command);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.rfind("NAME", 0) == 0);
  CHECK(first.out.find("discovery: 2 requests, cache miss (aggregated v2)") != std::string::npos);
  auto second = run_process(command);
  REQUIRE(second.exit_code == 0);
  CHECK(second.out.find("discovery: 0 requests, cache hit") != std::string::npos);

  // NAME[.GROUP] of every row, as `kubectl api-resources -o name` prints them.
  std::set<std::string> ours;
  std::istringstream lines(first.out);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    if (line.rfind("discovery:", 0) == 0) {
      continue;
    }
    std::istringstream words(line);
    std::vector<std::string> columns;
    for (std::string word; words >> word;) {
      columns.push_back(word);
    }
    REQUIRE(columns.size() >= 4);
    const std::string& api_version = columns[columns.size() - 3];
    auto slash = api_version.find('/');
    ours.insert(columns[0] + (slash == std::string::npos ? "" : "." + api_version.substr(0, slash)));
  }
  CHECK(ours.count("configmaps") == 1);
  CHECK(ours.count("deployments.apps") == 1);

  auto json_output = run_process({KSTATE_BINARY, "discover", "-o", "json", "--kubeconfig",
                                  emulator.kubeconfig_path().string(), "--cache-dir", cache.path().string()});
  REQUIRE(json_output.exit_code == 0);
  CHECK(json_output.out.find("\"cache\": \"cache hit\"") != std::string::npos);

  if (!kstate::testing::program_available("kubectl")) {
    WARN("kubectl is not installed: comparison skipped");
    return;
  }
  kstate::testing::RunOptions kubectl_options;
  kubectl_options.env = {{"KUBECACHEDIR", (cache.path() / "kubectl").string()}};
  auto kubectl = run_process(
      {"kubectl", "--kubeconfig", emulator.kubeconfig_path().string(), "api-resources", "-o", "name"}, kubectl_options);
  REQUIRE(kubectl.exit_code == 0);
  std::set<std::string> theirs;
  std::istringstream names(kubectl.out);
  for (std::string name; std::getline(names, name);) {
    if (!name.empty()) {
      theirs.insert(name);
    }
  }
  CHECK(ours == theirs);
}

}  // namespace discover_command_test
