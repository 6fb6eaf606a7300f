// The outcome of one state, in Salt's return shape:
// {id, name, function, result: true|false|null, changes, comment, duration_ms, source},
// plus warnings (the API server's) when there are any.
// result is null (nullopt) in test mode where a change would happen.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "manifests/state.hpp"

namespace kstate::states {

// What a state did to its object (or, in test mode, would do): what the text report
// and the daemon's summary print, as kubectl's verbs.
enum class Change {
  none,        // already as declared, or failed
  created,     // did not exist
  configured,  // updated (server-side apply, replace, patch)
  adopted,     // existed without kstate's labels and was taken over (updated and labelled)
  recreated,   // deleted and created again (an immutable field changed)
  deleted,     // object_absent removed it
  pruned,      // no manifest declares it any more
};
std::string_view to_string(Change change);

struct StateResult {
  std::string id;
  std::string name;  // Kind/namespace/name of the object
  manifests::Function function = manifests::Function::object_present;
  std::optional<bool> result;  // true ok, false failed, nullopt = change pending (test mode)
  json::Document changes{rapidjson::kObjectType};
  std::string comment;
  double duration_ms = 0;
  manifests::SourcePosition source;
  // The API server's warnings on this state's requests (Warning headers: deprecated
  // APIs, PodSecurity, admission webhooks), printable, each once.
  std::vector<std::string> warnings;
  Change change = Change::none;  // set with `changes` (not in Salt's JSON: -o json is unchanged)

  bool changed() const { return changes.IsObject() && changes.MemberCount() > 0; }
};

// The Salt-compatible JSON for one result.
json::Document to_json(const StateResult& result);

}  // namespace kstate::states
