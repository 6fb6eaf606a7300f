// What is generated from the command line's definitions: the bash completion run the
// way bash runs it (COMP_WORDS, then the function), the zsh and fish scripts checked by
// their shells when installed (fish also asked for completions), and the man page
// rendered by groff without a warning and naming every flag of every subcommand.
#include "daemon/cli_docs.hpp"

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <sstream>

#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace cli_docs_test {

using kstate::testing::run_process;
using kstate::testing::TempDir;
using kstate::testing::write_file;

namespace {

std::string script_for(const std::string& shell) {
  kstate::cli::Invocation invocation;
  return kstate::cli::completion_script(kstate::cli::command_line(invocation), shell);
}

// What bash's completion offers after `words` (the last one being completed), one per line.
std::vector<std::string> bash_completions(const TempDir& dir, const std::vector<std::string>& words) {
  std::string array;
  for (const auto& word : words) {
    array += " '" + word + "'";
  }
  const std::string command = "source '" + (dir.path() / "kstate.bash").string() + "'; cd '" + dir.path().string() +
                              "'; COMP_WORDS=(" + array + "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                              "; _kstate; printf '%s\\n' \"${COMPREPLY[@]}\"";
  auto result = run_process({"bash", "-c", command});
  REQUIRE(result.exit_code == 0);
  std::vector<std::string> lines;
  std::istringstream stream(result.out);
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("kstate completion bash completes subcommands, flags, flag values and paths") {
  TempDir dir("kstate-completion");
  write_file(dir.path() / "kstate.bash", script_for("bash"));
  write_file(dir.path() / "manifests.yaml", "");
  CHECK(bash_completions(dir, {"kstate", "ap"}) == Words{"apply"});
  CHECK(bash_completions(dir, {"kstate", "d"}) == Words{"daemon", "diff", "discover"});
  CHECK(bash_completions(dir, {"kstate", "--ver"}) == Words{"--version"});
  CHECK(bash_completions(dir, {"kstate", "test", "-o", ""}) == Words{"json", "junit", "text"});
  CHECK(bash_completions(dir, {"kstate", "diff", "--output", "j"}) == Words{"json", "junit"});
  CHECK(bash_completions(dir, {"kstate", "discover", "-o", ""}) == Words{"json", "text"});
  CHECK(bash_completions(dir, {"kstate", "completion", ""}) == Words{"bash", "fish", "zsh"});
  CHECK(bash_completions(dir, {"kstate", "test", "--pru"}) == Words{"--prune"});
  CHECK(bash_completions(dir, {"kstate", "discover", "--pru"}).empty());  // discover does not prune
  CHECK(bash_completions(dir, {"kstate", "apply", "-f", "mani"}) == Words{"manifests.yaml"});
  CHECK(bash_completions(dir, {"kstate", "apply", "mani"}) == Words{"manifests.yaml"});
  CHECK(bash_completions(dir, {"kstate", "apply", "-n", ""}).empty());                     // a name: nothing to suggest
  CHECK(bash_completions(dir, {"kstate", "daemon", "--log-f"}) == Words{"--log-format"});  // config keys too
}

TEST_CASE("kstate completion zsh and fish are accepted by their shells; fish completes") {
  TempDir dir("kstate-completion");
  const std::string zsh = script_for("zsh");
  CHECK(zsh.starts_with("#compdef kstate\n"));
  CHECK(zsh.find("'*'{-o,--output}'[Report format]:text|json|junit:(text json junit)'") != std::string::npos);
  if (kstate::testing::program_available("zsh")) {
    write_file(dir.path() / "_kstate", zsh);
    auto checked = run_process({"zsh", "-n", (dir.path() / "_kstate").string()});
    INFO(checked.err);
    CHECK(checked.exit_code == 0);
  } else {
    WARN("zsh not installed: the zsh script's syntax is not checked");
  }
  const std::string fish = script_for("fish");
  CHECK(fish.find("complete -c kstate -n '__fish_seen_subcommand_from test diff' -s o -l output -x -a 'text json "
                  "junit'") != std::string::npos);
  if (kstate::testing::program_available("fish")) {
    write_file(dir.path() / "kstate.fish", fish);
    auto checked = run_process({"fish", "--no-execute", (dir.path() / "kstate.fish").string()});
    INFO(checked.err);
    CHECK(checked.exit_code == 0);
    auto offered = run_process({"fish", "--no-config", "-c",
                                "source '" + (dir.path() / "kstate.fish").string() +
                                    "'; complete -C'kstate te'; complete -C'kstate test -o '"});
    INFO(offered.err);
    CHECK(offered.out.find("test\tSame as apply") != std::string::npos);
    CHECK(offered.out.find("junit") != std::string::npos);
  } else {
    WARN("fish not installed: the fish script is not checked");
  }
  CHECK(script_for("tcsh").empty());
}

TEST_CASE("kstate man: every subcommand and every flag, rendered by groff without a warning") {
  kstate::cli::Invocation invocation;
  const auto line = kstate::cli::command_line(invocation);
  const std::string page = kstate::cli::man_page(line);
  CHECK(page.find(".TH KSTATE 1 ") != std::string::npos);
  int flags = 0;
  for (const CLI::App* sub : line.app->get_subcommands([](const CLI::App* app) { return !app->get_group().empty(); })) {
    INFO(sub->get_name());
    CHECK(page.find(".SS \"kstate " + sub->get_name()) != std::string::npos);
    for (const CLI::Option* option : sub->get_options()) {
      for (const auto& name : option->get_lnames()) {
        if (name == "help" || name == "help-all") {
          continue;
        }
        std::string roff = "\\-\\-";
        for (char c : name) {
          roff += c == '-' ? std::string("\\-") : std::string(1, c);
        }
        INFO(name);
        CHECK(page.find("\\fB" + roff + "\\fR") != std::string::npos);
        ++flags;
      }
    }
  }
  CHECK(flags > 60);  // apply, test, daemon (one per config key), discover, inventory
  CHECK(page.find("kstate test, kstate diff") != std::string::npos);
  if (!kstate::testing::program_available("groff")) {
    WARN("groff not installed: the man page is not rendered");
    return;
  }
  TempDir dir("kstate-man");
  write_file(dir.path() / "kstate.1", page);
  auto rendered = run_process({"groff", "-man", "-Tutf8", "-ww", "-P-cbou", (dir.path() / "kstate.1").string()});
  CHECK(rendered.exit_code == 0);
  CHECK(rendered.err.empty());  // no warning
  CHECK(rendered.out.find("EXIT STATUS") != std::string::npos);
}

TEST_CASE("kstate completion and kstate man through the command line") {
  auto run = [](std::vector<const char*> args) {
    args.insert(args.begin(), "kstate");
    std::ostringstream out;
    std::ostringstream err;
    const int code =
        kstate::cli::run(static_cast<int>(args.size()), args.data(), kstate::cli::default_handlers(), out, err);
    return std::make_tuple(code, out.str(), err.str());
  };
  auto [bash_code, bash, bash_error] = run({"completion", "bash"});
  CHECK(bash_code == 0);
  CHECK(bash.find("complete -F _kstate kstate") != std::string::npos);
  auto [tcsh_code, tcsh, tcsh_error] = run({"completion", "tcsh"});
  CHECK(tcsh_code == 2);
  CHECK_THAT(tcsh_error, Catch::Contains("tcsh"));
  auto [man_code, man, man_error] = run({"man"});
  CHECK(man_code == 0);
  CHECK(man.starts_with(".\\\" Generated by `kstate man`"));
}

}  // namespace cli_docs_test
