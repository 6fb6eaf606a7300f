// Parsing and matching of label/field selectors (see selectors.hpp).
#include "tests/emulator/selectors.hpp"

#include <algorithm>
#include <optional>

namespace kstate::emulator {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  return text;
}

// Splits on commas that are not inside parentheses ("a in (x,y),b=c").
std::vector<std::string_view> split_terms(std::string_view text) {
  std::vector<std::string_view> terms;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      auto term = trim(text.substr(start, i - start));
      if (!term.empty()) {
        terms.push_back(term);
      }
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return terms;
}

Error invalid_selector(std::string_view text, std::string_view why) {
  Error error(ErrorKind::invalid,
              "unable to parse requirement: " + std::string(why) + ": \"" + std::string(text) + "\"");
  return error;
}

bool valid_label_key(std::string_view key) {
  if (key.empty() || key.size() > 316) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' || c == '/';
  });
}

Result<SelectorRequirement> parse_term(std::string_view term, bool set_based_allowed) {
  SelectorRequirement requirement;
  if (set_based_allowed) {
    // Set-based: "key in (a,b)" / "key notin (a,b)".
    for (auto [word, op] : {std::pair{std::string_view(" notin "), SelectorRequirement::Op::not_in},
                            std::pair{std::string_view(" in "), SelectorRequirement::Op::in}}) {
      auto at = term.find(word);
      if (at == std::string_view::npos) {
        continue;
      }
      requirement.key = std::string(trim(term.substr(0, at)));
      auto rest = trim(term.substr(at + word.size()));
      if (!rest.empty() && rest.front() == '(' && rest.find(')') == std::string_view::npos) {
        // The values run into the end of the selector, as kube-apiserver's parser words it (recording 48).
        return Error(ErrorKind::invalid, "unable to parse requirement: found '', expected: ',' or ')'");
      }
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
        return invalid_selector(term, "expected a parenthesised set of values");
      }
      rest = rest.substr(1, rest.size() - 2);
      size_t start = 0;
      for (size_t i = 0; i <= rest.size(); ++i) {
        if (i == rest.size() || rest[i] == ',') {
          auto value = trim(rest.substr(start, i - start));
          requirement.values.emplace_back(value);
          start = i + 1;
        }
      }
      requirement.op = op;
      if (!valid_label_key(requirement.key)) {
        return invalid_selector(term, "invalid key");
      }
      return requirement;
    }
  }
  for (auto [symbol, op] : {std::pair{std::string_view("!="), SelectorRequirement::Op::not_equals},
                            std::pair{std::string_view("=="), SelectorRequirement::Op::equals},
                            std::pair{std::string_view("="), SelectorRequirement::Op::equals}}) {
    auto at = term.find(symbol);
    if (at == std::string_view::npos) {
      continue;
    }
    requirement.key = std::string(trim(term.substr(0, at)));
    requirement.values.emplace_back(trim(term.substr(at + symbol.size())));
    requirement.op = op;
    if (!valid_label_key(requirement.key)) {
      return invalid_selector(term, "invalid key");
    }
    return requirement;
  }
  if (!set_based_allowed) {
    return invalid_selector(term, "invalid selector");
  }
  if (term.front() == '!') {
    requirement.key = std::string(trim(term.substr(1)));
    requirement.op = SelectorRequirement::Op::does_not_exist;
  } else {
    requirement.key = std::string(term);
    requirement.op = SelectorRequirement::Op::exists;
  }
  if (!valid_label_key(requirement.key)) {
    return invalid_selector(term, "invalid key");
  }
  return requirement;
}

bool requirement_matches(const SelectorRequirement& requirement, std::optional<std::string_view> value) {
  using Op = SelectorRequirement::Op;
  auto in_values = [&] {
    return value && std::find(requirement.values.begin(), requirement.values.end(), *value) != requirement.values.end();
  };
  switch (requirement.op) {
    case Op::equals:
    case Op::in:
      return in_values();
    case Op::not_equals:
    case Op::not_in:
      return !in_values();
    case Op::exists:
      return value.has_value();
    case Op::does_not_exist:
      return !value.has_value();
  }
  return false;
}

}  // namespace

bool LabelSelector::matches(const json::Value& object) const {
  // Looked up in the object's labels as they are: a LIST evaluates this for every
  // object of the collection.
  const json::Value* labels = json::find_path(object, {"metadata", "labels"});
  if (labels != nullptr && !labels->IsObject()) {
    labels = nullptr;
  }
  return std::all_of(requirements.begin(), requirements.end(), [&](const SelectorRequirement& requirement) {
    const json::Value* value = labels == nullptr ? nullptr : json::find(*labels, requirement.key);
    std::optional<std::string_view> text;
    if (value != nullptr && value->IsString()) {
      text = std::string_view(value->GetString(), value->GetStringLength());
    }
    return requirement_matches(requirement, text);
  });
}

Result<LabelSelector> parse_label_selector(std::string_view text) {
  LabelSelector selector;
  for (auto term : split_terms(text)) {
    auto requirement = parse_term(term, true);
    if (!requirement) {
      return requirement.error();
    }
    selector.requirements.push_back(std::move(*requirement));
  }
  return selector;
}

bool FieldSelector::matches(std::string_view name, std::string_view namespace_name) const {
  return std::all_of(requirements.begin(), requirements.end(), [&](const SelectorRequirement& requirement) {
    return requirement_matches(requirement, requirement.key == "metadata.name" ? name : namespace_name);
  });
}

Result<FieldSelector> parse_field_selector(std::string_view text) {
  FieldSelector selector;
  for (auto term : split_terms(text)) {
    auto requirement = parse_term(term, false);
    if (!requirement) {
      return requirement.error();
    }
    if (requirement->key != "metadata.name" && requirement->key != "metadata.namespace") {
      return Error(ErrorKind::invalid, "field label not supported: " + requirement->key);
    }
    selector.requirements.push_back(std::move(*requirement));
  }
  return selector;
}

}  // namespace kstate::emulator
