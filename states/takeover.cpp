// Takeover of other managers' fields (takeover.hpp): the plan, its JSON patch, and
// what the apply after it removes (for test mode's diff).
#include "states/takeover.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace kstate::states {
namespace {

std::string_view string_member(const json::Value& object, std::string_view key) {
  return json::string_or(json::find(object, key), "");
}

// Managers named exactly, besides the kubectl-* family and kstate's own Update entry.
constexpr std::array<std::string_view, 4> taken_over_managers{
    "kubectl",                    // kubectl before 1.18 named every command so
    "kubectl-client-side-apply",  // kubectl apply (client-side)
    "before-first-apply",         // objects that predate managed fields
    "OpenAPI-Generator",          // the Python client of Salt and MetalK8s (its user agent)
};

// into ∪= from, for FieldsV1 trees (nested objects; leaves are {}).
void merge_fields(json::Value& into, const json::Value& from, json::Allocator& allocator) {
  if (!into.IsObject() || !from.IsObject()) {
    return;
  }
  for (const auto& member : from.GetObject()) {
    auto found = into.FindMember(member.name);
    if (found == into.MemberEnd()) {
      into.AddMember(json::Value(member.name, allocator), json::Value(member.value, allocator), allocator);
    } else {
      merge_fields(found->value, member.value, allocator);
    }
  }
}

}  // namespace

bool is_taken_over(std::string_view manager, std::string_view operation, std::string_view subresource,
                   std::string_view field_manager) {
  if (operation != "Update" || !subresource.empty()) {
    return false;  // another applier's fields, or a controller's status: theirs
  }
  if (manager == field_manager || manager.rfind("kubectl-", 0) == 0) {
    return true;
  }
  return std::find(taken_over_managers.begin(), taken_over_managers.end(), manager) != taken_over_managers.end();
}

TakeoverPlan plan_takeover(const json::Value& managed_fields, std::string_view field_manager) {
  TakeoverPlan plan;
  plan.managed_fields.SetArray();
  plan.owned_fields.SetObject();
  if (!managed_fields.IsArray()) {
    return plan;
  }
  const auto entries = managed_fields.GetArray();
  std::vector<bool> taken(entries.Size(), false);
  std::optional<rapidjson::SizeType> target;
  for (rapidjson::SizeType i = 0; i < entries.Size(); ++i) {
    const json::Value& entry = entries[i];
    const std::string_view manager = string_member(entry, "manager");
    const std::string_view operation = string_member(entry, "operation");
    const std::string_view subresource = string_member(entry, "subresource");
    taken[i] = is_taken_over(manager, operation, subresource, field_manager);
    if (!target && manager == field_manager && operation == "Apply" && subresource.empty()) {
      target = i;
    }
    if (taken[i] && std::find(plan.managers.begin(), plan.managers.end(), manager) == plan.managers.end()) {
      plan.managers.emplace_back(manager);
    }
  }
  if (plan.managers.empty()) {
    return plan;
  }
  if (!target) {
    // No Apply entry of kstate's yet: the first (most recent) taken-over entry becomes it.
    target = static_cast<rapidjson::SizeType>(std::find(taken.begin(), taken.end(), true) - taken.begin());
  }
  auto& allocator = plan.managed_fields.GetAllocator();
  const std::string_view target_version = string_member(entries[*target], "apiVersion");
  json::Value merged(rapidjson::kObjectType);
  if (const json::Value* fields = json::find(entries[*target], "fieldsV1"); fields != nullptr && fields->IsObject()) {
    merged.CopyFrom(*fields, allocator);
  }
  for (rapidjson::SizeType i = 0; i < entries.Size(); ++i) {
    if (taken[i] && i != *target && string_member(entries[i], "apiVersion") == target_version) {
      if (const json::Value* fields = json::find(entries[i], "fieldsV1")) {
        merge_fields(merged, *fields, allocator);
      }
    }
  }
  plan.owned_fields.CopyFrom(merged, plan.owned_fields.GetAllocator());
  for (rapidjson::SizeType i = 0; i < entries.Size(); ++i) {
    if (i == *target) {
      json::Value entry(entries[i], allocator);
      json::set_string(entry, "manager", field_manager, allocator);
      json::set_string(entry, "operation", "Apply", allocator);
      json::set_string(entry, "fieldsType", "FieldsV1", allocator);
      json::set(entry, "fieldsV1", std::move(merged), allocator);
      plan.managed_fields.PushBack(std::move(entry), allocator);
    } else if (!taken[i]) {
      plan.managed_fields.PushBack(json::Value(entries[i], allocator), allocator);
    }
  }
  return plan;
}

std::string takeover_patch(const TakeoverPlan& plan, std::string_view resource_version) {
  json::Document patch(rapidjson::kArrayType);
  auto& allocator = patch.GetAllocator();
  json::Value test(rapidjson::kObjectType);
  json::set_string(test, "op", "test", allocator);
  json::set_string(test, "path", "/metadata/resourceVersion", allocator);
  json::set_string(test, "value", resource_version, allocator);
  patch.PushBack(std::move(test), allocator);
  json::Value replace(rapidjson::kObjectType);
  json::set_string(replace, "op", "replace", allocator);
  json::set_string(replace, "path", "/metadata/managedFields", allocator);
  json::set(replace, "value", json::Value(plan.managed_fields, allocator), allocator);
  patch.PushBack(std::move(replace), allocator);
  return json::dump(patch);
}

bool remove_released_fields(json::Value& object, const json::Value& owned, const json::Value& applied,
                            const std::vector<const json::Value*>& others) {
  if (!object.IsObject() || !owned.IsObject()) {
    return true;
  }
  bool complete = true;
  for (const auto& member : owned.GetObject()) {
    const std::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (key == ".") {
      continue;
    }
    if (key.rfind("f:", 0) != 0) {
      complete = false;  // a list item (k:, v:, i:): not followed
      continue;
    }
    const std::string field(key.substr(2));
    json::Value* live = json::find(object, field);
    if (live == nullptr) {
      continue;
    }
    std::vector<const json::Value*> others_here;
    for (const json::Value* other : others) {
      if (other != nullptr) {
        if (const json::Value* child = json::find(*other, key)) {
          others_here.push_back(child);
        }
      }
    }
    const json::Value* applied_here = applied.IsObject() ? json::find(applied, field) : nullptr;
    if (applied_here == nullptr && others_here.empty()) {
      object.RemoveMember(field.c_str());  // owned by kstate alone, and no longer applied
      continue;
    }
    if (live->IsArray()) {
      complete = false;  // its items are owned by k:/v:/i: keys: not followed
      continue;
    }
    if (member.value.IsObject() && live->IsObject()) {
      static const json::Value nothing_applied(rapidjson::kObjectType);
      complete = remove_released_fields(*live, member.value, applied_here != nullptr ? *applied_here : nothing_applied,
                                        others_here) &&
                 complete;
    }
  }
  return complete;
}

std::string managers_text(const std::vector<std::string>& managers) {
  std::string text;
  for (const auto& manager : managers) {
    text += (text.empty() ? "" : ", ") + manager;
  }
  return text;
}

}  // namespace kstate::states
