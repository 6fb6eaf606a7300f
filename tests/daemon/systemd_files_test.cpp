// What `cmake --install` ships: the unit passes `systemd-analyze verify` and keeps its
// hardening (exposure measured by `systemd-analyze security --offline=true`), the
// tmpfiles snippet creates the manifests folder, the default config.yaml is valid and
// documents every key with its default, and the examples are well-formed manifests.
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "daemon/config.hpp"

namespace systemd_files_test {

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = KSTATE_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct CommandResult {
  int status;
  std::string output;
};

CommandResult run(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  char buffer[512];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    output += buffer;
  }
  return {pipe == nullptr ? -1 : ::pclose(pipe), output};
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device random;
    path =
        fs::temp_directory_path() / ("kstate-systemd-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// The unit as cmake configures it, pointing at an executable that exists here.
std::string rendered_unit(std::string text) {
  auto replace = [&text](const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  };
  replace("@KSTATE_BINARY@", "/usr/bin/true");
  replace("@KSTATE_CONFIG@", "/etc/kstate/config.yaml");
  replace("@KSTATE_DOC_DIR@", "/usr/share/doc/kstate");
  return text;
}

bool has_systemd_analyze() {
  return fs::exists("/usr/bin/systemd-analyze");
}

}  // namespace

TEST_CASE("kstate.service passes systemd-analyze verify") {
  if (!has_systemd_analyze()) {
    WARN("systemd-analyze not installed: skipped");
    return;
  }
  TempDir dir;
  const std::string unit = rendered_unit(read_file(source_dir / "systemd/kstate.service.in"));
  std::ofstream(dir.path / "kstate.service") << unit;
  auto verified = run("systemd-analyze verify '" + (dir.path / "kstate.service").string() + "'");
  INFO(verified.output);
  CHECK(verified.status == 0);
  CHECK(verified.output.find("kstate.service") == std::string::npos);  // no warning about our unit

  // The check is real: a typo in the unit is reported.
  std::string broken = unit;
  broken.replace(broken.find("\nType=notify\n"), 13, "\nType=notfy\n");
  std::ofstream(dir.path / "kstate.service") << broken;
  auto refused = run("systemd-analyze verify '" + (dir.path / "kstate.service").string() + "'");
  CHECK_THAT(refused.output, Catch::Contains("Failed to parse service type"));
}

TEST_CASE("kstate.service has the directives of the design and an exposure below 2.0") {
  const std::string unit = read_file(source_dir / "systemd/kstate.service.in");
  for (const char* directive :
       {"Type=notify", "WatchdogSec=", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
        "StateDirectory=kstate", "CacheDirectory=kstate", "ConfigurationDirectory=kstate", "ProtectSystem=strict",
        "ProtectHome=yes", "NoNewPrivileges=yes", "PrivateTmp=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
        "SystemCallFilter=@system-service", "\nCapabilityBoundingSet=\n", "ReadOnlyPaths=-/etc/kstate/manifests",
        "\nLimitNOFILE=65536\n", "\nMemoryMax=1G\n", "\nLimitCORE=0\n", "\nRestartPreventExitStatus=2\n"}) {
    INFO(directive);
    CHECK(unit.find(directive) != std::string::npos);
  }
  // `systemctl start` must return: the daemon says READY=1 without waiting for the
  // API server, and the start is bounded.
  CHECK(unit.find("TimeoutStartSec=infinity") == std::string::npos);
  if (!has_systemd_analyze()) {
    WARN("systemd-analyze not installed: exposure not measured");
    return;
  }
  TempDir dir;
  std::ofstream(dir.path / "kstate.service") << rendered_unit(unit);
  auto security = run("systemd-analyze security --offline=true '" + (dir.path / "kstate.service").string() + "'");
  std::smatch match;
  REQUIRE(
      std::regex_search(security.output, match, std::regex(R"(Overall exposure level for kstate.service: ([0-9.]+))")));
  const double exposure = std::stod(match[1].str());
  WARN("systemd-analyze security --offline=true exposure: " << exposure);
  CHECK(exposure <= 2.0);
}

TEST_CASE("kstate.tmpfiles creates the manifests folder readable by root only") {
  if (!fs::exists("/usr/bin/systemd-tmpfiles")) {
    WARN("systemd-tmpfiles not installed: skipped");
    return;
  }
  TempDir root;
  auto created = run("systemd-tmpfiles --create --root='" + root.path.string() + "' '" +
                     (source_dir / "systemd/kstate.tmpfiles").string() + "'");
  INFO(created.output);
  REQUIRE(created.status == 0);
  struct stat info {};
  REQUIRE(::stat((root.path / "etc/kstate/manifests").c_str(), &info) == 0);
  CHECK(S_ISDIR(info.st_mode));
  CHECK((info.st_mode & 0777) == 0700);
}

TEST_CASE(
    "the shipped config.yaml is valid, equals the defaults but for a kubeconfig the unit can read, and documents every "
    "key") {
  const std::string text = read_file(source_dir / "systemd/config.yaml");
  auto config = kstate::daemon::parse_config(text, "systemd/config.yaml");
  REQUIRE(config.ok());
  const kstate::daemon::DaemonConfig defaults;
  CHECK(config->manifests_dir == defaults.manifests_dir);
  CHECK(config->resync_interval == defaults.resync_interval);
  CHECK(config->debounce == defaults.debounce);
  CHECK(config->prune_delay == defaults.prune_delay);
  CHECK(config->concurrency == defaults.concurrency);
  CHECK(config->qps == defaults.qps);
  CHECK(config->burst == defaults.burst);
  CHECK(config->prune == defaults.prune);
  CHECK(config->allow_empty_prune == defaults.allow_empty_prune);
  CHECK(config->leader_election.lease_duration == defaults.leader_election.lease_duration);
  CHECK(config->leader_election.renew_deadline == defaults.leader_election.renew_deadline);
  CHECK(config->leader_election.retry_period == defaults.leader_election.retry_period);
  CHECK(config->listen_address == defaults.listen_address);
  CHECK(config->connect_timeout == defaults.connect_timeout);
  CHECK(config->request_timeout == defaults.request_timeout);
  CHECK(config->cache_dir == defaults.cache_dir);
  CHECK(config->state_dir == defaults.state_dir);
  CHECK(config->log_format == defaults.log_format);
  CHECK(config->state_output == defaults.state_output);
  // The kubeconfig is one the unit can read: kubeadm's, not a home folder's, which
  // ProtectHome=yes hides (and which the unit does not make readable otherwise).
  CHECK(config->kubeconfig == "/etc/kubernetes/admin.conf");
  const std::string unit = read_file(source_dir / "systemd/kstate.service.in");
  CHECK(unit.find("ProtectHome=yes") != std::string::npos);
  for (const char* hidden : {"/home", "/root", "/run/user"}) {
    CHECK_FALSE(config->kubeconfig.starts_with(hidden));
  }
  for (const char* directive : {"InaccessiblePaths=", "TemporaryFileSystem=", "BindPaths="}) {
    CHECK(unit.find(directive) == std::string::npos);
  }
  YAML::Node root = YAML::Load(text);
  for (const auto& key : kstate::daemon::config_keys()) {
    INFO(key.path);
    const std::string path(key.path);
    const auto dot = path.find('.');
    const bool present =
        dot == std::string::npos ? root[path].IsDefined() : root[path.substr(0, dot)][path.substr(dot + 1)].IsDefined();
    CHECK(present);
  }
}

TEST_CASE("examples/ holds well-formed manifests and Salt-style states") {
  std::set<std::string> kinds;
  std::set<std::string> functions;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir / "examples")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    INFO(entry.path().string());
    for (const auto& document : YAML::LoadAllFromFile(entry.path().string())) {
      REQUIRE(document.IsMap());
      if (document["apiVersion"] && document["kind"]) {
        kinds.insert(document["kind"].as<std::string>());
        CHECK(document["metadata"]["name"].IsScalar());
        continue;
      }
      for (const auto& state : document) {
        REQUIRE(state.second.IsMap());
        REQUIRE(state.second.size() == 1);
        functions.insert(state.second.begin()->first.as<std::string>());
      }
    }
  }
  CHECK(kinds == std::set<std::string>{"ConfigMap", "Deployment", "Namespace", "Secret", "Service"});
  CHECK(functions == std::set<std::string>{"object_absent", "object_present", "object_updated"});
}

}  // namespace systemd_files_test
