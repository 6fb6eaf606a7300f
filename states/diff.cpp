// dtl-based unified diff of the normalised, masked YAML of two objects.
#include "states/diff.hpp"

#include <dtl/dtl.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "states/normalize.hpp"
#include "states/yaml_render.hpp"

namespace kstate::states {
namespace {

// The lines of `text` as std::getline reads them: a last line without '\n' counts,
// an empty one after the final '\n' does not.
template <typename Each>
void for_each_line(std::string_view text, Each each) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    each(text.substr(start, end - start));
    start = end + 1;
  }
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  for_each_line(text, [&lines](std::string_view line) { lines.emplace_back(line); });
  return lines;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_label,
                         const std::string& after_label) {
  if (before == after) {
    return {};
  }
  if (before.empty()) {
    // A create: every line is added. Written directly, in dtl's format, because the
    // edit-distance machinery was a tenth of a 1,000-object cold apply's CPU time.
    std::size_t lines = 0;
    for_each_line(after, [&lines](std::string_view) { ++lines; });
    std::string out =
        "--- " + before_label + "\n+++ " + after_label + "\n@@ -1,0 +1," + std::to_string(lines) + " @@\n";
    out.reserve(out.size() + after.size() + 2 * lines);
    for_each_line(after, [&out](std::string_view line) {
      out += '+';
      out += line;
      out += '\n';
    });
    return out;
  }
  std::vector<std::string> a = split_lines(before);
  std::vector<std::string> b = split_lines(after);
  // Not dtl's onHuge(): all it does is reserve room for 2 million edit coordinates
  // (48 MB) before each diff; the same bound on the search applies without it.
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.compose();
  diff.composeUnifiedHunks();
  std::ostringstream out;
  out << "--- " << before_label << "\n+++ " << after_label << "\n";
  diff.printUnifiedFormat(out);
  return out.str();
}

std::string object_diff(const json::Value& live, const json::Value& desired, const std::string& object_name) {
  json::Document before = live.IsNull() ? json::Document() : normalize_for_diff(live);
  json::Document after = desired.IsNull() ? json::Document() : normalize_for_diff(desired);
  mask_secrets(before, after, before.GetAllocator(), after.GetAllocator());
  std::string before_text = before.IsNull() ? std::string() : to_yaml(before);
  std::string after_text = after.IsNull() ? std::string() : to_yaml(after);
  return unified_diff(before_text, after_text, "live/" + object_name, "desired/" + object_name);
}

}  // namespace kstate::states
