// Implementation of diff normalisation and kubectl-style secret masking.
#include "states/normalize.hpp"

#include <string>

namespace kstate::states {
namespace {

void remove_member(json::Value& object, const char* key) {
  if (object.IsObject()) {
    object.RemoveMember(key);
  }
}

// Masks the members of before[key] / after[key] (maps of secret values).
void mask_map_values(json::Value* before_map, json::Value* after_map, json::Allocator& before_allocator,
                     json::Allocator& after_allocator) {
  auto mask_one_side = [](json::Value* side, json::Value* other, json::Allocator& allocator, bool is_before) {
    if (side == nullptr || !side->IsObject()) {
      return;
    }
    for (auto& member : side->GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      const json::Value* counterpart = other != nullptr ? json::find(*other, key) : nullptr;
      const char* mask = "***";
      if (counterpart != nullptr && *counterpart != member.value) {
        mask = is_before ? "*** (before)" : "*** (after)";
      }
      member.value.SetString(mask, allocator);
    }
  };
  // Compare before masking either side: work on copies of the originals.
  json::Document before_copy;
  json::Document after_copy;
  if (before_map != nullptr) {
    before_copy.CopyFrom(*before_map, before_copy.GetAllocator());
  }
  if (after_map != nullptr) {
    after_copy.CopyFrom(*after_map, after_copy.GetAllocator());
  }
  mask_one_side(before_map, after_map != nullptr ? &after_copy : nullptr, before_allocator, true);
  mask_one_side(after_map, before_map != nullptr ? &before_copy : nullptr, after_allocator, false);
}

json::Value* annotations_of(json::Value& object) {
  json::Value* metadata = json::find(object, "metadata");
  return metadata != nullptr ? json::find(*metadata, "annotations") : nullptr;
}

}  // namespace

json::Document normalize_for_diff(const json::Value& object, const NormalizeOptions& options) {
  json::Document copy = json::copy(object);
  if (json::Value* metadata = json::find(copy, "metadata")) {
    for (const char* key : {"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"}) {
      remove_member(*metadata, key);
    }
    // kstate's own bookkeeping (states/compare.hpp) is not a change users asked for.
    if (json::Value* annotations = json::find(*metadata, "annotations"); annotations && annotations->IsObject()) {
      annotations->RemoveMember("kstate.io/config-hash");
      if (annotations->MemberCount() == 0) {
        metadata->RemoveMember("annotations");
      }
    }
  }
  if (!options.keep_status) {
    remove_member(copy, "status");
  }
  return copy;
}

bool is_secret(const json::Value& object) {
  return json::string_or(json::find(object, "kind"), "") == "Secret" &&
         json::string_or(json::find(object, "apiVersion"), "") == "v1";
}

void mask_secrets(json::Value& before, json::Value& after, json::Allocator& before_allocator,
                  json::Allocator& after_allocator) {
  if (is_secret(before) || is_secret(after)) {
    for (const char* key : {"data", "stringData"}) {
      mask_map_values(json::find(before, key), json::find(after, key), before_allocator, after_allocator);
    }
  }
  // The last-applied annotation is masked like a one-key secret map.
  json::Value* before_annotations = annotations_of(before);
  json::Value* after_annotations = annotations_of(after);
  auto has_last_applied = [](json::Value* annotations) {
    return annotations != nullptr && json::find(*annotations, last_applied_annotation) != nullptr;
  };
  if (!has_last_applied(before_annotations) && !has_last_applied(after_annotations)) {
    return;
  }
  json::Document before_only(rapidjson::kObjectType);
  json::Document after_only(rapidjson::kObjectType);
  auto extract = [](json::Value* annotations, json::Document& into) -> json::Value* {
    if (annotations == nullptr) {
      return nullptr;
    }
    if (const json::Value* v = json::find(*annotations, last_applied_annotation)) {
      json::Value copy;
      copy.CopyFrom(*v, into.GetAllocator());
      json::set(into, last_applied_annotation, std::move(copy), into.GetAllocator());
    }
    return &into;
  };
  json::Value* b = extract(before_annotations, before_only);
  json::Value* a = extract(after_annotations, after_only);
  mask_map_values(b, a, before_only.GetAllocator(), after_only.GetAllocator());
  auto write_back = [](json::Value* annotations, json::Document& from, json::Allocator& allocator) {
    if (annotations == nullptr) {
      return;
    }
    if (json::Value* masked = json::find(from, last_applied_annotation)) {
      json::set_string(*annotations, last_applied_annotation, json::string_or(masked, "***"), allocator);
    }
  };
  write_back(before_annotations, before_only, before_allocator);
  write_back(after_annotations, after_only, after_allocator);
}

}  // namespace kstate::states
