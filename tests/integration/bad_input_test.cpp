// The bad input corpus (#10), run through the real `kstate apply` against the
// emulator: broken manifests (malformed YAML, alias and depth bombs, a 50 MB file, a
// 4 MB document, invalid UTF-8, binary data, unknown kinds, missing namespaces,
// duplicate objects across files) and broken kubeconfigs. Each case must give one
// clear error naming the file (and line:column or state ID where there is one), exit
// with the documented code (2) without crashing, and, for manifests, leave the good
// files of the same directory applied. Each case prints its time.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <iostream>
#include <regex>
#include <sstream>

#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace bad_input_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace fs = std::filesystem;

namespace {

struct Timed {
  ProcessResult result;
  long long milliseconds = 0;
};

Timed run_kstate(const std::vector<std::string>& args) {
  std::vector<std::string> argv{KSTATE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  Timed timed{kstate::testing::run_process(argv), 0};
  timed.milliseconds =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  UNSCOPED_INFO("kstate exit " << timed.result.exit_code << "\nstdout:\n"
                               << timed.result.out << "\nstderr:\n"
                               << timed.result.err);
  return timed;
}

// Lines of text that contain needle.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> found;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (line.find(needle) != std::string::npos) {
      found.push_back(line);
    }
  }
  return found;
}

std::string config_map(const std::string& name, const std::string& namespace_name = "default") {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + namespace_name +
         "\ndata:\n  colour: blue\n";
}

std::string alias_bomb() {
  // Ten levels of ten aliases each: 10^10 nodes if expanded.
  std::string text = config_map("laughs") + "  a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string previous = "a";
  for (std::string level : {"b", "c", "d", "e", "f", "g", "h", "i", "j"}) {
    text += "  " + level + ": &" + level + " [";
    for (int i = 0; i < 10; ++i) {
      text += (i == 0 ? "*" : ", *") + previous;
    }
    text += "]\n";
    previous = level;
  }
  return text;
}

std::string big_config_map(const std::string& name, std::size_t bytes) {
  std::string text = config_map(name);
  text.reserve(bytes + 200);
  std::string value(90, 'x');
  for (int i = 0; text.size() < bytes; ++i) {
    text += "  key" + std::to_string(i) + ": " + value + "\n";
  }
  return text;
}

struct ManifestCase {
  std::string name;
  std::string file;  // the bad file's name
  std::function<std::string()> content;
  // What the one error line says after "<path>" (a regex): ":line:column: message" for
  // load errors, or the state's comment for apply-time failures.
  std::string error;
  bool load_error = true;  // false: the state loads and fails when applied
};

}  // namespace

TEST_CASE("bad manifests: one clear error each, exit 2 without a crash, good files still converge") {
  Emulator emulator;
  TempDir work("kstate-bad-input");
  const std::vector<ManifestCase> cases = {
      {"malformed YAML", "10-malformed.yaml",
       [] { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\ndata: {a: [b}\n"; },
       R"(:5:13: YAML syntax error: did not find expected ',' or '\]')"},
      {"tab indentation", "10-tabs.yaml", [] { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: t\n"; },
       R"(:4:1: YAML syntax error: found character that cannot start any token)"},
      {"truncated JSON", "10-truncated.json",
       [] { return R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j")"; },
       R"(:\d+:\d+: YAML syntax error: did not find expected ',' or '\}')"},
      {"alias bomb", "10-laughs.yaml", alias_bomb,
       R"(:\d+:\d+: aliases expand to more than 100000 nodes \(max_alias_expanded_nodes\))"},
      {"depth bomb", "10-deep.yaml",
       [] { return config_map("deep") + "  a: " + std::string(5000, '[') + std::string(5000, ']') + "\n"; },
       R"(:\d+:\d+: nesting is deeper than the limit of 256 levels \(max_nesting_depth\))"},
      {"50 MB file", "10-huge.yaml", [] { return big_config_map("huge", 50 * 1000 * 1000); },
       R"(: file is \d+ bytes, larger than the limit of 33554432 bytes \(max_file_bytes\))"},
      {"4 MB document", "10-big-document.yaml", [] { return big_config_map("big", 4 * 1000 * 1000); },
       R"(:\d+:\d+: document is larger than the limit of 3145728 bytes \(max_document_bytes\))"},
      {"invalid UTF-8", "10-latin1.yaml", [] { return config_map("latin1") + "  city: Z\xfcrich\n"; },
       R"(:\d+:\d+: invalid UTF-8 byte \(manifests must be UTF-8 text\))"},
      {"binary data", "10-binary.yaml",
       [] {
         return std::string(
             "\x7f"
             "ELF\x02\x01\x01\0\0garbage",
             16);
       },
       R"(:1:1: control characters are not allowed in YAML)"},
      {"missing name", "10-no-name.yaml",
       [] { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: default}\n"; },
       R"(:3:11: ConfigMap/default/: metadata.name is required)"},
      {"duplicate object across files", "10-duplicate.yaml",
       [] { return config_map("good-first").replace(config_map("good-first").find("blue"), 4, "red"); },
       R"(:1:1: ConfigMap/default/good-first: duplicate state ID \(first declared at .*/00-good\.yaml:1:1\))"},
      {"unknown kind", "10-unknown-kind.yaml",
       [] { return "apiVersion: v1\nkind: Frobnicator\nmetadata: {name: x, namespace: default}\n"; },
       R"(the server does not offer kind "Frobnicator" in version "v1")", false},
      {"missing namespace", "10-missing-namespace.yaml", [] { return config_map("orphan", "nonexistent"); },
       R"(namespaces "nonexistent" not found)", false},
  };
  // One emulator for all cases (a loop, not sections: sections would restart it).
  for (const auto& bad : cases) {
    INFO("case: " << bad.name);
    {
      // Good files sort before and after the bad one; each case has its own objects.
      fs::path dir = work.path() / std::to_string(&bad - cases.data());
      std::string before = "good-first";
      std::string after = "good-last-" + std::to_string(&bad - cases.data());
      write_file(dir / "00-good.yaml", config_map(before));
      write_file(dir / "99-good.yaml", config_map(after));
      write_file(dir / bad.file, bad.content());
      const std::string bad_path = (dir / bad.file).string();

      auto run = run_kstate({"apply", dir.string(), "--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir",
                             (work.path() / "cache").string()});
      std::cout << "bad input: " << bad.name << ": exit " << run.result.exit_code << " in " << run.milliseconds
                << " ms\n";
      CHECK_FALSE(run.result.timed_out);
      CHECK(run.result.exit_code == 2);  // documented: any state or file failed; 128+N would be a signal
      // Exactly one line of the report and one line of the log name the bad file.
      auto report_lines = lines_with(run.result.out, bad_path);
      auto log_lines = lines_with(run.result.err, bad_path);
      CHECK(report_lines.size() == 1);
      CHECK(log_lines.size() == 1);
      if (report_lines.empty()) {
        continue;
      }
      if (bad.load_error) {
        CHECK(std::regex_search(report_lines[0], std::regex("^Error: " + bad_path + bad.error)));
        CHECK(std::regex_search(log_lines.empty() ? "" : log_lines[0], std::regex(bad_path + bad.error)));
      } else {
        // The state's line names the file, and its comment says why.
        CHECK(std::regex_search(report_lines[0], std::regex(" failed \\(" + bad_path + ":1:1\\): .*" + bad.error)));
        CHECK(std::regex_search(log_lines.empty() ? "" : log_lines[0], std::regex(bad.error)));
      }
      // The good files around it converged.
      for (const auto& name : {before, after}) {
        INFO(name);
        CHECK(emulator.request("GET", "/api/v1/namespaces/default/configmaps/" + name).status == 200);
      }
    }
  }
}

TEST_CASE("broken kubeconfigs: one line on stderr naming the file, exit 2, nothing sent") {
  Emulator emulator;
  TempDir work("kstate-bad-kubeconfig");
  write_file(work.path() / "manifests" / "app.yaml", config_map("never-applied"));
  const std::string good = kstate::testing::read_file(emulator.kubeconfig_path());
  auto replace = [&](const std::string& pattern, const std::string& with) {
    return std::regex_replace(good, std::regex(pattern), with);
  };
  struct KubeconfigCase {
    std::string name;
    std::string file;     // "" : the file does not exist
    std::string content;  // written to `file`
    std::vector<std::string> flags;
    std::string error;  // a regex on the one stderr line; <file> is replaced by the path
  };
  const std::vector<KubeconfigCase> cases = {
      {"missing file", "absent.yaml", "", {}, "kubeconfig <file> \\(--kubeconfig\\) does not exist"},
      {"not YAML", "broken.yaml", "clusters: [\n  - name: x\n", {}, "kubeconfig <file> is not valid YAML: .*line \\d+"},
      {"unknown context", "config.yaml", good, {"--context", "nope"}, "context \"nope\" does not exist in <file>"},
      {"missing CA file",
       "missing-ca.yaml",
       replace("certificate-authority-data: .*", "certificate-authority: no-such-ca.crt"),
       {},
       "cannot read certificate-authority of cluster \"kstate-emulator\" \\(kubeconfig <file>\\): .*/no-such-ca.crt: "
       "No such file or directory"},
      {"missing client certificate file",
       "missing-cert.yaml",
       replace("client-certificate-data: .*", "client-certificate: no-such-cert.crt"),
       {"--context", "cert-admin"},
       "cannot read client-certificate of user \"cert-admin\" \\(kubeconfig <file>\\): .*/no-such-cert.crt"},
      {"CA and insecure together",
       "insecure.yaml",
       replace("(certificate-authority-data: .*)", "$1\n    insecure-skip-tls-verify: true"),
       {},
       "cluster \"kstate-emulator\" \\(kubeconfig <file>\\): specifying a root certificates file with the insecure "
       "flag is not allowed"},
      // kubeconfig_fuzz found this one: yaml-cpp threw past every handler and kstate aborted.
      {"context that is not a mapping",
       "scalar-context.yaml",
       replace("context:\n    cluster: kstate-emulator\n    user: admin\n    namespace: default", "context: admin"),
       {},
       "kubeconfig <file>: context \"kstate-emulator\" is not a mapping"},
  };
  for (const auto& bad : cases) {
    INFO("case: " << bad.name);
    {
      fs::path path = work.path() / bad.file;
      if (bad.name != "missing file") {
        write_file(path, bad.content);
      }
      std::vector<std::string> args{"apply",       (work.path() / "manifests").string(), "--kubeconfig", path.string(),
                                    "--cache-dir", (work.path() / "cache").string(),     "-v",           "trace"};
      args.insert(args.end(), bad.flags.begin(), bad.flags.end());
      emulator.reset_request_log();
      auto run = run_kstate(args);
      std::cout << "bad kubeconfig: " << bad.name << ": exit " << run.result.exit_code << " in " << run.milliseconds
                << " ms\n";
      CHECK(run.result.exit_code == 2);
      CHECK(run.result.out.empty());
      auto lines = lines_with(run.result.err, "");
      CHECK(lines.size() == 1);
      if (lines.empty()) {
        continue;
      }
      std::string expected = std::regex_replace(bad.error, std::regex("<file>"), path.string());
      CHECK(std::regex_search(lines[0], std::regex("^kstate apply: " + expected)));
      CHECK(emulator.count_requests("GET", "/") + emulator.count_requests("POST", "/") == 0);
    }
  }
  CHECK(emulator.request("GET", "/api/v1/namespaces/default/configmaps/never-applied").status == 404);
}

}  // namespace bad_input_test
