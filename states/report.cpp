// Text, JSON and JUnit renderings of a RunReport.
#include "states/report.hpp"

#include <unistd.h>

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
  if (failed() > 0 || !errors.empty() || failed_files > 0) {
    return 2;
  }
  if (test_mode && (pending() > 0 || changed() > 0)) {
    return 1;
  }
  return 0;
}

void write_text(std::ostream& out, const RunReport& report, const TextOptions& options) {
  auto paint = [&](const char* colour, const std::string& text) {
    return options.color ? std::string(colour) + text + reset : text;
  };
  for (const auto& r : report.results) {
    bool ok = !r.result.has_value() || *r.result;
    if (ok && !r.changed() && !options.show_unchanged) {
      continue;
    }
    const char* colour = !r.result.has_value() ? yellow : (*r.result ? (r.changed() ? cyan : green) : red);
    std::ostringstream header;
    header << "----------\n"
           << "          ID: " << r.id << "\n"
           << "    Function: " << manifests::to_string(r.function) << "\n"
           << "        Name: " << r.name << "\n"
           << "      Result: " << (r.result.has_value() ? (*r.result ? "True" : "False") : "None") << "\n"
           << "     Comment: " << r.comment << "\n"
           << "      Source: " << r.source.to_string() << "\n"
           << "    Duration: " << std::fixed << std::setprecision(1) << r.duration_ms << " ms\n";
    out << paint(colour, header.str());
    std::string diff = diff_of(r);
    if (!diff.empty()) {
      out << "     Changes:\n";
      std::istringstream lines(diff);
      std::string line;
      while (std::getline(lines, line)) {
        bool added = line.rfind('+', 0) == 0 && line.rfind("+++", 0) != 0;
        bool removed = line.rfind('-', 0) == 0 && line.rfind("---", 0) != 0;
        out << "              " << (added ? paint(green, line) : removed ? paint(red, line) : line) << "\n";
      }
    } else if (r.changed()) {
      out << "     Changes: " << json::dump(r.changes) << "\n";
    }
  }
  for (const auto& e : report.errors) {
    out << paint(red, "Error: " + e) << "\n";
  }
  for (const auto& note : report.notes) {
    out << paint(yellow, "Note: " + note) << "\n";
  }
  out << "\nSummary\n-------------\n";
  out << paint(green, "Succeeded: " + std::to_string(report.succeeded()))
      << " (changed=" << paint(cyan, std::to_string(report.changed())) << ")\n";
  if (report.test_mode) {
    out << paint(yellow, "Pending: " + std::to_string(report.pending())) << "\n";
  }
  out << paint(report.failed() > 0 ? red : green, "Failed: " + std::to_string(report.failed())) << "\n";
  out << "-------------\n"
      << "Total states run: " << report.results.size() << "\n"
      << "Total run time: " << std::fixed << std::setprecision(3) << report.total_ms / 1000.0 << " s\n";
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
