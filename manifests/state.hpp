// A State: one unit of desired cluster state loaded from a manifest, in Salt's
// terms (ID, function, arguments), with the object it concerns and where in which
// file it was declared so that every error can name file:line and the state ID.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace kstate::manifests {

// What a requisite reference starts with when it names every state of a state file
// (`- sls: name`): "sls:" + the file's real path.
inline constexpr std::string_view sls_prefix = "sls:";

enum class Function { object_present, object_updated, object_absent };
const char* to_string(Function function);  // "object_present", ...
// Accepts "object_present", "metalk8s_kubernetes.object_present", "kubernetes.object_present".
std::optional<Function> parse_function(std::string_view name);

enum class Strategy { apply, replace, create_only };
const char* to_string(Strategy strategy);  // "apply", "replace", "create-only"
std::optional<Strategy> parse_strategy(std::string_view name);

struct SourcePosition {
  std::string file;               // as given on the command line or found in the directory
  int line = 0;                   // 1-based; 0 when unknown
  int column = 0;                 // 1-based; 0 when unknown
  std::string to_string() const;  // "file:line:column"
};

// MetalK8s-style wait: bool, attempts, {attempts, sleep}, or {timeout}.
struct Wait {
  bool enabled = false;
  int attempts = 0;          // 0 = bounded by timeout only
  double sleep_seconds = 0;  // between attempts
  double timeout_seconds = 0;
};

// Everything a state holds but its object. A copy of a state with another object
// (the daemon's cycles parse each object back from its cache) copies this whole, so
// that a field added here cannot be left out of it.
struct StateSettings {
  std::string id;
  Function function = Function::object_present;
  Strategy strategy = Strategy::apply;
  // True when the state or an annotation chose the strategy: object_updated patches with
  // a merge patch unless `strategy: apply` was given.
  bool strategy_given = false;
  bool recreate = false;
  std::string propagation = "Background";
  Wait wait;
  // Salt's requisites, each a list of references: a state ID, an include parent's ID,
  // Kind/namespace/name, or "sls:" + the real path of a state file (every state it
  // declares; written `- sls: name` in a state document).
  std::vector<std::string> require;     // run after these; not at all when one failed
  std::vector<std::string> require_in;  // the states named require this one
  std::vector<std::string> onchanges;   // like require, and run only when one changed something
  std::vector<std::string> watch;       // like require, and restart this workload when one changed
  bool prune_disabled = false;
  // Annotation kstate.io/takeover: disabled: the object is shared with other managers on
  // purpose, so kstate does not take their fields over (states/takeover.hpp).
  bool takeover_disabled = false;
  // Another tool's mark (manifests/conventions.hpp) asks kstate to leave the object
  // alone: "key: value"; the state then sends nothing and says so.
  std::string left_alone_by;
  // Annotation kstate.io/ignore-fields: JSON pointers of fields left to other writers
  // once the object exists (ignore_fields.hpp).
  std::vector<std::string> ignore_fields;
  SourcePosition source;
  // Set for states produced by a state document's `source:` include: the including
  // state's ID. `require` naming it means every state that has it as parent_id.
  std::string parent_id;
  // True when the ID was written by a person in a state document (not derived from the
  // object); such a state wins over an identical plain-object duplicate.
  bool from_state_document = false;
  // For states declared in a state document: the real path of its file, which a
  // requisite `- sls: name` names.
  std::string sls_file;
};

struct State : StateSettings {
  json::Document object;  // the manifest (absent: apiVersion/kind/metadata.name/namespace only)
};

}  // namespace kstate::manifests
