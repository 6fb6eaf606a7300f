// Names of state functions and strategies, and the rendering of source positions.
#include "manifests/state.hpp"

namespace kstate::manifests {

const char* to_string(Function function) {
  switch (function) {
    case Function::object_present:
      return "object_present";
    case Function::object_updated:
      return "object_updated";
    case Function::object_absent:
      return "object_absent";
  }
  return "object_present";
}

std::optional<Function> parse_function(std::string_view name) {
  for (std::string_view prefix : {"metalk8s_kubernetes.", "kubernetes."}) {
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  if (name == "object_present")
    return Function::object_present;
  if (name == "object_updated")
    return Function::object_updated;
  if (name == "object_absent")
    return Function::object_absent;
  return std::nullopt;
}

const char* to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::apply:
      return "apply";
    case Strategy::replace:
      return "replace";
    case Strategy::create_only:
      return "create-only";
  }
  return "apply";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  if (name == "apply")
    return Strategy::apply;
  if (name == "replace")
    return Strategy::replace;
  if (name == "create-only")
    return Strategy::create_only;
  return std::nullopt;
}

std::string SourcePosition::to_string() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) {
      out += ":" + std::to_string(column);
    }
  }
  return out;
}

}  // namespace kstate::manifests
