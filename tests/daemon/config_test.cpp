// The daemon's config contract: Go-style durations, defaults, every key settable from
// the file and from flags (flags win), and errors that name the key and file:line.
#include "daemon/config.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>

namespace config_test {

using namespace std::chrono_literals;
using kstate::daemon::ConfigOverride;
using kstate::daemon::DaemonConfig;
using kstate::daemon::Duration;
using kstate::daemon::format_duration;
using kstate::daemon::parse_config;
using kstate::daemon::parse_duration;

TEST_CASE("Go-style durations parse like time.ParseDuration") {
  struct Case {
    const char* text;
    Duration expected;
  };
  const Case cases[] = {
      {"0", 0ns},       {"300ms", 300ms},   {"5m", 5min},
      {"1h30m", 90min}, {"1.5s", 1500ms},   {"2h45m30s", 2h + 45min + 30s},
      {"10us", 10us},   {"7ns", 7ns},       {"1m0.5s", 60500ms},
      {".5s", 500ms},   {"\xC2\xB5s", 0ns},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_duration(c.text);
    if (std::string_view(c.text) == "\xC2\xB5s") {
      CHECK_FALSE(parsed.ok());  // a unit without a number
      continue;
    }
    REQUIRE(parsed.ok());
    CHECK(*parsed == c.expected);
  }
  CHECK(*parse_duration("3\xC2\xB5s") == 3us);
}

TEST_CASE("bad durations are errors that say why") {
  for (const char* text : {"", "5", "5 m", "-5s", "5d", "m", "1h30", "ms5", "1.s2"}) {
    INFO(text);
    auto parsed = parse_duration(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message.find("invalid duration") != std::string::npos);
  }
}

TEST_CASE("durations format back to their shortest Go spelling") {
  CHECK(format_duration(0ns) == "0s");
  CHECK(format_duration(300ms) == "300ms");
  CHECK(format_duration(5min) == "5m");
  CHECK(format_duration(90min) == "1h30m");
  CHECK(format_duration(1500ms) == "1.5s");
  CHECK(format_duration(15s) == "15s");
  for (const char* text : {"1h30m", "300ms", "2h45m30.25s", "15s", "10us"}) {
    CHECK(format_duration(*parse_duration(text)) == text);
  }
}

TEST_CASE("an empty config file gives the documented defaults") {
  auto config = parse_config("", "config.yaml");
  REQUIRE(config.ok());
  CHECK(config->manifests_dir == "/etc/kstate/manifests");
  CHECK(config->resync_interval == 5min);
  CHECK(config->debounce == 20ms);
  CHECK(config->prune_delay == 2s);
  CHECK(config->applyset_name == "kstate");
  CHECK(config->applyset_namespace == "kube-system");
  CHECK(config->prune);
  CHECK_FALSE(config->allow_empty_prune);
  CHECK(config->adopt);  // objects the manifests declare are taken over unless told otherwise
  CHECK_FALSE(config->leader_election.enabled);
  CHECK(config->leader_election.lease_duration == 15s);
  CHECK(config->leader_election.renew_deadline == 10s);
  CHECK(config->leader_election.retry_period == 2s);
  CHECK(config->listen_address == "127.0.0.1:9842");
  CHECK(config->log_format == kstate::daemon::LogFormat::text);
  CHECK(config->state_output == kstate::states::StateOutput::concise);
  CHECK(config->check_manifest_permissions);
}

TEST_CASE("every key of a full config file is read") {
  const char* yaml = R"(
manifests-dir: /srv/manifests
kubeconfig: /etc/kubernetes/admin.conf
context: admin@cluster
resync-interval: 1h30m
debounce: 50ms
concurrency: 4
qps: 12.5
burst: 30
field-manager: ops
applyset:
  name: platform
  namespace: ops
prune: false
allow-empty-prune: true
adopt: false
leader-election:
  enabled: true
  lease-name: kstate-lock
  lease-namespace: ops
  lease-duration: 30s
  renew-deadline: 20s
  retry-period: 4s
listen-address: "[::1]:9000"
connect-timeout: 3s
request-timeout: 45s
cache-dir: /tmp/cache
state-dir: /tmp/state
log:
  level: debug
  format: json
state-output: changes
check-manifest-permissions: false
)";
  auto config = parse_config(yaml, "config.yaml");
  REQUIRE(config.ok());
  CHECK(config->manifests_dir == "/srv/manifests");
  CHECK(config->kubeconfig == "/etc/kubernetes/admin.conf");
  CHECK(config->context == "admin@cluster");
  CHECK(config->resync_interval == 90min);
  CHECK(config->debounce == 50ms);
  CHECK(config->concurrency == 4);
  CHECK(config->qps == 12.5);
  CHECK(config->burst == 30);
  CHECK(config->field_manager == "ops");
  CHECK(config->applyset_name == "platform");
  CHECK(config->applyset_namespace == "ops");
  CHECK_FALSE(config->prune);
  CHECK(config->allow_empty_prune);
  CHECK_FALSE(config->adopt);  // the default is true
  CHECK(config->leader_election.enabled);
  CHECK(config->leader_election.lease_name == "kstate-lock");
  CHECK(config->leader_election.lease_namespace == "ops");
  CHECK(config->leader_election.lease_duration == 30s);
  CHECK(config->leader_election.renew_deadline == 20s);
  CHECK(config->leader_election.retry_period == 4s);
  CHECK(config->listen_address == "[::1]:9000");
  CHECK(config->connect_timeout == 3s);
  CHECK(config->request_timeout == 45s);
  CHECK(config->cache_dir == "/tmp/cache");
  CHECK(config->state_dir == "/tmp/state");
  CHECK(config->log_level == "debug");
  CHECK(config->log_format == kstate::daemon::LogFormat::json);
  CHECK(config->state_output == kstate::states::StateOutput::changes);
  CHECK_FALSE(config->check_manifest_permissions);
}

TEST_CASE("unknown keys and bad values are errors naming the key and file:line") {
  struct Case {
    const char* yaml;
    const char* expected;
  };
  const Case cases[] = {
      {"resync-interval: 5m\nresync: 5m\n", "config.yaml:2: resync: unknown key"},
      {"leader-election:\n  enabled: true\n  lease-time: 3s\n",
       "config.yaml:3: leader-election.lease-time: unknown key"},
      {"debounce: 300\n", "config.yaml:1: debounce: invalid duration \"300\""},
      {"resync-interval: 0s\n", "config.yaml:1: resync-interval: must be at least 1s, got 0s"},
      {"concurrency: many\n", "config.yaml:1: concurrency: expected an integer"},
      {"concurrency: 0\n", "config.yaml:1: concurrency: must be between 1 and 1024"},
      {"qps: -1\n", "config.yaml:1: qps: must be greater than 0"},
      {"prune: yes\n", "config.yaml:1: prune: expected true or false"},
      {"log:\n  format: xml\n", "config.yaml:2: log.format: expected text, journal or json"},
      {"state-output: verbose\n", "config.yaml:1: state-output: expected concise, terse, mixed, changes or full"},
      {"state_output: terse\n", "config.yaml:1: state_output: unknown key (did you mean \"state-output\"?)"},
      {"resync-intervall: 5m\n", "config.yaml:1: resync-intervall: unknown key (did you mean \"resync-interval\"?)"},
      {"log:\n  level: 11\n", "config.yaml:2: log.level: expected one of"},
      {"log:\n  level: loud\n", "config.yaml:2: log.level: expected one of"},
      {"listen-address: 9842\n", "config.yaml:1: listen-address: expected host:port"},
      {"listen-address: localhost:99999\n", "config.yaml:1: listen-address: expected host:port with a port"},
      {"manifests-dir: \"\"\n", "config.yaml:1: manifests-dir: must not be empty"},
      {"applyset: kstate\n", "config.yaml:1: applyset: expected a mapping"},
      {"applyset:\n  name: Team_A\n", "config.yaml:2: applyset.name: a lowercase RFC 1123 subdomain"},
      {"applyset:\n  namespace: kube.system\n", "config.yaml:2: applyset.namespace: a lowercase RFC 1123 label"},
      {"leader-election:\n  lease-name: Kstate\n",
       "config.yaml:2: leader-election.lease-name: a lowercase RFC 1123 subdomain"},
      {"leader-election:\n  lease-namespace: \"\"\n", "config.yaml:2: leader-election.lease-namespace: "},
      {"concurrency: [1, 2]\n", "config.yaml:1: concurrency: expected a single value"},
      {"- a\n- b\n", "config.yaml:1: expected a mapping of config keys"},
      {"debounce: [\n", "config.yaml:2: invalid YAML"},
      {"leader-election:\n  lease-duration: 10s\n",
       "leader-election.lease-duration (10s) must be greater than leader-election.renew-deadline (10s)"},
      {"leader-election:\n  retry-period: 9s\n", "must be greater than 1.2 x leader-election.retry-period (9s)"},
  };
  for (const auto& c : cases) {
    INFO(c.yaml);
    auto config = parse_config(c.yaml, "config.yaml");
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().kind == kstate::ErrorKind::invalid_input);
    CHECK_THAT(config.error().message, Catch::Contains(c.expected));
  }
}

TEST_CASE("durations below their minimum are refused: no busy loop from resync-interval 1ns") {
  struct Case {
    const char* key;
    const char* value;
    const char* expected;  // "" when accepted
  };
  const Case cases[] = {
      {"resync-interval", "1ns", "resync-interval: must be at least 1s, got 1ns"},
      {"resync-interval", "999ms", "must be at least 1s"},
      {"resync-interval", "1s", ""},
      {"debounce", "0s", "debounce: must be at least 1ms, got 0s"},
      {"debounce", "999us", "must be at least 1ms"},
      {"debounce", "1ms", ""},
      {"retry-interval", "10ms", "retry-interval: must be at least 100ms (or 0s: wait for the next resync), got 10ms"},
      {"retry-interval", "0s", ""},
      {"prune-delay", "1ns", "prune-delay: must be at least 100ms (or 0s: at once), got 1ns"},
      {"prune-delay", "0s", ""},
      {"connect-timeout", "1ms", "connect-timeout: must be at least 100ms, got 1ms"},
      {"connect-timeout", "0s", "must be at least 100ms"},
      {"connect-timeout", "500ms", ""},
      {"request-timeout", "100ms", "request-timeout: must be at least 1s, got 100ms"},
      {"request-timeout", "1s", ""},
      {"leader-election.retry-period", "1ms", "must be at least 100ms"},
      {"leader-election.lease-duration", "500ms", "must be at least 1s"},
  };
  for (const auto& c : cases) {
    INFO(c.key << ": " << c.value);
    auto from_flag = kstate::daemon::apply_overrides(DaemonConfig{}, {{c.key, c.value}});
    if (std::string_view(c.expected).empty()) {
      CHECK(from_flag.ok());
      continue;
    }
    REQUIRE_FALSE(from_flag.ok());
    CHECK_THAT(from_flag.error().message, Catch::Contains(c.expected));
  }
}

TEST_CASE("loopback listen addresses are told from the others (the daemon warns about the others)") {
  using kstate::daemon::is_loopback_host;
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    INFO(host);
    CHECK(is_loopback_host(host));
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.10", "example.com", ""}) {
    INFO(host);
    CHECK_FALSE(is_loopback_host(host));
  }
}

TEST_CASE("flags override the file and are checked like file values") {
  auto from_file = parse_config("debounce: 1s\nconcurrency: 3\nprune: true\n", "config.yaml");
  REQUIRE(from_file.ok());
  auto config = kstate::daemon::apply_overrides(
      *from_file,
      {{"debounce", "20ms"}, {"prune", "false"}, {"leader-election.enabled", "true"}, {"log.format", "json"}});
  REQUIRE(config.ok());
  CHECK(config->debounce == 20ms);
  CHECK(config->concurrency == 3);  // untouched by flags: the file's value stays
  CHECK_FALSE(config->prune);
  CHECK(config->leader_election.enabled);
  CHECK(config->log_format == kstate::daemon::LogFormat::json);

  auto bad = kstate::daemon::apply_overrides(DaemonConfig{}, {{"resync-interval", "often"}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith("--resync-interval: invalid duration"));
}

TEST_CASE("every config key has a flag named after it") {
  std::vector<std::string> flags;
  for (const auto& key : kstate::daemon::config_keys()) {
    flags.push_back(key.flag());
  }
  CHECK(std::find(flags.begin(), flags.end(), "--leader-election-lease-duration") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "--applyset-namespace") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "--log-format") != flags.end());
  CHECK(std::find(flags.begin(), flags.end(), "--manifests-dir") != flags.end());
  // Each flag is unique and is a valid flag name (no dots, lower case).
  std::sort(flags.begin(), flags.end());
  CHECK(std::adjacent_find(flags.begin(), flags.end()) == flags.end());
  for (const auto& flag : flags) {
    INFO(flag);
    CHECK(flag.find('.') == std::string::npos);
    CHECK(std::none_of(flag.begin(), flag.end(), [](unsigned char c) { return std::isupper(c); }));
  }
}

TEST_CASE("load_config: a missing default file means defaults, a missing --config file is an error") {
  const std::string missing = "/nonexistent/kstate/config.yaml";
  auto defaults = kstate::daemon::load_config(missing, false, {{"debounce", "10ms"}});
  REQUIRE(defaults.ok());
  CHECK(defaults->debounce == 10ms);

  auto required = kstate::daemon::load_config(missing, true, {});
  REQUIRE_FALSE(required.ok());
  CHECK_THAT(required.error().message, Catch::StartsWith(missing));

  auto path = std::filesystem::temp_directory_path() / ("kstate-config-test-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "resync-interval: 1m\nbogus: 1\n";
  auto from_disk = kstate::daemon::load_config(path.string(), true, {});
  std::filesystem::remove(path);
  REQUIRE_FALSE(from_disk.ok());
  CHECK_THAT(from_disk.error().message, Catch::Contains(path.string() + ":2: bogus: unknown key"));
}

}  // namespace config_test
