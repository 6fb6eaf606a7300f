// Every config key is a flag of the daemon subcommand; flags are recorded and
// win over the file once load_config() applies them.
#include "daemon/config_flags.hpp"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <chrono>

namespace config_flags_test {

using namespace std::chrono_literals;

namespace {

std::vector<kstate::daemon::ConfigOverride> parse_flags(std::vector<const char*> args) {
  CLI::App app{"test"};
  std::vector<kstate::daemon::ConfigOverride> overrides;
  kstate::daemon::add_config_flags(app, overrides);
  args.insert(args.begin(), "kstate-daemon");
  app.parse(static_cast<int>(args.size()), args.data());
  return overrides;
}

}  // namespace

TEST_CASE("config flags are recorded and applied over the file") {
  auto overrides = parse_flags({"--debounce", "25ms", "--no-prune", "--leader-election-enabled",
                                "--leader-election-lease-duration=20s", "--log-format", "json", "--applyset-name",
                                "ops", "--manifests-dir", "/srv/m"});
  REQUIRE(overrides.size() == 7);
  auto file = kstate::daemon::parse_config("debounce: 2s\nprune: true\nconcurrency: 2\n", "config.yaml");
  REQUIRE(file.ok());
  auto config = kstate::daemon::apply_overrides(*file, overrides);
  REQUIRE(config.ok());
  CHECK(config->debounce == 25ms);
  CHECK_FALSE(config->prune);
  CHECK(config->concurrency == 2);
  CHECK(config->leader_election.enabled);
  CHECK(config->leader_election.lease_duration == 20s);
  CHECK(config->log_format == kstate::daemon::LogFormat::json);
  CHECK(config->applyset_name == "ops");
  CHECK(config->manifests_dir == "/srv/m");
}

TEST_CASE("a flag with a bad value fails when applied, naming the flag") {
  auto overrides = parse_flags({"--concurrency", "lots"});
  auto config = kstate::daemon::apply_overrides({}, overrides);
  REQUIRE_FALSE(config.ok());
  CHECK_THAT(config.error().message, Catch::StartsWith("--concurrency: expected an integer"));
}

TEST_CASE("config flags: -v is the short form of --log-level") {
  auto overrides = parse_flags({"-v", "debug"});
  REQUIRE(overrides.size() == 1);
  CHECK(overrides[0].key == "log.level");
  CHECK(overrides[0].value == "debug");
}

TEST_CASE("unknown flags are rejected by the parser") {
  CHECK_THROWS_AS(parse_flags({"--resync", "5m"}), CLI::ParseError);
}

TEST_CASE("config flags: --var and --vars-from repeat and add to the file's vars and vars-from") {
  auto overrides = parse_flags({"--var", "API_SERVER=10.0.0.2", "--vars-from", "/etc/kstate/node.yaml", "--var",
                                "DOMAIN=cluster.local", "--vars-from=/etc/kstate/site.yaml"});
  REQUIRE(overrides.size() == 4);
  auto file = kstate::daemon::parse_config(
      "vars:\n  API_SERVER: 10.0.0.1\n  REGISTRY: mirror.local\nvars-from:\n  - /etc/kstate/common.yaml\n",
      "config.yaml");
  REQUIRE(file.ok());
  auto config = kstate::daemon::apply_overrides(*file, overrides);
  REQUIRE(config.ok());
  CHECK(config->vars == kstate::manifests::VariableMap{
                            {"API_SERVER", "10.0.0.2"}, {"DOMAIN", "cluster.local"}, {"REGISTRY", "mirror.local"}});
  CHECK(config->vars_from ==
        std::vector<std::string>{"/etc/kstate/common.yaml", "/etc/kstate/node.yaml", "/etc/kstate/site.yaml"});
  auto bad = kstate::daemon::apply_overrides({}, parse_flags({"--var", "no-equals"}));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "--var: expected NAME=VALUE, got \"no-equals\"");
}

}  // namespace config_flags_test
