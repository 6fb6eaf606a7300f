// Subset comparison and configuration hashes for no-op detection.
#include "states/compare.hpp"

#include "core/encoding.hpp"
#include "manifests/loader.hpp"

namespace kstate::states {
namespace {

bool numbers_equal(const json::Value& a, const json::Value& b) {
  if (a.IsInt64() && b.IsInt64()) {
    return a.GetInt64() == b.GetInt64();
  }
  if (a.IsUint64() && b.IsUint64()) {
    return a.GetUint64() == b.GetUint64();
  }
  return a.GetDouble() == b.GetDouble();
}

}  // namespace

bool is_subset(const json::Value& desired, const json::Value& live) {
  if (desired.IsNumber() && live.IsNumber()) {
    return numbers_equal(desired, live);
  }
  if (desired.GetType() != live.GetType()) {
    return false;
  }
  switch (desired.GetType()) {
    case rapidjson::kObjectType:
      for (const auto& member : desired.GetObject()) {
        auto it = live.FindMember(member.name);
        if (it == live.MemberEnd() || !is_subset(member.value, it->value)) {
          return false;
        }
      }
      return true;
    case rapidjson::kArrayType:
      if (desired.Size() != live.Size()) {
        return false;
      }
      for (rapidjson::SizeType i = 0; i < desired.Size(); ++i) {
        if (!is_subset(desired[i], live[i])) {
          return false;
        }
      }
      return true;
    default:
      return desired == live;
  }
}

namespace {

bool has_string_data(const json::Value& object) {
  const json::Value* string_data = json::find(object, "stringData");
  return string_data != nullptr && string_data->IsObject() &&
         json::string_or(json::find(object, "kind"), "") == "Secret";
}

}  // namespace

bool is_stored_subset(const json::Value& desired, const json::Value& live) {
  // Most objects are stored as sent: compare them in place (no copy per state).
  return has_string_data(desired) ? is_subset(as_stored(desired), live) : is_subset(desired, live);
}

json::Document as_stored(const json::Value& desired) {
  json::Document stored = json::copy(desired);
  if (!has_string_data(stored)) {
    return stored;
  }
  const json::Value* string_data = json::find(stored, "stringData");
  auto& allocator = stored.GetAllocator();
  json::Document folded(rapidjson::kObjectType);
  for (const auto& member : string_data->GetObject()) {
    if (member.value.IsString()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      json::set_string(folded, key, encoding::base64_encode({member.value.GetString(), member.value.GetStringLength()}),
                       folded.GetAllocator());
    }
  }
  json::Value& data = json::ensure_object(stored, "data", allocator);
  for (const auto& member : folded.GetObject()) {
    json::set_string(data, {member.name.GetString(), member.name.GetStringLength()},
                     {member.value.GetString(), member.value.GetStringLength()}, allocator);
  }
  stored.RemoveMember("stringData");
  return stored;
}

std::string config_hash(const json::Value& object) {
  if (json::find_path(object, {"metadata", "annotations", config_hash_annotation}) == nullptr) {
    return manifests::sha256_hex(json::dump(object));  // the usual case: nothing to leave out
  }
  json::Document copy = json::copy(object);
  if (json::Value* metadata = json::find(copy, "metadata")) {
    if (json::Value* annotations = json::find(*metadata, "annotations"); annotations && annotations->IsObject()) {
      annotations->RemoveMember(config_hash_annotation);
    }
  }
  return manifests::sha256_hex(json::dump(copy));
}

std::string recorded_config_hash(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "annotations", config_hash_annotation}), ""));
}

}  // namespace kstate::states
