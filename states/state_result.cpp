// Serialisation of StateResult into Salt's return structure.
#include "states/state_result.hpp"

namespace kstate::states {

const char* to_string(Change change) {
  switch (change) {
    case Change::none:
      return "none";
    case Change::created:
      return "created";
    case Change::updated:
      return "updated";
    case Change::adopted:
      return "adopted";
    case Change::recreated:
      return "re-created";
    case Change::deleted:
      return "deleted";
    case Change::applied:
      return "applied";
    case Change::pruned:
      return "pruned";
  }
  return "none";
}

json::Document to_json(const StateResult& result) {
  json::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  json::set_string(doc, "id", result.id, a);
  json::set_string(doc, "name", result.name, a);
  json::set_string(doc, "function", manifests::to_string(result.function), a);
  json::Value r;
  if (result.result.has_value()) {
    r.SetBool(*result.result);
  }
  json::set(doc, "result", std::move(r), a);
  json::Value changes;
  changes.CopyFrom(result.changes, a);
  json::set(doc, "changes", std::move(changes), a);
  json::set_string(doc, "comment", result.comment, a);
  // kstate's own field (Salt's structure has none): what the state did, as counted.
  json::set_string(doc, "change", to_string(result.change), a);
  json::set(doc, "duration_ms", json::Value(result.duration_ms), a);
  json::set_string(doc, "source", result.source.to_string(), a);
  if (!result.warnings.empty()) {
    json::Value warnings(rapidjson::kArrayType);
    for (const auto& text : result.warnings) {
      warnings.PushBack(json::make_string(text, a), a);
    }
    json::set(doc, "warnings", std::move(warnings), a);
  }
  return doc;
}

}  // namespace kstate::states
