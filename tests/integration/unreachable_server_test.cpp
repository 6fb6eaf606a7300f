// `kstate apply` and `kstate test` against an API server that is not there, with the
// real binary, each case printing its time: the first contact is retried once, then
// one line names the server and the reason (exit 2), instead of every state trying on
// its own (1,010 objects and a stopped server took 20 minutes before):
//  - a stopped server (connection refused), discovery answered from the cache;
//  - a server that accepts TCP and never answers TLS, with --connect-timeout 500ms
//    (the default 10 s makes this ~20 s).
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "core/encoding.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/hostile_server.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace unreachable_server_test {

using kstate::testing::Emulator;
using kstate::testing::HostileBehaviour;
using kstate::testing::HostileServer;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace fs = std::filesystem;

namespace {

struct Timed {
  ProcessResult result;
  double seconds = 0;
};

Timed run_kstate(const std::vector<std::string>& args) {
  std::vector<std::string> argv{KSTATE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto start = std::chrono::steady_clock::now();
  Timed timed{kstate::testing::run_process(argv), 0};
  timed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  UNSCOPED_INFO("kstate exit " << timed.result.exit_code << "\nstdout:\n"
                               << timed.result.out << "\nstderr:\n"
                               << timed.result.err);
  return timed;
}

std::size_t lines(const std::string& text) {
  std::size_t count = 0;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    count += line.empty() ? 0 : 1;
  }
  return count;
}

}  // namespace

TEST_CASE("kstate test with 1,010 objects and a stopped API server: one line naming it, in a second",
          "[integration][reachability]") {
  Emulator emulator;
  TempDir work{"kstate-unreachable"};
  const fs::path manifests = work.path() / "manifests";
  std::string text;
  for (int i = 0; i < 1010; ++i) {
    text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-" + std::to_string(i) +
            ", namespace: default}\ndata: {k: v}\n";
  }
  write_file(manifests / "many.yaml", text);
  const std::string cache = (work.path() / "cache").string();
  const std::vector<std::string> common{"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", cache};
  // Fills the discovery cache, so that the failing run has nothing to ask discovery.
  std::vector<std::string> first{"test", manifests.string()};
  first.insert(first.end(), common.begin(), common.end());
  REQUIRE(run_kstate(first).result.exit_code == 1);

  emulator.stop();
  for (const char* command : {"test", "apply"}) {
    INFO(command);
    std::vector<std::string> args{command, manifests.string()};
    args.insert(args.end(), common.begin(), common.end());
    auto run = run_kstate(args);
    CHECK(run.result.exit_code == 2);
    CHECK(run.result.out.empty());
    CHECK(lines(run.result.err) == 1);
    CHECK_THAT(run.result.err, Catch::StartsWith(std::string("kstate ") + command + ": cannot reach the API server " +
                                                 emulator.url() + ": "));
    CHECK_THAT(run.result.err, Catch::Contains("Connection refused (gave up after 2 attempts)"));
    CHECK(run.seconds < 5.0);
    WARN("kstate " << command << ", 1,010 objects, API server stopped: exit " << run.result.exit_code << " after "
                   << run.seconds << " s; " << run.result.err);
  }
}

TEST_CASE(
    "kstate apply against a server that accepts TCP and never answers TLS: one line within two connect "
    "deadlines",
    "[integration][reachability]") {
  HostileServer silent(HostileBehaviour::silent_tcp);
  TempDir work{"kstate-silent"};
  write_file(work.path() / "kubeconfig",
             "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n"
             "  cluster:\n    server: " +
                 silent.url() +
                 "\n    certificate-authority-data: " + kstate::encoding::base64_encode(silent.ca_pem()) +
                 "\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n"
                 "  context: {cluster: c, user: u}\n");
  write_file(work.path() / "manifests" / "app.yaml",
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\ndata: {k: v}\n");
  auto run =
      run_kstate({"apply", (work.path() / "manifests").string(), "--kubeconfig", (work.path() / "kubeconfig").string(),
                  "--cache-dir", (work.path() / "cache").string(), "--connect-timeout", "500ms"});
  CHECK(run.result.exit_code == 2);
  CHECK(lines(run.result.err) == 1);
  CHECK_THAT(
      run.result.err,
      Catch::Contains("kstate apply: cannot reach the API server " + silent.url() + ": TLS handshake with " +
                      silent.url() + ": the server did not complete it within 0.5 s (gave up after 2 attempts)"));
  CHECK(silent.connections() >= 2);
  CHECK(silent.connections() <= 4);  // discovery's first two requests may both be under way
  CHECK(run.seconds < 5.0);          // 2 x 0.5 s, and the process's start
  WARN("kstate apply, server silent after TCP accept (--connect-timeout 500ms): exit "
       << run.result.exit_code << " after " << run.seconds << " s, " << silent.connections() << " connections; "
       << run.result.err);
}

}  // namespace unreachable_server_test
