// Label and field selectors as kube-apiserver parses them from `labelSelector` and
// `fieldSelector` query parameters: equality (=, ==, !=), set-based (in, notin),
// existence (key, !key). Pure parsing and matching, no I/O.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

struct SelectorRequirement {
  enum class Op { equals, not_equals, in, not_in, exists, does_not_exist };
  std::string key;
  Op op = Op::equals;
  std::vector<std::string> values;
};

struct LabelSelector {
  std::vector<SelectorRequirement> requirements;
  bool matches(const json::Value& object) const;  // against its metadata.labels
  bool empty() const { return requirements.empty(); }
};

Result<LabelSelector> parse_label_selector(std::string_view text);

// Field selectors support metadata.name and metadata.namespace (as every kind does).
struct FieldSelector {
  std::vector<SelectorRequirement> requirements;
  bool matches(std::string_view name, std::string_view namespace_name) const;
  bool empty() const { return requirements.empty(); }
};

Result<FieldSelector> parse_field_selector(std::string_view text);

}  // namespace kstate::emulator
