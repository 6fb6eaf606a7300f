// Secret canaries (#10): unique values planted where secrets live (Secret data and
// stringData, the kubectl last-applied annotation of the manifest and of the live
// object, the kubeconfig bearer token, the output of an exec credential plugin) must
// never appear in what kstate writes: logs at the most verbose level (text and JSON),
// text/json/junit reports and their diffs, `kstate discover`, the discovery cache
// files and the daemon's state folder. apply_test.cpp covers the Secret values in the
// reports of one apply/test pair; this covers every other place.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "core/encoding.hpp"
#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace secret_canary_test {

using kstate::testing::BackgroundProcess;
using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace fs = std::filesystem;
namespace json = kstate::json;
using namespace std::chrono_literals;

namespace {

// Every planted value starts with this marker, so one search finds all of them; the
// base64 forms start with its encoding (12 bytes: a whole number of base64 groups).
const std::string marker = "kstate-canary";
const std::string marker_base64 = kstate::encoding::base64_encode("kstate-canar");

std::string secret_manifest(const std::string& suffix) {
  std::string data = kstate::encoding::base64_encode(marker + "-data-" + suffix);
  std::string last_applied = R"({"apiVersion":"v1","kind":"Secret","stringData":{"password":")" + marker +
                             "-manifest-last-applied-" + suffix + R"("}})";
  return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\n  annotations:\n"
         "    kubectl.kubernetes.io/last-applied-configuration: '" +
         last_applied + "'\n    owner: team-a\ndata:\n  token: " + data + "\nstringData:\n  password: " + marker +
         "-stringdata-" + suffix + "\n";
}

// Where a secret showed up, for the failure message; empty when nowhere.
std::vector<std::string> leaks(const std::string& text, const std::vector<std::string>& secrets) {
  std::vector<std::string> found;
  for (const auto& secret : secrets) {
    if (!secret.empty() && text.find(secret) != std::string::npos) {
      found.push_back(secret.substr(0, 24) + "...");
    }
  }
  return found;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The YAML value of `key:` in the emulator's kubeconfig (first occurrence after `after`).
std::string kubeconfig_value(const std::string& kubeconfig, const std::string& key, const std::string& after = "") {
  auto start = after.empty() ? 0 : kubeconfig.find(after);
  auto at = kubeconfig.find(key + ": ", start);
  REQUIRE(at != std::string::npos);
  at += key.size() + 2;
  return kubeconfig.substr(at, kubeconfig.find('\n', at) - at);
}

}  // namespace

TEST_CASE("secret canaries never appear in logs, reports, diffs, discover output, cache or state files") {
  Emulator emulator;
  TempDir work("kstate-secrets");  // not "canary": paths appear in the logs
  const fs::path manifests = work.path() / "manifests";
  const fs::path cache = work.path() / "cache";
  const std::string kubeconfig_text = kstate::testing::read_file(emulator.kubeconfig_path());

  // The exec plugin hands out cert-admin's client certificate and key: its output is secret.
  const std::string key_data = kubeconfig_value(kubeconfig_text, "client-key-data", "cert-admin");
  const std::string certificate_data = kubeconfig_value(kubeconfig_text, "client-certificate-data", "cert-admin");
  auto key_pem = kstate::encoding::base64_decode(key_data);
  auto certificate_pem = kstate::encoding::base64_decode(certificate_data);
  REQUIRE(key_pem);
  REQUIRE(certificate_pem);
  json::Document credential;
  credential.SetObject();
  json::set_string(credential, "apiVersion", "client.authentication.k8s.io/v1", credential.GetAllocator());
  json::set_string(credential, "kind", "ExecCredential", credential.GetAllocator());
  auto& status = json::ensure_object(credential, "status", credential.GetAllocator());
  json::set_string(status, "clientCertificateData", *certificate_pem, credential.GetAllocator());
  json::set_string(status, "clientKeyData", *key_pem, credential.GetAllocator());
  const fs::path plugin = work.path() / "credential-plugin";
  write_file(plugin, "#!/bin/sh\ncat <<'EOF'\n" + json::dump(credential) + "\nEOF\n");
  fs::permissions(plugin, fs::perms(0755));
  const fs::path exec_kubeconfig = work.path() / "exec-kubeconfig.yaml";
  write_file(exec_kubeconfig,
             "apiVersion: v1\nkind: Config\ncurrent-context: exec\nclusters:\n- name: emulator\n"
             "  cluster:\n    server: " +
                 emulator.url() +
                 "\n    certificate-authority-data: " + kstate::encoding::base64_encode(emulator.ca_pem()) +
                 "\nusers:\n- name: exec\n  user:\n    exec:\n      apiVersion: "
                 "client.authentication.k8s.io/v1\n      command: " +
                 plugin.string() +
                 "\n      interactiveMode: Never\ncontexts:\n- name: exec\n  context: {cluster: "
                 "emulator, user: exec}\n");

  // The key's PEM body lines (not the BEGIN/END lines) and the bearer token.
  std::vector<std::string> secrets{marker, marker_base64, emulator.admin_token(), emulator.readonly_token(), key_data};
  std::istringstream pem(*key_pem);
  for (std::string line; std::getline(pem, line);) {
    if (line.find("-----") == std::string::npos && line.size() >= 16) {
      secrets.push_back(line);
    }
  }

  // The live Secret already carries a last-applied annotation (kubectl apply made it).
  std::string live =
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"default",)"
      R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":)" +
      json::dump(json::make_string(R"({"apiVersion":"v1","kind":"Secret","data":{"token":")" +
                                       kstate::encoding::base64_encode(marker + "-live-last-applied") + R"("}})",
                                   credential.GetAllocator())) +
      R"(}},"data":{"token":")" + kstate::encoding::base64_encode(marker + "-live-data") + R"("}})";
  REQUIRE(emulator.request("POST", "/api/v1/namespaces/default/secrets", live).status == 201);

  std::string everything;  // all output, scanned at the end too
  int runs = 0;
  auto run_kstate = [&](std::vector<std::string> args, const fs::path& kubeconfig) {
    std::vector<std::string> argv{KSTATE_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--kubeconfig", kubeconfig.string(), "--cache-dir", cache.string(), "-v", "trace"});
    ProcessResult result = kstate::testing::run_process(argv);
    INFO("kstate " << args.front() << " " << (args.size() > 3 ? args[3] : "") << " exit " << result.exit_code);
    CHECK(result.exit_code != -1);
    CHECK(result.exit_code < 128);
    CHECK(leaks(result.out, secrets).empty());
    CHECK(leaks(result.err, secrets).empty());
    everything += result.out + result.err;
    ++runs;
    return result;
  };

  // Each format sees a change (the values differ every round), so every report has a diff.
  int round = 0;
  const fs::path token_kubeconfig = emulator.kubeconfig_path();
  for (const auto* kubeconfig : {&token_kubeconfig, &exec_kubeconfig}) {
    for (std::string format : {"text", "json", "junit"}) {
      write_file(manifests / "secret.yaml", secret_manifest(std::to_string(++round)));
      auto test = run_kstate({"test", manifests.string(), "-o", format}, *kubeconfig);
      CHECK(test.exit_code == 1);  // changes pending
      auto apply = run_kstate({"apply", manifests.string(), "-o", format}, *kubeconfig);
      CHECK(apply.exit_code == 0);
    }
  }
  auto live_secret = json::parse(emulator.request("GET", "/api/v1/namespaces/default/secrets/creds").body);
  REQUIRE(live_secret.ok());
  CHECK(json::dump(*json::find(*live_secret, "data")).find(kstate::encoding::base64_encode(marker + "-stringdata-6")) !=
        std::string::npos);
  run_kstate({"discover"}, exec_kubeconfig);
  CHECK(everything.find("Secret/default/creds") != std::string::npos);  // the outputs did talk about it

  // The daemon, JSON logs at trace, with its own cache and state folders, until it converged.
  const fs::path state = work.path() / "state";
  const fs::path daemon_cache = work.path() / "daemon-cache";
  write_file(work.path() / "config.yaml", "");
  write_file(manifests / "secret.yaml", secret_manifest("daemon"));
  std::string command = "exec " + std::string(KSTATE_BINARY) + " daemon --config " +
                        (work.path() / "config.yaml").string() + " --manifests-dir " + manifests.string() +
                        " --kubeconfig " + exec_kubeconfig.string() + " --cache-dir " + daemon_cache.string() +
                        " --state-dir " + state.string() +
                        " --listen-address 127.0.0.1:0 --no-leader-election-enabled --no-prune"
                        " -v trace --log-format json 2>&1";
  BackgroundProcess daemon({"/bin/sh", "-c", command});
  std::string daemon_log;
  const std::string wanted = kstate::encoding::base64_encode(marker + "-stringdata-daemon");
  bool converged = false;
  for (auto deadline = std::chrono::steady_clock::now() + 20s;
       !converged && std::chrono::steady_clock::now() < deadline;) {
    if (auto line = daemon.read_line(100ms)) {
      daemon_log += *line + "\n";
    }
    converged =
        emulator.request("GET", "/api/v1/namespaces/default/secrets/creds").body.find(wanted) != std::string::npos;
  }
  CHECK(converged);
  daemon.stop(SIGTERM, 10s);
  while (auto line = daemon.read_line(100ms)) {
    daemon_log += *line + "\n";
  }
  INFO("daemon log:\n" << daemon_log.substr(0, 4000));
  CHECK_FALSE(daemon_log.empty());
  CHECK(leaks(daemon_log, secrets).empty());

  // Every file kstate left behind.
  int files = 0;
  for (const auto& folder : {cache, daemon_cache, state}) {
    if (!fs::exists(folder)) {
      continue;
    }
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (entry.is_regular_file()) {
        INFO(entry.path().string());
        CHECK(leaks(read_all(entry.path()), secrets).empty());
        ++files;
      }
    }
  }
  CHECK(files > 0);  // at least the discovery caches
  std::cout << "secret canaries: " << secrets.size() << " secrets, " << runs << " kstate runs + the daemon ("
            << (everything.size() + daemon_log.size()) / 1024 << " KiB of output), " << files
            << " cache/state files scanned: no leak\n";
}

}  // namespace secret_canary_test
