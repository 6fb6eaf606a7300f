// The outcome of one state, in Salt's return shape:
// {id, name, function, result: true|false|null, changes, comment, duration_ms, source},
// plus warnings (the API server's) when there are any.
// result is null (nullopt) in test mode where a change would happen.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "manifests/state.hpp"

namespace kstate::states {

// What a state did (or, in test mode, would do) to its object: what reports, logs and
// metrics count, never read back from the comment. `adopted`: an existing object kstate
// did not create, taken over (states/adoption.hpp); `pruned`: deleted by prune, as no
// manifest declares it any more.
enum class Change { none, created, updated, adopted, recreated, deleted, applied, pruned };
const char* to_string(Change change);  // "created", ... ("none" for none)

struct StateResult {
  std::string id;
  std::string name;  // Kind/namespace/name of the object
  manifests::Function function = manifests::Function::object_present;
  std::optional<bool> result;  // true ok, false failed, nullopt = change pending (test mode)
  Change change = Change::none;
  json::Document changes{rapidjson::kObjectType};
  std::string comment;
  double duration_ms = 0;
  manifests::SourcePosition source;
  // The API server's warnings on this state's requests (Warning headers: deprecated
  // APIs, PodSecurity, admission webhooks), printable, each once.
  std::vector<std::string> warnings;

  bool changed() const { return changes.IsObject() && changes.MemberCount() > 0; }
};

// The Salt-compatible JSON for one result.
json::Document to_json(const StateResult& result);

}  // namespace kstate::states
