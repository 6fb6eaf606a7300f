// Reports users and CI read: the highstate-like summary, Salt JSON, JUnit XML, and
// the exit codes of DESIGN.md.
#include "states/report.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace report_test {

using namespace kstate;

namespace {

states::StateResult make(const char* id, std::optional<bool> result, const char* comment, const char* diff = nullptr) {
  states::StateResult r;
  r.id = id;
  r.name = std::string("ConfigMap/default/") + id;
  r.result = result;
  r.comment = comment;
  r.duration_ms = 1.5;
  r.source = {"dir/file.yaml", 3, 1};
  if (diff != nullptr) {
    json::set_string(r.changes, "diff", diff, r.changes.GetAllocator());
    r.change = states::Change::created;
  }
  return r;
}

states::RunReport sample(bool test_mode) {
  states::RunReport report;
  report.test_mode = test_mode;
  report.total_ms = 1234;
  report.results.push_back(make("unchanged", true, "already good"));
  report.results.push_back(make("created", test_mode ? std::nullopt : std::optional<bool>(true), "created",
                                "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+data: <x> & \"y\"\n"));
  report.results.push_back(make("broken", false, "Invalid: ConfigMap \"broken\" is invalid"));
  return report;
}

}  // namespace

TEST_CASE("exit codes follow DESIGN.md for apply and test") {
  states::RunReport apply_ok;
  apply_ok.results.push_back(make("a", true, "created", "diff"));
  CHECK(apply_ok.exit_code() == 0);
  states::RunReport test_clean;
  test_clean.test_mode = true;
  test_clean.results.push_back(make("a", true, "already good"));
  CHECK(test_clean.exit_code() == 0);
  states::RunReport test_pending;
  test_pending.test_mode = true;
  test_pending.results.push_back(make("a", true, "already good"));
  test_pending.results.push_back(make("b", std::nullopt, "would be created", "diff"));
  CHECK(test_pending.exit_code() == 1);
  CHECK(sample(true).exit_code() == 2);
  CHECK(sample(false).exit_code() == 2);
  states::RunReport load_error;
  load_error.errors.push_back("f.yaml:1:1: bad");
  CHECK(load_error.exit_code() == 2);
  CHECK(load_error.failures() == 1);
}

TEST_CASE("full text report lists each state as Salt's blocks, and a Salt-like summary") {
  std::ostringstream out;
  states::write_text(out, sample(false), {.state_output = states::StateOutput::full});
  std::string text = out.str();
  CHECK(text.find("          ID: broken\n    Function: object_present\n") != std::string::npos);
  CHECK(text.find("      Result: False\n     Comment: Invalid: ConfigMap \"broken\" is invalid\n") !=
        std::string::npos);
  CHECK(text.find("      Source: dir/file.yaml:3:1\n") != std::string::npos);
  CHECK(text.find("              +data: <x> & \"y\"\n") != std::string::npos);
  CHECK(text.find("Succeeded: 2 (changed=1, unchanged=1)\nFailed: 1\n") != std::string::npos);
  CHECK(text.find("Total run time: 1.234 s\n") != std::string::npos);
  CHECK(text.find('\033') == std::string::npos);  // no colour unless asked
  std::ostringstream coloured;
  states::write_text(coloured, sample(true), {.color = true, .state_output = states::StateOutput::full});
  CHECK(coloured.str().find("\033[0;33m") != std::string::npos);  // pending in yellow
  CHECK(coloured.str().find("Pending: 1") != std::string::npos);
}

TEST_CASE("json report is Salt's return structure and parses") {
  std::ostringstream out;
  states::write_json(out, sample(true));
  auto doc = json::parse(out.str());
  REQUIRE(doc.ok());
  const json::Value* entry =
      json::find_path(*doc, {"local", "kstate_|-created_|-ConfigMap/default/created_|-object_present"});
  REQUIRE(entry != nullptr);
  CHECK(json::find(*entry, "result")->IsNull());
  CHECK(json::string_or(json::find(*entry, "__id__"), "") == "created");
  CHECK(json::find(*entry, "__run_num__")->GetInt() == 1);
  CHECK(json::string_or(json::find(*entry, "source"), "") == "dir/file.yaml:3:1");
  CHECK(json::find_path(*doc, {"summary", "failed"})->GetInt() == 1);
  CHECK(json::find_path(*doc, {"summary", "pending"})->GetInt() == 1);
}

TEST_CASE("junit report is well-formed XML with failures and pending changes visible") {
  std::ostringstream out;
  states::write_junit(out, sample(true));
  std::string xml = out.str();
  CHECK(xml.find("<failure message=\"Invalid: ConfigMap &quot;broken&quot; is invalid\"") != std::string::npos);
  CHECK(xml.find("<skipped message=\"change pending: created\"/>") != std::string::npos);
  CHECK(xml.find("+data: &lt;x&gt; &amp; &quot;y&quot;") != std::string::npos);
  if (std::system("python3 -c 'import xml' >/dev/null 2>&1") != 0) {
    WARN("python3 not available: XML parser check skipped");
    return;
  }
  auto path = std::filesystem::temp_directory_path() / ("kstate-junit-" + std::to_string(::getpid()) + ".xml");
  std::ofstream(path) << xml;
  std::string command =
      "python3 -c 'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); "
      "s=r.find(\"testsuite\"); sys.exit(0 if len(s.findall(\"testcase\"))==3 and "
      "s.get(\"failures\")==\"1\" and s.get(\"skipped\")==\"1\" else 1)' " +
      path.string();
  CHECK(std::system(command.c_str()) == 0);
  std::filesystem::remove(path);
}

TEST_CASE("the server's warnings are shown with their state, as kubectl prints them, in every format") {
  states::RunReport report;
  auto deprecated = make("old-api", true, "created", "+a: b\n");
  deprecated.warnings = {"policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+",
                         R"(unknown field "spec.colour" <&>)"};
  report.results.push_back(std::move(deprecated));
  report.results.push_back(make("quiet", true, "already good"));

  std::ostringstream text;
  states::write_text(text, report, {.state_output = states::StateOutput::full});
  CHECK(text.str().find("        Name: ConfigMap/default/old-api\n      Result: True\n     Comment: created\n"
                        "      Source: dir/file.yaml:3:1\n    Duration: 1.5 ms\n"
                        "     Warning: policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in "
                        "v1.25+\n     Warning: unknown field \"spec.colour\" <&>\n") != std::string::npos);
  CHECK(text.str().find("Warning:", text.str().find("ConfigMap/default/quiet")) == std::string::npos);
  std::ostringstream concise;
  states::write_text(concise, report);
  CHECK(
      concise.str().starts_with("ConfigMap/default/old-api created (dir/file.yaml:3:1)\n"
                                "    Warning: policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, "
                                "unavailable in v1.25+\n    Warning: unknown field \"spec.colour\" <&>\n\nSummary\n"));

  std::ostringstream json_out;
  states::write_json(json_out, report);
  auto doc = json::parse(json_out.str());
  REQUIRE(doc.ok());
  const json::Value* warnings =
      json::find_path(*doc, {"local", "kstate_|-old-api_|-ConfigMap/default/old-api_|-object_present", "warnings"});
  REQUIRE(warnings != nullptr);
  REQUIRE(warnings->IsArray());
  CHECK(warnings->Size() == 2);
  CHECK(json::find_path(*doc, {"local", "kstate_|-quiet_|-ConfigMap/default/quiet_|-object_present", "warnings"}) ==
        nullptr);

  std::ostringstream junit;
  states::write_junit(junit, report);
  CHECK(junit.str().find("<system-err>Warning: policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, "
                         "unavailable in v1.25+\nWarning: unknown field &quot;spec.colour&quot; &lt;&amp;&gt;"
                         "</system-err>") != std::string::npos);
}

TEST_CASE("a text report larger than its write buffer arrives whole and in order") {
  states::RunReport report;
  const std::string diff_line = "+data: " + std::string(1000, 'x') + "\n";
  for (int i = 0; i < 3000; ++i) {
    std::string id = "state-" + std::to_string(i);
    report.results.push_back(make(id.c_str(), true, "created", diff_line.c_str()));
  }
  std::ostringstream out;
  states::write_text(out, report, {.state_output = states::StateOutput::full});
  const std::string text = out.str();
  CHECK(text.size() > std::size_t{3} << 20);
  std::size_t at = 0;
  for (int i = 0; i < 3000; ++i) {
    at = text.find("          ID: state-" + std::to_string(i) + "\n", at);
    REQUIRE(at != std::string::npos);
  }
  CHECK(text.find("Succeeded: 3000 (changed=3000, unchanged=0)\nFailed: 0\n", at) != std::string::npos);
  CHECK(text.ends_with(" s\n"));
}

namespace {

// Keeps what is written, and the largest single write.
class RecordingBuffer : public std::stringbuf {
 public:
  std::streamsize largest_write = 0;

 protected:
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    largest_write = std::max(largest_write, count);
    return std::stringbuf::xsputn(text, count);
  }
};

}  // namespace

TEST_CASE("a large text report is written out as it is built, not held whole in memory") {
  // A 1,000-object first apply prints 1.1 MB: held whole, its buffer grew to 2 MB of
  // memory touched for the first time, up to 10 ms of a 70 ms run on a VM.
  states::RunReport report;
  const std::string diff_line = "+data: " + std::string(1000, 'x') + "\n";
  for (int i = 0; i < 1000; ++i) {
    std::string id = "state-" + std::to_string(i);
    report.results.push_back(make(id.c_str(), true, "created", diff_line.c_str()));
  }
  RecordingBuffer buffer;
  std::ostream out(&buffer);
  const states::TextOptions full{.state_output = states::StateOutput::full};
  states::write_text(out, report, full);
  CHECK(buffer.str().size() > std::size_t{1} << 20);
  CHECK(buffer.largest_write <= 80 * 1024);
  std::ostringstream whole;
  states::write_text(whole, report, full);
  CHECK(buffer.str() == whole.str());
}

TEST_CASE("what each --state-output shows of each kind of state") {
  using states::Detail;
  using states::StateOutput;
  const auto unchanged = make("unchanged", true, "already good");
  const auto changed = make("changed", true, "created", "+a: b\n");
  const auto pending = make("pending", std::nullopt, "would be created", "+a: b\n");
  const auto failed = make("failed", false, "Invalid");
  struct Row {
    StateOutput output;
    Detail unchanged, changed, pending, failed;
  };
  const Row rows[] = {
      {StateOutput::concise, Detail::hidden, Detail::line, Detail::line_and_diff, Detail::line},
      {StateOutput::terse, Detail::line, Detail::line, Detail::line, Detail::line},
      {StateOutput::mixed, Detail::line, Detail::line, Detail::line, Detail::block},
      {StateOutput::changes, Detail::line, Detail::block, Detail::block, Detail::block},
      {StateOutput::full, Detail::block, Detail::block, Detail::block, Detail::block},
  };
  for (const auto& row : rows) {
    INFO(states::to_string(row.output));
    CHECK(states::detail_of(row.output, unchanged) == row.unchanged);
    CHECK(states::detail_of(row.output, changed) == row.changed);
    CHECK(states::detail_of(row.output, pending) == row.pending);
    CHECK(states::detail_of(row.output, failed) == row.failed);
  }
  for (auto output : states::all_state_outputs) {
    CHECK(states::parse_state_output(states::to_string(output)) == output);
  }
  CHECK_FALSE(states::parse_state_output("verbose").has_value());
}

TEST_CASE("concise apply report: one line per object changed or failed, the unchanged counted only") {
  states::RunReport report;
  report.results.push_back(make("same", true, "already good"));
  report.results.push_back(make("new", true, "created", "+data: x\n"));
  auto adopted = make("theirs", true, "updated", "-a\n+b\n");
  adopted.change = states::Change::adopted;
  report.results.push_back(std::move(adopted));
  report.results.push_back(make("broken", false, "the object does not match the server's schema\n  * data.x: bad"));
  std::ostringstream out;
  states::write_text(out, report);
  CHECK(out.str() ==
        "ConfigMap/default/new created (dir/file.yaml:3:1)\n"
        "ConfigMap/default/theirs adopted (dir/file.yaml:3:1)\n"
        "ConfigMap/default/broken failed (dir/file.yaml:3:1): the object does not match the server's schema\n"
        "      * data.x: bad\n"
        "\nSummary\n-------------\nSucceeded: 3 (changed=2, unchanged=1)\nFailed: 1\n-------------\n"
        "Total states run: 4\nTotal run time: 0.000 s\n");
}

TEST_CASE("concise test report: each pending change with its diff, nothing for the unchanged") {
  states::RunReport report;
  report.test_mode = true;
  for (int i = 0; i < 1000; ++i) {
    report.results.push_back(make(("same-" + std::to_string(i)).c_str(), true, "already good"));
  }
  auto configured = make("changed", std::nullopt, "would be updated", "@@ -1 +1 @@\n-replicas: 1\n+replicas: 2\n");
  configured.change = states::Change::updated;
  report.results.push_back(std::move(configured));
  std::ostringstream out;
  states::write_text(out, report);
  const std::string text = out.str();
  CHECK(
      text.starts_with("ConfigMap/default/changed would be configured (dir/file.yaml:3:1)\n"
                       "    @@ -1 +1 @@\n    -replicas: 1\n    +replicas: 2\n\nSummary\n"));
  CHECK(text.find("Succeeded: 1001 (changed=1, unchanged=1000)\nPending: 1\n") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 13);  // the change's 4, a blank line, the summary's 8
}

TEST_CASE("errors outside states count as failures in the summary, as in the exit code") {
  states::RunReport report;
  report.results.push_back(make("fine", true, "already good"));
  report.errors.push_back("bad.yaml:3:1: mapping values are not allowed here");
  report.failed_files = 1;
  std::ostringstream out;
  states::write_text(out, report);
  CHECK(out.str().starts_with("Error: bad.yaml:3:1: mapping values are not allowed here\n"));
  CHECK(out.str().find("Failed: 1 (0 states, 1 error outside states)\n") != std::string::npos);
  CHECK(report.exit_code() == 2);
}

}  // namespace report_test
