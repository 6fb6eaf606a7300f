// Implementation of variables.hpp: the reference grammar (a pure text function), the
// walk over an object's string scalars that keeps their YAML typing and positions, and
// the sources of values (NAME=VALUE assignments, vars files).
#include "manifests/variables.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "core/credential_file.hpp"

namespace kstate::manifests {

namespace {

constexpr std::size_t kMaxErrorsPerValue = 10;
constexpr std::size_t kMaxVariablesFileBytes = 1024 * 1024;

bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

// The reference as shown in a message: up to the end of its line, at most 40 bytes.
std::string shown_reference(std::string_view text, std::size_t offset) {
  std::string_view rest = text.substr(offset);
  rest = rest.substr(0, std::min(rest.find('\n'), std::size_t{40}));
  return std::string(rest);
}

}  // namespace

bool is_variable_name(std::string_view name) {
  return !name.empty() && is_name_start(name.front()) && std::all_of(name.begin(), name.end(), is_name_char);
}

std::string SubstitutionProblem::message() const {
  const std::string keep = "; to keep the text write $" +
                           (problem == ReferenceProblem::unterminated ? "${" : reference) +
                           ", or annotate the object " + std::string(substitute_annotation) + ": disabled";
  switch (problem) {
    case ReferenceProblem::undefined:
      return "undefined variable " + name + " in " + reference + ": set it (vars, vars-from, --var, --vars-from) " +
             "or give a default, ${" + name + ":=value}" + keep;
    case ReferenceProblem::malformed:
      return reference + " is not a variable reference kstate substitutes (${NAME} or ${NAME:=default})" + keep;
    case ReferenceProblem::unterminated:
      return "unterminated " + reference + " (no closing })" + keep;
  }
  return reference;
}

SubstitutedText substitute_text(std::string_view text, const VariableMap& variables) {
  SubstitutedText result;
  result.text.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t dollar = text.find('$', at);
    if (dollar == std::string_view::npos) {
      result.text.append(text.substr(at));
      break;
    }
    result.text.append(text.substr(at, dollar - at));
    if (text.substr(dollar, 3) == "$${") {
      result.text += "${";  // the escape
      at = dollar + 3;
      continue;
    }
    if (text.substr(dollar, 2) != "${") {
      result.text += '$';
      at = dollar + 1;
      continue;
    }
    const std::size_t close = text.find('}', dollar + 2);
    if (close == std::string_view::npos) {
      result.problems.push_back({ReferenceProblem::unterminated, dollar, shown_reference(text, dollar), {}});
      result.text.append(text.substr(dollar));
      break;
    }
    const std::string_view inner = text.substr(dollar + 2, close - dollar - 2);
    const std::string_view reference = text.substr(dollar, close + 1 - dollar);
    at = close + 1;
    const std::size_t operator_at = inner.find(":=");
    const std::string_view name = inner.substr(0, operator_at);
    const bool has_default = operator_at != std::string_view::npos;
    const std::string_view fallback = has_default ? inner.substr(operator_at + 2) : std::string_view();
    // (a default holding "${" is a nested reference, which the grammar has not)
    if (!is_variable_name(name) || fallback.find("${") != std::string_view::npos) {
      result.problems.push_back({ReferenceProblem::malformed, dollar, std::string(reference), {}});
      continue;
    }
    const auto found = variables.find(name);
    if (found != variables.end() && !(has_default && found->second.empty())) {
      result.text += found->second;
    } else if (has_default) {
      result.text.append(fallback);
    } else if (found != variables.end()) {
      // defined and empty: ${NAME} is ""
    } else {
      result.problems.push_back({ReferenceProblem::undefined, dollar, std::string(reference), std::string(name)});
    }
  }
  return result;
}

namespace {

// Walks a value's string scalars. The position of a value is only looked up (a walk
// of the YAML tree from the object's root) for a string that holds a reference.
class Substituter {
 public:
  Substituter(json::Allocator& allocator, const YamlLocator& root, const VariableMap& variables)
      : allocator_(allocator), root_(root), variables_(variables) {}

  void walk(json::Value& value) {
    if (value.IsString()) {
      visit_string(value);
    } else if (value.IsObject()) {
      for (auto& member : value.GetObject()) {
        path_.push_back({std::string_view(member.name.GetString(), member.name.GetStringLength()), 0});
        walk(member.value);
        path_.pop_back();
      }
    } else if (value.IsArray()) {
      for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
        path_.push_back({{}, i + 1});
        walk(value[i]);
        path_.pop_back();
      }
    }
  }

  std::vector<VariableError> take_errors() {
    if (left_out_ > 0) {
      errors_.push_back({root_.position(), "and " + std::to_string(left_out_) + " more variable problem" +
                                               (left_out_ == 1 ? "" : "s") + " in this object, not shown"});
    }
    return std::move(errors_);
  }

 private:
  struct Step {
    std::string_view key;
    std::size_t item = 0;  // index + 1 for a list item, 0 for a mapping key
  };

  YamlLocator locate() const {
    YamlLocator here = root_;
    for (const Step& step : path_) {
      here = step.item > 0 ? here.item(step.item - 1) : here.child(step.key);
    }
    return here;
  }

  // Where the reference at `offset` of a scalar is: its own line inside a literal
  // block (`|`, a script), else the scalar's start (folding and escapes move text).
  static TextPosition position_of(const YamlLocator& here, const std::optional<ScalarSource>& source,
                                  std::size_t offset) {
    TextPosition at = here.position();
    if (source && source->style == ScalarStyle::literal && at.line > 0) {
      const std::string_view before = source->text.substr(0, std::min(offset, source->text.size()));
      at.line += 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
      at.column = 0;  // the block's indentation is not kept
    }
    return at;
  }

  void add_error(TextPosition at, std::string message) {
    if (errors_.size() < kMaxErrorsPerValue) {
      errors_.push_back({at, std::move(message)});
    } else {
      ++left_out_;
    }
  }

  void visit_string(json::Value& value) {
    const std::string_view text(value.GetString(), value.GetStringLength());
    if (text.find("${") == std::string_view::npos) {
      return;  // nothing to substitute (the escape holds "${" too)
    }
    SubstitutedText substituted = substitute_text(text, variables_);
    const YamlLocator here = locate();
    const std::optional<ScalarSource> source = here.scalar();
    if (!substituted.problems.empty()) {
      for (const SubstitutionProblem& problem : substituted.problems) {
        // One error per variable (or malformed reference), at its first use.
        const std::string key = problem.name.empty() ? problem.reference : problem.name;
        if (reported_.insert(key).second) {
          add_error(position_of(here, source, problem.offset), problem.message());
        }
      }
      return;
    }
    if (source && source->style == ScalarStyle::plain && !source->tagged) {
      // As if the value had been written in place: `replicas: ${REPLICAS}` is a number.
      json::Value typed;
      std::string error;
      if (!plain_scalar_value(substituted.text, typed, allocator_, error)) {
        add_error(here.position(), "after substitution, " + error);
        return;
      }
      value = std::move(typed);
      return;
    }
    value.SetString(substituted.text.data(), static_cast<rapidjson::SizeType>(substituted.text.size()), allocator_);
  }

  json::Allocator& allocator_;
  const YamlLocator& root_;
  const VariableMap& variables_;
  std::vector<Step> path_;
  std::vector<VariableError> errors_;
  std::set<std::string> reported_;
  std::size_t left_out_ = 0;
};

}  // namespace

std::vector<VariableError> substitute_variables(json::Value& value, json::Allocator& allocator, const YamlLocator& at,
                                                const VariableMap& variables) {
  Substituter substituter(allocator, at, variables);
  substituter.walk(value);
  return substituter.take_errors();
}

std::optional<std::string> add_assignment(std::string_view assignment, VariableMap& into) {
  const std::size_t equals = assignment.find('=');
  if (equals == std::string_view::npos) {
    return "expected NAME=VALUE, got \"" + std::string(assignment) + "\"";
  }
  const std::string_view name = assignment.substr(0, equals);
  if (!is_variable_name(name)) {
    return "\"" + std::string(name) + "\" is not a variable name (letters, digits and _, not starting with a digit)";
  }
  into[std::string(name)] = std::string(assignment.substr(equals + 1));
  return std::nullopt;
}

std::string VariablesFileError::to_string() const {
  return position.file.empty() ? message : position.to_string() + ": " + message;
}

std::vector<VariablesFileError> load_variables_file(const std::string& path, VariableMap& into) {
  std::vector<VariablesFileError> errors;
  auto fail = [&](TextPosition at, std::string message) {
    errors.push_back({{path, at.line, at.column}, std::move(message)});
  };
  auto text = read_bounded_file(path, "vars file", kMaxVariablesFileBytes, true);
  if (!text) {
    errors.push_back({{}, text.error().message});  // "cannot read vars file: PATH: why"
    return errors;
  }
  YamlStream stream = parse_yaml_documents(*text);
  for (const YamlError& error : stream.errors) {
    fail(error.position, error.message);
  }
  bool mapping_seen = false;
  for (const YamlDocument& document : stream.documents) {
    const json::Value& root = document.json;
    if (root.IsNull()) {
      continue;  // an empty file or document: no variables
    }
    if (!root.IsObject() || mapping_seen) {
      fail(document.start, "a vars file holds one mapping of NAME: value");
      continue;
    }
    mapping_seen = true;
    for (const auto& member : root.GetObject()) {
      const std::string_view name(member.name.GetString(), member.name.GetStringLength());
      const YamlLocator value_at = document.locator.child(name);
      if (!is_variable_name(name)) {
        fail(document.locator.key_position(name), "\"" + std::string(name) +
                                                      "\" is not a variable name (letters, digits and _, not "
                                                      "starting with a digit)");
        continue;
      }
      if (member.value.IsObject() || member.value.IsArray()) {
        fail(value_at.position(),
             std::string(name) + ": expected a single value, not a " + (member.value.IsObject() ? "mapping" : "list"));
        continue;
      }
      if (member.value.IsNull()) {
        fail(value_at.position(),
             std::string(name) + ": no value (write " + std::string(name) + ": \"\" for an empty one)");
        continue;
      }
      // The text as written: `1.10` is "1.10", not the number 1.1.
      const std::optional<ScalarSource> source = value_at.scalar();
      into[std::string(name)] =
          source ? std::string(source->text)
                 : (member.value.IsString() ? std::string(member.value.GetString(), member.value.GetStringLength())
                                            : json::dump(member.value));
    }
  }
  return errors;
}

}  // namespace kstate::manifests
