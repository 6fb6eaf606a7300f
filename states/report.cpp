// Text, JSON and JUnit renderings of a RunReport.
#include "states/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace kstate::states {
namespace {

const char* const green = "\033[0;32m";
const char* const yellow = "\033[0;33m";
const char* const red = "\033[0;31m";
const char* const cyan = "\033[0;36m";
const char* const reset = "\033[0m";

std::string diff_of(const StateResult& result) {
  return std::string(json::string_or(json::find(result.changes, "diff"), ""));
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += "?";
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

// What kubectl apply would print for the change: "configured" for an update.
const char* kubectl_verb(Change change) {
  switch (change) {
    case Change::none:
      return "unchanged";
    case Change::updated:
    case Change::applied:
      return "configured";
    case Change::created:
    case Change::adopted:
    case Change::recreated:
    case Change::deleted:
    case Change::pruned:
      return to_string(change);
  }
  return "changed";
}

std::string seconds(double ms) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << ms / 1000.0;
  return s.str();
}

}  // namespace

int RunReport::succeeded() const {
  int n = 0;
  for (const auto& r : results) {
    n += (!r.result.has_value() || *r.result) ? 1 : 0;
  }
  return n;
}

int RunReport::failed() const {
  return static_cast<int>(results.size()) - succeeded();
}

int RunReport::failures() const {
  return failed() + static_cast<int>(errors.size());
}

int RunReport::unchanged() const {
  return succeeded() - changed();
}

int RunReport::changed() const {
  int n = 0;
  for (const auto& r : results) {
    n += ((!r.result.has_value() || *r.result) && r.changed()) ? 1 : 0;
  }
  return n;
}

int RunReport::pending() const {
  int n = 0;
  for (const auto& r : results) {
    n += r.result.has_value() ? 0 : 1;
  }
  return n;
}

int RunReport::exit_code() const {
  if (failures() > 0 || failed_files > 0) {
    return 2;
  }
  if (test_mode && (pending() > 0 || changed() > 0)) {
    return 1;
  }
  return 0;
}

std::optional<StateOutput> parse_state_output(std::string_view name) {
  for (StateOutput output : all_state_outputs) {
    if (name == to_string(output)) {
      return output;
    }
  }
  return std::nullopt;
}

std::string_view to_string(StateOutput output) {
  switch (output) {
    case StateOutput::concise:
      return "concise";
    case StateOutput::terse:
      return "terse";
    case StateOutput::mixed:
      return "mixed";
    case StateOutput::changes:
      return "changes";
    case StateOutput::full:
      return "full";
  }
  return "concise";
}

Detail detail_of(StateOutput output, const StateResult& result) {
  const bool failed = result.result.has_value() && !*result.result;
  const bool pending = !result.result.has_value();
  const bool changed = failed ? false : pending || result.changed();
  switch (output) {
    case StateOutput::concise:
      if (failed) {
        return Detail::line;
      }
      if (pending) {
        return Detail::line_and_diff;  // what `kstate test` is for: what would change
      }
      if (changed) {
        return Detail::line;
      }
      // Unchanged: only the server's warnings (a deprecated API) make it worth a line.
      return result.warnings.empty() ? Detail::hidden : Detail::line;
    case StateOutput::terse:
      return Detail::line;
    case StateOutput::mixed:
      return failed ? Detail::block : Detail::line;
    case StateOutput::changes:
      return failed || changed ? Detail::block : Detail::line;
    case StateOutput::full:
      return Detail::block;
  }
  return Detail::block;
}

void write_text(std::ostream& out, const RunReport& report, const TextOptions& options) {
  // Built in a string written out every 64 KB: the report of a 1,000-object first apply
  // is some 20,000 lines (1.1 MB), and a stream insertion per piece (each a locked stdio
  // write when `out` is std::cout) took ~3 ms of the run's 65; one string for all of it
  // grew to 2 MB of memory touched for the first time, up to 10 ms where that memory is
  // slow to fault in (bench/RESULTS.md).
  constexpr std::size_t flush_at = std::size_t{64} << 10;
  std::string text;
  text.reserve(2 * flush_at);
  auto open = [&](const char* colour) {
    if (options.color) {
      text += colour;
    }
  };
  auto close = [&] {
    if (options.color) {
      text += reset;
    }
  };
  auto fixed = [&](double value, int decimals) {
    char number[64];
    std::snprintf(number, sizeof number, "%.*f", decimals, value);
    text += number;
  };
  // A diff, one output line per diff line, each after `indent`; a final newline ends
  // the last line, it adds none.
  auto write_diff = [&](std::string_view diff, std::string_view indent) {
    for (std::size_t at = 0; at < diff.size();) {
      std::size_t end = diff.find('\n', at);
      if (end == std::string_view::npos) {
        end = diff.size();
      }
      const std::string_view line = diff.substr(at, end - at);
      at = end + 1;
      const bool added = line.starts_with('+') && !line.starts_with("+++");
      const bool removed = line.starts_with('-') && !line.starts_with("---");
      text += indent;
      open(added ? green : removed ? red : "");
      text += line;
      if (added || removed) {
        close();
      }
      text += '\n';
    }
  };
  // kubectl apply's line: "Deployment/web/api configured (apps.yaml:12)"; a failure's
  // comment follows (its first line on the line, the others indented below it).
  auto write_line = [&](const StateResult& r) {
    const bool failed = r.result.has_value() && !*r.result;
    const bool pending = !r.result.has_value();
    open(failed ? red : pending ? yellow : r.changed() ? cyan : green);
    text += r.name;
    if (failed) {
      text += " failed";
    } else if (pending && r.change == Change::none) {
      text += " pending";  // e.g. being deleted: the comment says what happens
    } else {
      text += pending ? " would be " : " ";
      text += kubectl_verb(r.change);
    }
    text += " (";
    text += r.source.to_string();
    text += ')';
    if (failed || (pending && r.change == Change::none)) {
      const std::string_view comment = r.comment;
      const std::size_t first_end = std::min(comment.find('\n'), comment.size());
      text += ": ";
      text += comment.substr(0, first_end);
      close();
      text += '\n';
      if (first_end < comment.size()) {
        write_diff(comment.substr(first_end + 1), "    ");  // (no +/- lines: plain)
      }
    } else {
      close();
      text += '\n';
    }
    for (const auto& warning : r.warnings) {
      text += "    Warning: ";
      text += warning;
      text += '\n';
    }
  };
  auto write_block = [&](const StateResult& r) {
    open(!r.result.has_value() ? yellow : (*r.result ? (r.changed() ? cyan : green) : red));
    text += "----------\n          ID: ";
    text += r.id;
    text += "\n    Function: ";
    text += manifests::to_string(r.function);
    text += "\n        Name: ";
    text += r.name;
    text += "\n      Result: ";
    text += r.result.has_value() ? (*r.result ? "True" : "False") : "None";
    text += "\n     Comment: ";
    text += r.comment;
    text += "\n      Source: ";
    text += r.source.to_string();
    text += "\n    Duration: ";
    fixed(r.duration_ms, 1);
    text += " ms\n";
    for (const auto& warning : r.warnings) {
      text += "     Warning: ";
      text += warning;
      text += '\n';
    }
    close();
    const std::string_view diff = json::string_or(json::find(r.changes, "diff"), "");
    if (!diff.empty()) {
      text += "     Changes:\n";
      write_diff(diff, "              ");
    } else if (r.changed()) {
      text += "     Changes: ";
      text += json::dump(r.changes);
      text += '\n';
    }
  };
  for (const auto& r : report.results) {
    switch (detail_of(options.state_output, r)) {
      case Detail::hidden:
        continue;
      case Detail::line:
        write_line(r);
        break;
      case Detail::line_and_diff:
        write_line(r);
        write_diff(json::string_or(json::find(r.changes, "diff"), ""), "    ");
        break;
      case Detail::block:
        write_block(r);
        break;
    }
    if (text.size() > flush_at) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  for (const auto& e : report.errors) {
    open(red);
    text += "Error: ";
    text += e;
    close();
    text += '\n';
  }
  for (const auto& note : report.notes) {
    open(yellow);
    text += "Note: ";
    text += note;
    close();
    text += '\n';
  }
  text += "\nSummary\n-------------\n";
  open(green);
  text += "Succeeded: " + std::to_string(report.succeeded());
  close();
  text += " (changed=";
  open(cyan);
  text += std::to_string(report.changed());
  close();
  text += ", unchanged=" + std::to_string(report.unchanged()) + ")\n";
  if (report.test_mode) {
    open(yellow);
    text += "Pending: " + std::to_string(report.pending());
    close();
    text += '\n';
  }
  open(report.failures() > 0 ? red : green);
  text += "Failed: " + std::to_string(report.failures());
  close();
  if (!report.errors.empty()) {
    // Load errors (a file that did not parse) fail the run as a failed state does.
    text += " (" + std::to_string(report.failed()) + " state" + (report.failed() == 1 ? "" : "s") + ", " +
            std::to_string(report.errors.size()) + " error" + (report.errors.size() == 1 ? "" : "s") +
            " outside states)";
  }
  text += "\n-------------\nTotal states run: " + std::to_string(report.results.size()) + "\nTotal run time: ";
  fixed(report.total_ms / 1000.0, 3);
  text += " s\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

void write_json(std::ostream& out, const RunReport& report) {
  // Salt's return structure: {"local": {"<module>_|-<id>_|-<name>_|-<function>": {...}}}
  // with Salt's own keys (__id__, __run_num__, __sls__, duration) next to kstate's.
  json::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  json::Value local(rapidjson::kObjectType);
  int run_num = 0;
  for (const auto& r : report.results) {
    json::Document entry = to_json(r);
    json::Value value;
    value.CopyFrom(entry, a);
    json::set_string(value, "__id__", r.id, a);
    json::set(value, "__run_num__", json::Value(run_num++), a);
    json::set_string(value, "__sls__", r.source.file, a);
    json::set(value, "duration", json::Value(r.duration_ms), a);
    std::string key = std::string("kstate_|-") + r.id + "_|-" + r.name + "_|-" + manifests::to_string(r.function);
    local.AddMember(json::make_string(key, a), value, a);
  }
  doc.AddMember("local", local, a);
  json::Value summary(rapidjson::kObjectType);
  summary.AddMember("succeeded", report.succeeded(), a);
  summary.AddMember("changed", report.changed(), a);
  summary.AddMember("failed", report.failed(), a);
  summary.AddMember("pending", report.pending(), a);
  summary.AddMember("test", report.test_mode, a);
  summary.AddMember("duration_ms", report.total_ms, a);
  json::Value errors(rapidjson::kArrayType);
  for (const auto& e : report.errors) {
    errors.PushBack(json::make_string(e, a), a);
  }
  summary.AddMember("errors", errors, a);
  json::Value notes(rapidjson::kArrayType);
  for (const auto& note : report.notes) {
    notes.PushBack(json::make_string(note, a), a);
  }
  summary.AddMember("notes", notes, a);
  doc.AddMember("summary", summary, a);
  out << json::dump_pretty(doc) << "\n";
}

void write_junit(std::ostream& out, const RunReport& report) {
  int errors = static_cast<int>(report.errors.size());
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"kstate\" tests=\"" << report.results.size() + report.errors.size() << "\" failures=\""
      << report.failed() << "\" errors=\"" << errors << "\" skipped=\"" << report.pending() << "\" time=\""
      << seconds(report.total_ms) << "\">\n"
      << "  <testsuite name=\"" << (report.test_mode ? "kstate test" : "kstate apply") << "\" tests=\""
      << report.results.size() + report.errors.size() << "\" failures=\"" << report.failed() << "\" errors=\"" << errors
      << "\" skipped=\"" << report.pending() << "\" time=\"" << seconds(report.total_ms) << "\">\n";
  for (const auto& r : report.results) {
    out << "    <testcase classname=\"" << xml_escape(r.source.file) << "\" name=\"" << xml_escape(r.id) << "\" time=\""
        << seconds(r.duration_ms) << "\">\n";
    if (r.change != Change::none) {  // what it did (or would do), as counted: created, adopted, ...
      out << "      <properties><property name=\"change\" value=\"" << to_string(r.change) << "\"/></properties>\n";
    }
    std::string diff = diff_of(r);
    if (r.result.has_value() && !*r.result) {
      out << "      <failure message=\"" << xml_escape(r.comment) << "\" type=\"StateFailed\">"
          << xml_escape(r.source.to_string() + ": " + r.id + ": " + r.comment) << "</failure>\n";
    } else if (!r.result.has_value()) {
      // A pending change in test mode: visible in CI as skipped, with the diff.
      out << "      <skipped message=\"" << xml_escape("change pending: " + r.comment) << "\"/>\n";
    }
    if (!diff.empty() || !r.comment.empty()) {
      out << "      <system-out>" << xml_escape(r.comment + (diff.empty() ? "" : "\n" + diff)) << "</system-out>\n";
    }
    if (!r.warnings.empty()) {
      std::string warnings;
      for (const auto& warning : r.warnings) {
        warnings += (warnings.empty() ? "Warning: " : "\nWarning: ") + warning;
      }
      out << "      <system-err>" << xml_escape(warnings) << "</system-err>\n";
    }
    out << "    </testcase>\n";
  }
  int n = 0;
  for (const auto& e : report.errors) {
    out << "    <testcase classname=\"kstate\" name=\"load-error-" << ++n << "\" time=\"0.000\">\n"
        << "      <error message=\"" << xml_escape(e) << "\" type=\"LoadError\"/>\n"
        << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

bool want_color(int file_descriptor) {
  return isatty(file_descriptor) != 0 && std::getenv("NO_COLOR") == nullptr;
}

}  // namespace kstate::states
