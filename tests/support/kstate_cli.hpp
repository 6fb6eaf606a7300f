// End-to-end tests' view of kstate: the built binary run as a user runs it
// (`kstate apply DIR`, `kstate test DIR`) against a fresh kstate-emulator, with the
// cluster's objects and the requests it received at hand to check what happened.
//
//   kstate::testing::KstateCluster cluster;
//   write_file(cluster.work.path() / "m" / "cm.yaml", "...");
//   auto run = cluster.apply(cluster.manifest_dir("m"));
//   CHECK(run.exit_code == 0);
//   CHECK_FALSE(cluster.get("/api/v1/namespaces/default/configmaps/x").IsNull());
#pragma once

#include <string>
#include <vector>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace kstate::testing {

struct KstateCluster {
  Emulator emulator;
  TempDir work{"kstate-apply"};

  KstateCluster() = default;
  explicit KstateCluster(EmulatorOptions options) : emulator(std::move(options)) {}

  // apply / test / diff: most end-to-end tests read each state's Salt block (ID, Result,
  // Comment, Changes), so they ask for `--state-output full` unless their arguments
  // choose a mode or this is false (kstate's own default, concise).
  bool full_report = true;

  // `kstate <args> --kubeconfig <the emulator's> --cache-dir <work>/cache`; its output is
  // given to Catch as context (UNSCOPED_INFO) for the next failure.
  ProcessResult kstate(const std::vector<std::string>& args);
  ProcessResult apply(const std::string& path, std::vector<std::string> extra = {});
  ProcessResult test(const std::string& path, std::vector<std::string> extra = {});
  // The object at an API path, or a Null document when it does not exist.
  json::Document get(const std::string& path);
  std::string manifest_dir(const std::string& name) const { return (work.path() / name).string(); }
  // Writes (POST, PUT, PATCH, DELETE) the emulator logged under /api.
  int writes() const;
};

// The block of a text report about the state of object `name` ("Kind/ns/name"): from
// its separator line to the next; "" when the report has none.
std::string state_block(const std::string& report, const std::string& name);

// The string form of a field (a string as is, anything else as JSON); "" when absent.
std::string field(const json::Value& object, std::initializer_list<std::string_view> path);

}  // namespace kstate::testing
