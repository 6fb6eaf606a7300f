// The command-line contract of DESIGN.md: subcommands, exit codes, version output,
// and kubectl's habits: -f, -n, `diff`, --version, -v numbers, "did you mean".
#include "daemon/cli.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "daemon/config.hpp"

namespace cli_test {

namespace {

struct Run {
  int code;
  std::string out;
  std::string err;
};

Run run(std::vector<const char*> args) {
  args.insert(args.begin(), "kstate");
  std::ostringstream out;
  std::ostringstream err;
  int code = kstate::cli::run(static_cast<int>(args.size()), args.data(), kstate::cli::default_handlers(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("kstate version prints version, commit and library versions") {
  auto r = run({"version"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("kstate 0.", 0) == 0);
  CHECK(r.out.find("commit: ") != std::string::npos);
  for (const char* lib :
       {"boost 1.74", "openssl 3.", "rapidjson 1.1", "yaml-cpp 0.7", "spdlog 1.", "cli11 2.", "dtl "}) {
    INFO(lib);
    CHECK(r.out.find(lib) != std::string::npos);
  }
}

TEST_CASE("kstate --help lists every subcommand of the design") {
  auto r = run({"--help"});
  CHECK(r.code == 0);
  for (const char* sub : {"apply", "test", "daemon", "discover", "inventory", "version"}) {
    INFO(sub);
    CHECK(r.out.find(sub) != std::string::npos);
  }
}

TEST_CASE("usage errors exit 2 with one line on stderr") {
  SECTION("no subcommand") {
    auto r = run({});
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  SECTION("unknown flag") {
    auto r = run({"apply", "--no-such-flag"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--no-such-flag") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  SECTION("bad output format") {
    auto r = run({"test", "-o", "yaml"});
    CHECK(r.code == 2);
    CHECK(r.err.find("yaml") != std::string::npos);
  }
}

TEST_CASE("a subcommand without an implementation exits 2 saying so") {
  std::map<std::string, kstate::cli::Handler> none;
  const char* argv[] = {"kstate", "daemon"};
  std::ostringstream out;
  std::ostringstream err;
  CHECK(kstate::cli::run(2, argv, none, out, err) == 2);
  CHECK(err.str() == "kstate daemon: not implemented yet\n");
}

TEST_CASE("apply and test record into an ApplySet only when named (--applyset-name), which --prune needs") {
  auto parsed = [](std::vector<const char*> args) {
    args.insert(args.begin(), "kstate");
    std::map<std::string, kstate::cli::Handler> handlers;
    kstate::cli::CommonOptions seen;
    handlers["apply"] =
        handlers["test"] = [&seen](const kstate::cli::Invocation& invocation, std::ostream&, std::ostream&) {
          seen = invocation.common;
          return 0;
        };
    std::ostringstream out;
    std::ostringstream err;
    int code = kstate::cli::run(static_cast<int>(args.size()), args.data(), handlers, out, err);
    return std::make_pair(code, seen);
  };
  auto [code, defaults] = parsed({"apply", "dir"});
  CHECK(code == 0);
  CHECK(defaults.applyset_name.empty());  // no set unless named: nothing recorded (issue 35)
  CHECK(defaults.applyset_namespace == "kube-system");
  // --prune names what it may delete: it needs a set, as kubectl's --applyset.
  for (const char* command : {"apply", "test"}) {
    auto unnamed = run({command, "dir", "--prune"});
    CHECK(unnamed.code == 2);
    CHECK(unnamed.err == std::string("kstate ") + command +
                             ": --prune requires --applyset-name (the ApplySet whose recorded objects may be pruned; "
                             "see docs/ownership.md)\n");
  }
  auto [pruning_code, pruning] = parsed({"apply", "dir", "--prune", "--applyset-name", "kstate"});
  CHECK(pruning_code == 0);
  CHECK(pruning.prune == std::optional<bool>(true));
  // Objects to adopt even when another tool manages them.
  auto [adopt_code, adopting] =
      parsed({"apply", "dir", "--adopt-objects", "ConfigMap/a/b, ClusterRole/view", "--adopt-objects", "Secret/a/c"});
  CHECK(adopt_code == 0);
  CHECK(adopting.adopt_objects == std::set<std::string>{"ClusterRole/view", "ConfigMap/a/b", "Secret/a/c"});
  auto [before_path_code, before_path] = parsed({"apply", "--adopt-objects", "ConfigMap/a/b", "dir"});
  CHECK(before_path_code == 0);
  CHECK(before_path.adopt_objects == std::set<std::string>{"ConfigMap/a/b"});
  auto bad_adopt = run({"apply", "dir", "--adopt-objects", "ConfigMap"});
  CHECK(bad_adopt.code == 2);
  CHECK(bad_adopt.err.find("is not Kind/namespace/name") != std::string::npos);
  auto [named_code, named] =
      parsed({"test", "dir", "--applyset-name", "team-a.apps", "--applyset-namespace", "platform"});
  CHECK(named_code == 0);
  CHECK(named.applyset_name == "team-a.apps");
  CHECK(named.applyset_namespace == "platform");
  // Names the API server refuses never get that far: a Secret name is a DNS subdomain,
  // a namespace a DNS label.
  auto bad_name = run({"apply", "dir", "--applyset-name", "Team_A"});
  CHECK(bad_name.code == 2);
  CHECK(bad_name.err.find("--applyset-name") != std::string::npos);
  auto bad_namespace = run({"apply", "dir", "--applyset-namespace", "a.b"});
  CHECK(bad_namespace.code == 2);
  CHECK(bad_namespace.err.find("--applyset-namespace") != std::string::npos);
}

TEST_CASE("inventory takes -n or -A, --digest with one or more values, --image and --chunk-size") {
  auto parsed = [](std::vector<const char*> args) {
    args.insert(args.begin(), "kstate");
    std::map<std::string, kstate::cli::Handler> handlers;
    kstate::cli::Invocation seen;
    handlers["inventory"] = [&seen](const kstate::cli::Invocation& invocation, std::ostream&, std::ostream&) {
      seen = invocation;
      return 0;
    };
    std::ostringstream out;
    std::ostringstream err;
    int code = kstate::cli::run(static_cast<int>(args.size()), args.data(), handlers, out, err);
    return std::make_tuple(code, seen, err.str());
  };
  auto [code, defaults, no_error] = parsed({"inventory"});
  CHECK(code == 0);
  CHECK(defaults.inventory.namespace_name.empty());  // the context's namespace
  CHECK_FALSE(defaults.inventory.all_namespaces);
  CHECK(defaults.inventory.chunk_size == 500);
  CHECK(defaults.common.output == "text");

  auto [digest_code, digests, digest_error] =
      parsed({"inventory", "-A", "--digest", "sha256:a", "sha256:b", "--digest", "sha256:c", "--image", "nginx",
              "--chunk-size", "50", "-o", "json", "--context", "ctx"});
  CHECK(digest_code == 0);
  CHECK(digests.inventory.all_namespaces);
  CHECK(digests.inventory.digests == std::vector<std::string>{"sha256:a", "sha256:b", "sha256:c"});
  CHECK(digests.inventory.image == "nginx");
  CHECK(digests.inventory.chunk_size == 50);
  CHECK(digests.common.output == "json");
  CHECK(digests.common.context == "ctx");

  CHECK(std::get<0>(parsed({"inventory", "-n", "shop"})) == 0);
  CHECK(std::get<1>(parsed({"inventory", "-n", "shop"})).inventory.namespace_name == "shop");
  // Usage errors: both scopes, a format it does not write, flags of apply.
  for (std::vector<const char*> bad :
       {std::vector<const char*>{"inventory", "-n", "shop", "-A"}, std::vector<const char*>{"inventory", "-o", "junit"},
        std::vector<const char*>{"inventory", "--prune"}, std::vector<const char*>{"inventory", "--chunk-size", "0"}}) {
    auto [bad_code, ignored, error] = parsed(bad);
    INFO(bad.back());
    CHECK(bad_code == 2);
    CHECK(std::count(error.begin(), error.end(), '\n') == 1);
  }
}

// What a handler receives for these arguments (the handlers record, they do not run).
std::tuple<int, kstate::cli::Invocation, std::string> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kstate");
  std::map<std::string, kstate::cli::Handler> handlers;
  kstate::cli::Invocation seen;
  for (const char* name : {"apply", "test", "daemon", "discover", "inventory", "version", "completion", "man"}) {
    handlers[name] = [&seen](const kstate::cli::Invocation& invocation, std::ostream&, std::ostream&) {
      seen = invocation;
      return 0;
    };
  }
  std::ostringstream out;
  std::ostringstream err;
  int code = kstate::cli::run(static_cast<int>(args.size()), args.data(), handlers, out, err);
  return {code, seen, err.str()};
}

TEST_CASE("kubectl habits: -f repeatable with - for stdin, after the positional paths; -n; diff is test") {
  auto [code, seen, error] = parse({"apply", "dir", "-f", "a.yaml", "--filename", "-", "-f=b.yaml", "-n", "shop"});
  CHECK(code == 0);
  CHECK(seen.subcommand == "apply");
  CHECK(seen.paths == std::vector<std::string>{"dir", "a.yaml", "-", "b.yaml"});
  CHECK(seen.common.namespace_name == "shop");

  auto [diff_code, diff, diff_error] = parse({"diff", "-f", "-"});
  CHECK(diff_code == 0);
  CHECK(diff.subcommand == "test");  // an alias: the same handler, the same flags
  CHECK(diff.paths == std::vector<std::string>{"-"});
  CHECK(std::get<1>(parse({"test", "--namespace", "team-a", "x"})).common.namespace_name == "team-a");
}

TEST_CASE("kubectl habits: -v takes kubectl's numbers (with or without =) as well as level names") {
  const std::pair<const char*, const char*> cases[] = {
      {"0", "info"},  {"2", "info"},   {"3", "debug"},   {"5", "debug"},     {"6", "trace"},
      {"9", "trace"}, {"=6", "trace"}, {"warn", "warn"}, {"error", "error"},
  };
  for (const auto& [given, level] : cases) {
    INFO(given);
    auto [code, seen, error] = parse({"test", "x", "-v", given});
    CHECK(code == 0);
    CHECK(seen.common.log_level == level);
  }
  auto [code, seen, error] = parse({"test", "x", "-v", "11"});
  CHECK(code == 2);
  CHECK_THAT(error, Catch::Contains("a number from 0 to 10, got \"11\""));
  CHECK(std::get<0>(parse({"discover", "-v", "7"})) == 0);
  CHECK(std::get<1>(parse({"discover", "-v", "7"})).common.log_level == "trace");
}

TEST_CASE("kstate --version prints what kstate version prints") {
  auto version = run({"--version"});
  CHECK(version.code == 0);
  CHECK(version.out == run({"version"}).out);
  CHECK(version.err.empty());
}

TEST_CASE("a mistyped subcommand is named with the closest one; an unknown one without a guess") {
  auto typo = run({"aply", "examples/"});
  CHECK(typo.code == 2);
  CHECK(typo.err == "kstate: unknown command \"aply\" (did you mean \"apply\"?) (see kstate --help)\n");
  CHECK(run({"dif"}).err == "kstate: unknown command \"dif\" (did you mean \"diff\"?) (see kstate --help)\n");
  CHECK(run({"tset"}).err == "kstate: unknown command \"tset\" (did you mean \"test\"?) (see kstate --help)\n");
  CHECK(run({"frobnicate"}).err == "kstate: unknown command \"frobnicate\" (see kstate --help)\n");
}

TEST_CASE("each subcommand's --help lists only the flags that apply to it") {
  auto discover = run({"discover", "--help"});
  CHECK(discover.code == 0);
  for (const char* absent : {"--prune", "--adopt", "junit", "--concurrency", "--field-manager", "--applyset-name",
                             "--allow-empty-prune", "--namespace", "--filename"}) {
    INFO(absent);
    CHECK(discover.out.find(absent) == std::string::npos);
  }
  for (const char* present : {"--refresh", "--kubeconfig", "--context", "text,json", "--cache-dir", "--log-level"}) {
    INFO(present);
    CHECK(discover.out.find(present) != std::string::npos);
  }
  auto test = run({"diff", "--help"});
  CHECK(test.code == 0);
  for (const char* present : {"-f,--filename", "-n,--namespace", "--prune", "text,json,junit"}) {
    INFO(present);
    CHECK(test.out.find(present) != std::string::npos);
  }
  // The hidden man page generator is not offered.
  CHECK(run({"--help"}).out.find("man ") == std::string::npos);
}

TEST_CASE("apply's flags that are daemon config keys are described and checked as the key, once") {
  // Each shared flag's description is the key's, word for word, in both subcommands' help.
  auto apply_help = run({"apply", "--help"});
  auto daemon_help = run({"daemon", "--help"});
  REQUIRE(apply_help.code == 0);
  REQUIRE(daemon_help.code == 0);
  const auto one_line = [](std::string text) {  // CLI11 wraps nothing, but keep it robust
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
  };
  int shared = 0;
  for (const auto& key : kstate::daemon::config_keys()) {
    const std::string flag = key.flag();
    if (apply_help.out.find(flag + " ") == std::string::npos && apply_help.out.find(flag + ",") == std::string::npos) {
      continue;  // a daemon-only key (resync-interval, leader election, ...)
    }
    ++shared;
    INFO(flag);
    CHECK(one_line(apply_help.out).find(std::string(key.description)) != std::string::npos);
    CHECK(one_line(daemon_help.out).find(std::string(key.description)) != std::string::npos);
  }
  CHECK(shared >= 20);
  // A value the daemon's config refuses, apply refuses with the same reason.
  struct Row {
    const char* path;
    const char* value;
  };
  const Row rows[] = {{"concurrency", "0"},
                      {"qps", "0"},
                      {"burst", "100001"},
                      {"connect-timeout", "1ms"},
                      {"request-timeout", "banana"},
                      {"applyset.name", "Team_A"},
                      {"applyset.namespace", "a.b"},
                      {"vars", "NO_EQUALS_SIGN"},
                      {"ignore-fields", "Deployment.apps"}};
  for (const Row& row : rows) {
    const auto* key = kstate::daemon::find_config_key(row.path);
    REQUIRE(key != nullptr);
    const auto problem = kstate::daemon::config_value_problem(row.path, row.value);
    REQUIRE(problem.has_value());
    const std::string flag = key->flag();
    auto refused = run({"apply", "dir", flag.c_str(), row.value});
    INFO(flag << " " << row.value << ": " << refused.err);
    CHECK(refused.code == 2);
    CHECK(refused.err.find(flag) != std::string::npos);
    CHECK(refused.err.find(*problem) != std::string::npos);
  }
}

}  // namespace cli_test
