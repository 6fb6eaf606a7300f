// A State: one unit of desired cluster state loaded from a manifest, in Salt's
// terms (ID, function, arguments), with the object it concerns and where in which
// file it was declared so that every error can name file:line and the state ID.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace kstate::manifests {

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

struct State {
  std::string id;
  Function function = Function::object_present;
  json::Document object;  // the manifest (absent: apiVersion/kind/metadata.name/namespace only)
  Strategy strategy = Strategy::apply;
  // True when the state or an annotation chose the strategy: object_updated patches with
  // a merge patch unless `strategy: apply` was given.
  bool strategy_given = false;
  bool recreate = false;
  std::string propagation = "Background";
  Wait wait;
  std::vector<std::string> require;  // state IDs or Kind/namespace/name
  bool prune_disabled = false;
  // Annotation kstate.io/takeover: disabled: the object is shared with other managers on
  // purpose, so kstate does not take their fields over (states/takeover.hpp).
  bool takeover_disabled = false;
  SourcePosition source;
  // Set for states produced by a state document's `source:` include: the including
  // state's ID. `require` naming it means every state that has it as parent_id.
  std::string parent_id;
  // True when the ID was written by a person in a state document (not derived from the
  // object); such a state wins over an identical plain-object duplicate.
  bool from_state_document = false;
};

}  // namespace kstate::manifests
