// Running the kstate binary against the emulator (see kstate_cli.hpp).
#include "tests/support/kstate_cli.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

namespace kstate::testing {

ProcessResult KstateCluster::kstate(const std::vector<std::string>& args) {
  std::vector<std::string> argv{KSTATE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  // These tests use the ApplySet kube-system/kstate (kstate apply records into a set,
  // and may prune, only when it is named).
  if ((args.front() == "apply" || args.front() == "test") &&
      std::find(args.begin(), args.end(), "--applyset-name") == args.end()) {
    argv.insert(argv.end(), {"--applyset-name", "kstate"});
  }
  argv.insert(argv.end(),
              {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / "cache").string()});
  const bool reports = !args.empty() && (args.front() == "apply" || args.front() == "test" || args.front() == "diff");
  const bool mode_given =
      std::any_of(args.begin(), args.end(), [](const std::string& arg) { return arg.starts_with("--state-output"); });
  if (full_report && reports && !mode_given) {
    argv.insert(argv.end(), {"--state-output", "full"});
  }
  auto result = run_process(argv);
  UNSCOPED_INFO("kstate " << args.front() << " exit " << result.exit_code << "\nstdout:\n"
                          << result.out << "\nstderr:\n"
                          << result.err);
  return result;
}

ProcessResult KstateCluster::apply(const std::string& path, std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"apply", path});
  return kstate(extra);
}

ProcessResult KstateCluster::test(const std::string& path, std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"test", path});
  return kstate(extra);
}

json::Document KstateCluster::get(const std::string& path) {
  auto reply = emulator.request("GET", path);
  if (reply.status == 404) {
    return json::Document();
  }
  REQUIRE(reply.status == 200);
  auto doc = json::parse(reply.body);
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

int KstateCluster::writes() const {
  return emulator.count_requests("POST", "/api") + emulator.count_requests("PUT", "/api") +
         emulator.count_requests("PATCH", "/api") + emulator.count_requests("DELETE", "/api");
}

std::string state_block(const std::string& report, const std::string& name) {
  const std::size_t at = report.find("Name: " + name + "\n");
  if (at == std::string::npos) {
    return {};
  }
  const std::size_t start = report.rfind("----------", at);
  const std::size_t end = report.find("----------", at);
  return report.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string field(const json::Value& object, std::initializer_list<std::string_view> path) {
  const json::Value* v = json::find_path(object, path);
  if (v == nullptr) {
    return {};
  }
  return v->IsString() ? std::string(v->GetString()) : json::dump(*v);
}

}  // namespace kstate::testing
