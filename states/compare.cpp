// Subset comparison in the server's stored form, and configuration hashes, for no-op
// detection (compare.hpp).
#include "states/compare.hpp"

#include <array>
#include <vector>

#include "core/encoding.hpp"
#include "manifests/loader.hpp"
#include "states/quantity.hpp"

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

std::string_view view(const json::Value& string) {
  return {string.GetString(), string.GetStringLength()};
}

// Fields holding quantities in built-in kinds, as dotted patterns: "*" is any array
// element or map key, "a|b" either name. Pod specs are listed once and placed under
// each workload's template.
constexpr std::array<std::string_view, 5> pod_spec_quantities{
    "containers|initContainers|ephemeralContainers.*.resources.limits|requests.*",
    "overhead.*",
    "resources.limits|requests.*",
    "volumes.*.emptyDir.sizeLimit",
    "volumes.*.ephemeral.volumeClaimTemplate.spec.resources.limits|requests.*",
};

struct KindQuantities {
  std::string_view group;
  std::string_view kind;
  std::string_view pod_spec;  // where the kind holds a pod spec ("" none)
  std::string_view other;     // another quantity field ("" none)
};

constexpr std::array<KindQuantities, 14> kinds_with_quantities{{
    {"", "Pod", "spec", ""},
    {"", "PodTemplate", "template.spec", ""},
    {"", "ReplicationController", "spec.template.spec", ""},
    {"apps", "Deployment", "spec.template.spec", ""},
    {"apps", "ReplicaSet", "spec.template.spec", ""},
    {"apps", "DaemonSet", "spec.template.spec", ""},
    {"apps", "StatefulSet", "spec.template.spec", "spec.volumeClaimTemplates.*.spec.resources.limits|requests.*"},
    {"batch", "Job", "spec.template.spec", ""},
    {"batch", "CronJob", "spec.jobTemplate.spec.template.spec", ""},
    {"", "PersistentVolumeClaim", "", "spec.resources.limits|requests.*"},
    {"", "PersistentVolume", "", "spec.capacity.*"},
    {"", "ResourceQuota", "", "spec.hard.*"},
    {"", "LimitRange", "", "spec.limits.*.max|min|default|defaultRequest|maxLimitRequestRatio.*"},
    {"node.k8s.io", "RuntimeClass", "", "overhead.podFixed.*"},
}};

// Whether one pattern token ("a|b", "*") accepts a path element.
bool token_matches(std::string_view token, std::string_view element) {
  if (token == "*") {
    return true;
  }
  while (true) {
    const std::size_t bar = token.find('|');
    if (token.substr(0, bar) == element) {
      return true;
    }
    if (bar == std::string_view::npos) {
      return false;
    }
    token.remove_prefix(bar + 1);
  }
}

// Matches path[from..] against `pattern` entirely; returns how many elements it took,
// or -1. A pattern "" takes none.
long match_prefix(std::string_view pattern, const std::vector<std::string_view>& path, std::size_t from) {
  std::size_t at = from;
  while (!pattern.empty()) {
    const std::size_t dot = pattern.find('.');
    if (at >= path.size() || !token_matches(pattern.substr(0, dot), path[at])) {
      return -1;
    }
    ++at;
    pattern = dot == std::string_view::npos ? std::string_view() : pattern.substr(dot + 1);
  }
  return static_cast<long>(at - from);
}

bool matches_exactly(std::string_view pattern, const std::vector<std::string_view>& path, std::size_t from) {
  const long taken = match_prefix(pattern, path, from);
  return taken >= 0 && from + static_cast<std::size_t>(taken) == path.size();
}

// A zero value, which Go leaves out of `omitempty` fields: false, 0, "", null, [], and
// objects of zero values.
bool is_zero(const json::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
    case rapidjson::kFalseType:
      return true;
    case rapidjson::kNumberType:
      return value.GetDouble() == 0;
    case rapidjson::kStringType:
      return value.GetStringLength() == 0;
    case rapidjson::kArrayType:
      return value.Empty();
    case rapidjson::kObjectType:
      for (const auto& member : value.GetObject()) {
        if (!is_zero(member.value)) {
          return false;
        }
      }
      return true;
    default:
      return false;
  }
}

bool is_server_owned_metadata(std::string_view name) {
  for (std::string_view owned :
       {"uid", "resourceVersion", "generation", "creationTimestamp", "selfLink", "managedFields"}) {
    if (name == owned) {
      return true;
    }
  }
  return false;
}

// The subset comparison of compare.hpp's rules, keeping the path it is at.
class StoredComparison {
 public:
  StoredComparison(const json::Value& desired, const StoredFormOptions& options) : options_(options) {
    std::string_view api_version = json::string_or(json::find(desired, "apiVersion"), "");
    const std::size_t slash = api_version.find('/');
    group_ = slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
    kind_ = json::string_or(json::find(desired, "kind"), "");
    path_.reserve(16);
  }

  bool subset(const json::Value& desired, const json::Value& live) {
    if (desired.IsObject() && live.IsObject()) {
      for (const auto& member : desired.GetObject()) {
        const std::string_view name = view(member.name);
        if (skipped(name)) {
          continue;
        }
        auto found = live.FindMember(member.name);
        if (found == live.MemberEnd() || found->value.IsNull()) {
          if (!is_zero(member.value)) {
            return false;
          }
          continue;
        }
        path_.push_back(name);
        const bool equal = subset(member.value, found->value);
        path_.pop_back();
        if (!equal) {
          return false;
        }
      }
      return true;
    }
    if (desired.IsArray() && live.IsArray()) {
      if (desired.Size() != live.Size()) {
        return false;
      }
      path_.push_back("*");
      bool equal = true;
      for (rapidjson::SizeType i = 0; equal && i < desired.Size(); ++i) {
        equal = subset(desired[i], live[i]);
      }
      path_.pop_back();
      return equal;
    }
    if (desired.IsNumber() && live.IsNumber() && numbers_equal(desired, live)) {
      return true;
    }
    if (desired.GetType() == live.GetType() && !desired.IsObject() && !desired.IsArray() && desired == live) {
      return true;
    }
    // Differently written, or different: a quantity is equal when the server would
    // store the manifest's value as the live one.
    if (live.IsString() && (desired.IsString() || desired.IsNumber()) && is_quantity_field(group_, kind_, path_)) {
      auto stored = canonical_quantity(desired);
      return stored && *stored == view(live);
    }
    return false;
  }

 private:
  bool skipped(std::string_view name) const {
    if (path_.empty()) {
      return name == "status" && options_.status_subresource;
    }
    return path_.size() == 1 && path_[0] == "metadata" && is_server_owned_metadata(name);
  }

  const StoredFormOptions& options_;
  std::string_view group_;
  std::string_view kind_;
  std::vector<std::string_view> path_;
};

bool has_string_data(const json::Value& object) {
  const json::Value* string_data = json::find(object, "stringData");
  return string_data != nullptr && string_data->IsObject() &&
         json::string_or(json::find(object, "kind"), "") == "Secret";
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

bool is_quantity_field(std::string_view group, std::string_view kind, const std::vector<std::string_view>& path) {
  for (const auto& entry : kinds_with_quantities) {
    if (entry.group != group || entry.kind != kind) {
      continue;
    }
    if (!entry.other.empty() && matches_exactly(entry.other, path, 0)) {
      return true;
    }
    if (!entry.pod_spec.empty()) {
      const long taken = match_prefix(entry.pod_spec, path, 0);
      if (taken >= 0) {
        for (std::string_view pattern : pod_spec_quantities) {
          if (matches_exactly(pattern, path, static_cast<std::size_t>(taken))) {
            return true;
          }
        }
      }
    }
    return false;
  }
  return false;
}

bool is_stored_subset(const json::Value& desired, const json::Value& live, const StoredFormOptions& options) {
  // Most objects are stored as sent: compare them in place (no copy per state).
  if (has_string_data(desired)) {
    json::Document stored = as_stored(desired);
    return StoredComparison(stored, options).subset(stored, live);
  }
  return StoredComparison(desired, options).subset(desired, live);
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
