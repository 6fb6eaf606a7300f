// Variables in manifests, as Flux's post-build substitution writes them: `${NAME}` is
// the value of NAME, `${NAME:=default}` that value or `default` when NAME is unset or
// empty, and `$${` stands for a literal `${` (a shell script in a ConfigMap keeps its
// `$${HOME}` as `${HOME}`). Values come from the daemon config (`vars:`, `vars-from:`
// files) or the command line (`--var NAME=VALUE`, `--vars-from FILE`); an object
// annotated `kstate.io/substitute: disabled` is left as written.
//
// Where: after YAML parsing, in each string scalar of an object (mapping values and
// list items; keys stay as written), not in the file's text as Flux does. So:
//  - an error names the exact file:line:column of the reference (a substituted text
//    would shift every line after a multi-line value);
//  - a value cannot inject YAML: a value holding `\n  hostNetwork: true` stays one
//    string, it can never add a key, an item or a document;
//  - a plain (unquoted) scalar whose text changed is typed again by kubectl's rules,
//    so `replicas: ${REPLICAS}` is the number 3 as it would be in Flux, while a quoted
//    `"${PORT}"` stays the string "8080": as if the value had been written in place.
// Strict: a reference to an undefined variable without a default, and any other
// `${...}` (`${1}`, `${HOME:-x}`, an unterminated `${`), is an error of the object's
// state; a `$` not followed by `{` (`$HOME`, `$$`) is left alone.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "manifests/state.hpp"
#include "manifests/yaml_to_json.hpp"

namespace kstate::manifests {

// Name -> value. Names as Flux allows them: [A-Za-z_][A-Za-z0-9_]*.
using VariableMap = std::map<std::string, std::string, std::less<>>;

inline constexpr std::string_view substitute_annotation = "kstate.io/substitute";

bool is_variable_name(std::string_view name);

enum class ReferenceProblem {
  undefined,     // ${NAME} without a value or default
  malformed,     // ${...} that is not ${NAME} or ${NAME:=default}
  unterminated,  // ${ without a closing }
};

struct SubstitutionProblem {
  ReferenceProblem problem = ReferenceProblem::undefined;
  std::size_t offset = 0;  // of the `$` in the text
  std::string reference;   // as written: "${NAME}", "${HOME:-x}", "${NAME"
  std::string name;        // the variable (undefined only)
  std::string message() const;
};

struct SubstitutedText {
  std::string text;
  std::vector<SubstitutionProblem> problems;  // empty: `text` is the result
};

// Pure: `text` with each reference replaced and each `$${` written `${`.
SubstitutedText substitute_text(std::string_view text, const VariableMap& variables);

struct VariableError {
  TextPosition position;
  std::string message;
};

// Substitutes every string scalar of `value` in place (see above); `at` locates
// `value` in its file. One error per variable or malformed reference (at most 10 per
// value, then one more saying how many were left out); on error `value` is left
// partly substituted and must not be used.
std::vector<VariableError> substitute_variables(json::Value& value, json::Allocator& allocator, const YamlLocator& at,
                                                const VariableMap& variables);

// `--var NAME=VALUE`: adds it to `into` (a later one wins). The error says what is wrong.
std::optional<std::string> add_assignment(std::string_view assignment, VariableMap& into);

struct VariablesFileError {
  SourcePosition position;
  std::string message;
  std::string to_string() const;  // "path:line:column: message" (a file that cannot be read: the message)
};

// A `vars-from` / `--vars-from` file: one YAML mapping of NAME: value, each value a
// scalar taken as written (`1.10` stays "1.10", `true` "true"). Added to `into`, a
// later file winning. A missing or unreadable file, a name that is not a variable
// name, a value that is a list or mapping: errors naming file:line; the file's other
// entries are still added. Files are small: larger than 1 MiB is an error.
std::vector<VariablesFileError> load_variables_file(const std::string& path, VariableMap& into);

}  // namespace kstate::manifests
