// What the text report looks like where users read it: coloured on a terminal (a
// real pseudo-terminal, through script(1)), plain when piped or with NO_COLOR, and
// always in manifest order, even though states run concurrently and in dependency
// order (a Namespace declared last still runs first).
#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/json.hpp"
#include "states/report.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace report_output_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::RunOptions;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

const char* const escape = "\033[";

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-output"};

  std::vector<std::string> argv(const std::vector<std::string>& args) {
    std::vector<std::string> out{KSTATE_BINARY};
    out.insert(out.end(), args.begin(), args.end());
    if (args.front() == "apply" || args.front() == "test") {
      out.insert(out.end(), {"--applyset-name", "kstate"});  // (a one-shot run records into a named set only)
    }
    out.insert(out.end(),
               {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / "cache").string()});
    return out;
  }
  std::string manifests() {
    auto dir = work.path() / "manifests";
    write_file(dir / "app.yaml",
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {a: b}\n");
    return dir.string();
  }
};

// The command line for script(1), which runs it on a new pseudo-terminal, with
// NO_COLOR set or removed (the test itself may have inherited one).
std::string shell_line(const std::vector<std::string>& argv, bool no_color = false) {
  std::string line = no_color ? "env NO_COLOR=1" : "env -u NO_COLOR";
  for (const auto& arg : argv) {
    line += " '" + arg + "'";
  }
  return line;
}

}  // namespace

TEST_CASE("colour: the decision follows the file descriptor and NO_COLOR") {
  int master = -1;
  int terminal = -1;
  REQUIRE(openpty(&master, &terminal, nullptr, nullptr, nullptr) == 0);
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  int file = open("/dev/null", O_WRONLY);
  REQUIRE(file >= 0);
  unsetenv("NO_COLOR");
  CHECK(kstate::states::want_color(terminal));
  CHECK_FALSE(kstate::states::want_color(pipe_ends[1]));
  CHECK_FALSE(kstate::states::want_color(file));
  setenv("NO_COLOR", "1", 1);
  CHECK_FALSE(kstate::states::want_color(terminal));
  unsetenv("NO_COLOR");
  for (int fd : {master, terminal, pipe_ends[0], pipe_ends[1], file}) {
    close(fd);
  }
}

TEST_CASE("colour: kstate's report is coloured on a terminal and plain in a pipe") {
  if (!kstate::testing::program_available("script")) {
    WARN("script(1) is not installed: the terminal check did not run");
    return;
  }
  Cluster cluster;
  std::string dir = cluster.manifests();
  RunOptions without_no_color;
  without_no_color.env["TERM"] = "xterm";
  auto on_terminal = kstate::testing::run_process(
      {"script", "-q", "-e", "-c", shell_line(cluster.argv({"test", dir})), "/dev/null"}, without_no_color);
  INFO(on_terminal.out << on_terminal.err);
  CHECK(on_terminal.exit_code == 1);
  CHECK(on_terminal.out.find("ConfigMap/default/settings would be created (") != std::string::npos);
  CHECK(on_terminal.out.find(escape) != std::string::npos);

  auto piped = kstate::testing::run_process(cluster.argv({"test", dir}));
  CHECK(piped.exit_code == 1);
  CHECK(piped.out.find("ConfigMap/default/settings would be created (") != std::string::npos);
  CHECK(piped.out.find(escape) == std::string::npos);
  CHECK(piped.err.find(escape) == std::string::npos);

  auto opted_out = kstate::testing::run_process(
      {"script", "-q", "-e", "-c", shell_line(cluster.argv({"test", dir}), true), "/dev/null"}, without_no_color);
  CHECK(opted_out.out.find("ConfigMap/default/settings would be created (") != std::string::npos);
  CHECK(opted_out.out.find(escape) == std::string::npos);

  // Machine formats never carry colour, even on a terminal.
  auto as_json = kstate::testing::run_process(
      {"script", "-q", "-e", "-c", shell_line(cluster.argv({"test", dir, "-o", "json"})), "/dev/null"},
      without_no_color);
  CHECK(as_json.out.find("\"local\"") != std::string::npos);
  CHECK(as_json.out.find(escape) == std::string::npos);
}

TEST_CASE("results print in manifest order although states run concurrently and a late Namespace runs first") {
  Cluster cluster;
  auto dir = cluster.work.path() / "ordered";
  std::vector<std::string> expected;
  // 40 states over 4 files; the Namespace they live in is declared in the last file.
  for (int file = 0; file < 4; ++file) {
    std::string text;
    for (int i = 0; i < 10; ++i) {
      std::string name = "cm-" + std::to_string(file) + "-" + std::to_string(i);
      text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: late}\ndata: {a: b}\n";
      expected.push_back("ConfigMap/late/" + name);
    }
    write_file(dir / ("1" + std::to_string(file) + "-maps.yaml"), text);
  }
  write_file(dir / "99-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: late}\n");
  expected.push_back("Namespace/late");
  // Enough latency that many requests are in flight at once and finish out of order.
  cluster.emulator.set_faults(R"({"latencyMs": 5})");

  for (const char* mode : {"test", "apply"}) {
    INFO("mode " << mode);
    auto run = kstate::testing::run_process(
        cluster.argv({mode, dir.string(), "--concurrency", "16", "--state-output", "full"}));
    INFO(run.out << run.err);
    CHECK(run.exit_code == (std::string(mode) == "test" ? 1 : 0));
    std::vector<std::string> printed;
    std::size_t at = 0;
    while ((at = run.out.find("        Name: ", at)) != std::string::npos) {
      at += 14;
      printed.push_back(run.out.substr(at, run.out.find('\n', at) - at));
    }
    CHECK(printed == expected);
  }
  // JSON: __run_num__ follows the same order.
  auto as_json = kstate::testing::run_process(cluster.argv({"apply", dir.string(), "-o", "json"}));
  auto parsed = json::parse(as_json.out);
  REQUIRE(parsed.ok());
  std::vector<std::string> by_run_num(expected.size());
  for (const auto& member : json::find(*parsed, "local")->GetObject()) {
    auto run_num = json::find(member.value, "__run_num__")->GetInt();
    REQUIRE(run_num < static_cast<int>(by_run_num.size()));
    by_run_num[static_cast<std::size_t>(run_num)] = json::string_or(json::find(member.value, "name"), "");
  }
  CHECK(by_run_num == expected);
}

TEST_CASE("a report larger than any output buffer is written whole in every format, and the exit code kept") {
  // kstate apply/test end the process right after the report (apply_command.hpp): it
  // must be flushed first, whatever its size and format.
  Cluster cluster;
  auto dir = cluster.work.path() / "many";
  std::string text;
  const int count = 400;
  for (int i = 0; i < count; ++i) {
    text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-" + std::to_string(i) +
            ", namespace: default}\ndata: {a: b}\n";
  }
  write_file(dir / "maps.yaml", text);

  auto as_text = kstate::testing::run_process(cluster.argv({"test", dir.string(), "--state-output", "full"}));
  CHECK(as_text.exit_code == 1);  // changes pending
  CHECK(as_text.out.size() > 64 * 1024);
  CHECK(as_text.out.find("ConfigMap/default/cm-399") != std::string::npos);
  CHECK(as_text.out.find("Total states run:") != std::string::npos);

  auto as_json = kstate::testing::run_process(cluster.argv({"apply", dir.string(), "-o", "json"}));
  CHECK(as_json.exit_code == 0);
  auto parsed = json::parse(as_json.out);
  REQUIRE(parsed.ok());
  CHECK(json::find(*parsed, "local")->MemberCount() == count);

  auto as_junit = kstate::testing::run_process(cluster.argv({"test", dir.string(), "-o", "junit"}));
  CHECK(as_junit.exit_code == 0);  // nothing left to change
  std::size_t cases = 0;
  for (std::size_t at = 0; (at = as_junit.out.find("<testcase ", at)) != std::string::npos; ++at) {
    ++cases;
  }
  CHECK(cases == count);
  CHECK(as_junit.out.find("</testsuites>") != std::string::npos);
}

}  // namespace report_output_test
