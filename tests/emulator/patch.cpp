// Merge, JSON and strategic merge patches (see patch.hpp).
#include "tests/emulator/patch.hpp"

#include <algorithm>

namespace kstate::emulator {

namespace {

bool has_member(const json::Value& item, std::string_view key) {
  return json::find(item, key) != nullptr;
}

}  // namespace

std::vector<std::string> list_merge_keys(std::string_view field_name, const json::Value& sample_item) {
  if (!sample_item.IsObject()) {
    return {};
  }
  if (field_name == "containers" || field_name == "initContainers" || field_name == "ephemeralContainers" ||
      field_name == "env" || field_name == "volumes" || field_name == "imagePullSecrets" || field_name == "secrets" ||
      field_name == "resourceClaims") {
    return {"name"};
  }
  if (field_name == "ports") {
    if (has_member(sample_item, "containerPort")) {
      return {"containerPort"};
    }
    if (has_member(sample_item, "port")) {
      return {"port"};
    }
    return {};
  }
  if (field_name == "webhooks") {
    // Mutating/ValidatingWebhookConfiguration: +listType=map +listMapKey=name
    // (patchMergeKey name), so a caBundle a cainjector writes is its own field of one
    // item, k:{"name":...}, as with containers.
    return {"name"};
  }
  if (field_name == "volumeMounts") {
    return {"mountPath"};
  }
  if (field_name == "volumeDevices") {
    return {"devicePath"};
  }
  if (field_name == "hostAliases") {
    return {"ip"};
  }
  if (field_name == "conditions") {
    return {"type"};
  }
  if (field_name == "ownerReferences") {
    return {"uid"};
  }
  if (field_name == "topologySpreadConstraints") {
    return {"topologyKey", "whenUnsatisfiable"};
  }
  return {};
}

std::vector<std::string> list_map_keys(std::string_view field_name, const json::Value& sample_item) {
  auto keys = list_merge_keys(field_name, sample_item);
  if (field_name == "ports" && !keys.empty()) {
    keys.emplace_back("protocol");
  }
  return keys;
}

std::string_view list_key_default(std::string_view key) {
  return key == "protocol" ? "TCP" : "";
}

bool is_keyed_list_field(std::string_view field_name) {
  return field_name == "ports" || !list_merge_keys(field_name, json::Value(rapidjson::kObjectType)).empty();
}

bool is_set_list(std::string_view field_name) {
  return field_name == "finalizers";
}

void apply_merge_patch(json::Value& target, const json::Value& patch, json::Allocator& allocator) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, allocator);
    return;
  }
  if (!target.IsObject()) {
    target.SetObject();
  }
  for (const auto& member : patch.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (member.value.IsNull()) {
      target.RemoveMember(member.name);
      continue;
    }
    json::Value* existing = json::find(target, key);
    if (existing != nullptr && member.value.IsObject()) {
      apply_merge_patch(*existing, member.value, allocator);
    } else if (existing != nullptr) {
      existing->CopyFrom(member.value, allocator);
    } else {
      json::Value value;
      if (member.value.IsObject()) {
        value.SetObject();
        apply_merge_patch(value, member.value, allocator);
      } else {
        value.CopyFrom(member.value, allocator);
      }
      json::set(target, key, std::move(value), allocator);
    }
  }
}

// ---- JSON patch ------------------------------------------------------------------

namespace {

struct PointerParent {
  json::Value* parent = nullptr;
  std::string last;  // unescaped final reference token
};

Result<std::vector<std::string>> split_pointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) {
    return tokens;
  }
  if (pointer.front() != '/') {
    return Error(ErrorKind::invalid, "invalid JSON pointer \"" + std::string(pointer) + "\"");
  }
  size_t start = 1;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      std::string token;
      for (size_t j = start; j < i; ++j) {
        if (pointer[j] == '~' && j + 1 < i) {
          token += pointer[j + 1] == '1' ? '/' : '~';
          ++j;
        } else {
          token += pointer[j];
        }
      }
      tokens.push_back(std::move(token));
      start = i + 1;
    }
  }
  return tokens;
}

Result<size_t> array_index(const std::string& token, size_t size, bool allow_end) {
  if (token == "-" && allow_end) {
    return size;
  }
  if (token.empty() || !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Error(ErrorKind::invalid, "invalid array index \"" + token + "\"");
  }
  size_t index = std::stoul(token);
  if (index > size || (!allow_end && index == size)) {
    return Error(ErrorKind::invalid, "array index " + token + " out of bounds");
  }
  return index;
}

Result<json::Value*> resolve(json::Value& root, const std::vector<std::string>& tokens, size_t count) {
  json::Value* current = &root;
  for (size_t i = 0; i < count; ++i) {
    const auto& token = tokens[i];
    if (current->IsObject()) {
      current = json::find(*current, token);
      if (current == nullptr) {
        return Error(ErrorKind::invalid, "path component \"" + token + "\" not found");
      }
    } else if (current->IsArray()) {
      auto index = array_index(token, current->Size(), false);
      if (!index) {
        return index.error();
      }
      current = &(*current)[static_cast<rapidjson::SizeType>(*index)];
    } else {
      return Error(ErrorKind::invalid, "path component \"" + token + "\" not found");
    }
  }
  return current;
}

Status remove_at(json::Value& root, const std::vector<std::string>& tokens, json::Value* removed,
                 json::Allocator& allocator) {
  if (tokens.empty()) {
    return Error(ErrorKind::invalid, "cannot remove the whole document");
  }
  auto parent = resolve(root, tokens, tokens.size() - 1);
  if (!parent) {
    return parent.error();
  }
  json::Value& container = **parent;
  const auto& last = tokens.back();
  if (container.IsObject()) {
    auto it = container.FindMember(json::Value(last.c_str(), allocator).Move());
    if (it == container.MemberEnd()) {
      return Error(ErrorKind::invalid, "unable to remove nonexistent key: " + last);
    }
    if (removed != nullptr) {
      removed->CopyFrom(it->value, allocator);
    }
    container.RemoveMember(it);
    return ok_status();
  }
  if (container.IsArray()) {
    auto index = array_index(last, container.Size(), false);
    if (!index) {
      return index.error();
    }
    if (removed != nullptr) {
      removed->CopyFrom(container[static_cast<rapidjson::SizeType>(*index)], allocator);
    }
    container.Erase(container.Begin() + *index);
    return ok_status();
  }
  return Error(ErrorKind::invalid, "cannot remove from a scalar");
}

Status add_at(json::Value& root, const std::vector<std::string>& tokens, json::Value value, bool replace,
              json::Allocator& allocator) {
  if (tokens.empty()) {
    root = std::move(value);
    return ok_status();
  }
  auto parent = resolve(root, tokens, tokens.size() - 1);
  if (!parent) {
    return parent.error();
  }
  json::Value& container = **parent;
  const auto& last = tokens.back();
  if (container.IsObject()) {
    if (replace && json::find(container, last) == nullptr) {
      return Error(ErrorKind::invalid, "replace operation does not apply: doc is missing key: " + last);
    }
    json::set(container, last, std::move(value), allocator);
    return ok_status();
  }
  if (container.IsArray()) {
    auto index = array_index(last, container.Size(), !replace);
    if (!index) {
      return index.error();
    }
    if (replace) {
      container[static_cast<rapidjson::SizeType>(*index)] = std::move(value);
      return ok_status();
    }
    container.PushBack(json::Value(), allocator);
    for (size_t i = container.Size() - 1; i > *index; --i) {
      container[static_cast<rapidjson::SizeType>(i)] = std::move(container[static_cast<rapidjson::SizeType>(i - 1)]);
    }
    container[static_cast<rapidjson::SizeType>(*index)] = std::move(value);
    return ok_status();
  }
  return Error(ErrorKind::invalid, "cannot add to a scalar");
}

}  // namespace

Status apply_json_patch(json::Value& target, const json::Value& operations, json::Allocator& allocator) {
  if (!operations.IsArray()) {
    return Error(ErrorKind::invalid, "json patch must be an array of operations");
  }
  for (const auto& operation : operations.GetArray()) {
    auto op = json::get_string(operation, "op");
    auto path = json::get_string(operation, "path");
    if (!op || !path) {
      return Error(ErrorKind::invalid, "json patch operation needs \"op\" and \"path\"");
    }
    auto tokens = split_pointer(*path);
    if (!tokens) {
      return tokens.error();
    }
    const json::Value* value = json::find(operation, "value");
    std::string op_name(*op);
    if (op_name == "add" || op_name == "replace" || op_name == "test") {
      if (value == nullptr) {
        return Error(ErrorKind::invalid, op_name + " operation needs a \"value\"");
      }
    }
    Status result = ok_status();
    if (op_name == "add" || op_name == "replace") {
      json::Value copy(*value, allocator);
      result = add_at(target, *tokens, std::move(copy), op_name == "replace", allocator);
    } else if (op_name == "remove") {
      result = remove_at(target, *tokens, nullptr, allocator);
    } else if (op_name == "move" || op_name == "copy") {
      auto from = json::get_string(operation, "from");
      if (!from) {
        return Error(ErrorKind::invalid, op_name + " operation needs \"from\"");
      }
      auto from_tokens = split_pointer(*from);
      if (!from_tokens) {
        return from_tokens.error();
      }
      json::Value moved;
      if (op_name == "move") {
        result = remove_at(target, *from_tokens, &moved, allocator);
      } else {
        auto source = resolve(target, *from_tokens, from_tokens->size());
        if (!source) {
          return source.error();
        }
        moved.CopyFrom(**source, allocator);
      }
      if (result.ok()) {
        result = add_at(target, *tokens, std::move(moved), false, allocator);
      }
    } else if (op_name == "test") {
      auto current = resolve(target, *tokens, tokens->size());
      if (!current || **current != *value) {
        return Error(ErrorKind::invalid, "testing value " + std::string(*path) + " failed");
      }
    } else {
      return Error(ErrorKind::invalid, "unexpected json patch operation \"" + op_name + "\"");
    }
    if (!result.ok()) {
      return result;
    }
  }
  return ok_status();
}

// ---- strategic merge patch -----------------------------------------------------------

namespace {

constexpr std::string_view kSetElementOrder = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";

bool same_keys(const json::Value& a, const json::Value& b, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    const json::Value* left = json::find(a, key);
    const json::Value* right = json::find(b, key);
    if (right == nullptr) {
      continue;  // a patch item may omit optional key parts (e.g. protocol)
    }
    if (left == nullptr || *left != *right) {
      return false;
    }
  }
  return true;
}

Status merge_list(json::Value& target, const json::Value& patch, std::string_view field, json::Allocator& allocator);

Status merge_map(json::Value& target, const json::Value& patch, json::Allocator& allocator) {
  if (const json::Value* directive = json::find(patch, "$patch"); directive != nullptr && directive->IsString()) {
    std::string_view what(directive->GetString());
    if (what == "replace") {
      target.CopyFrom(patch, allocator);
      target.RemoveMember("$patch");
      return ok_status();
    }
    if (what == "delete") {
      target.SetNull();
      return ok_status();
    }
    return Error(ErrorKind::invalid, "unknown patch directive $patch: " + std::string(what));
  }
  if (!target.IsObject()) {
    target.SetObject();
  }
  if (const json::Value* retain = json::find(patch, "$retainKeys"); retain != nullptr && retain->IsArray()) {
    std::vector<std::string> doomed;
    for (const auto& member : target.GetObject()) {
      bool kept = std::any_of(retain->Begin(), retain->End(), [&](const json::Value& key) {
        return key.IsString() && std::string_view(key.GetString()) == member.name.GetString();
      });
      if (!kept) {
        doomed.emplace_back(member.name.GetString());
      }
    }
    for (const auto& key : doomed) {
      target.RemoveMember(key.c_str());
    }
  }
  for (const auto& member : patch.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (key == "$retainKeys" || key.starts_with(kSetElementOrder)) {
      continue;  // ordering hints do not change content
    }
    if (key.starts_with(kDeleteFromPrimitiveList)) {
      json::Value* list = json::find(target, key.substr(kDeleteFromPrimitiveList.size()));
      if (list != nullptr && list->IsArray() && member.value.IsArray()) {
        for (auto it = list->Begin(); it != list->End();) {
          bool doomed = std::any_of(member.value.Begin(), member.value.End(),
                                    [&](const json::Value& value) { return value == *it; });
          it = doomed ? list->Erase(it) : it + 1;
        }
      }
      continue;
    }
    if (member.value.IsNull()) {
      target.RemoveMember(member.name);
      continue;
    }
    json::Value* existing = json::find(target, key);
    if (member.value.IsObject()) {
      if (existing == nullptr) {
        json::set(target, key, json::Value(rapidjson::kObjectType), allocator);
        existing = json::find(target, key);
      }
      if (auto status = merge_map(*existing, member.value, allocator); !status.ok()) {
        return status;
      }
      if (existing->IsNull()) {
        target.RemoveMember(member.name);
      }
    } else if (member.value.IsArray() && existing != nullptr && existing->IsArray()) {
      if (auto status = merge_list(*existing, member.value, key, allocator); !status.ok()) {
        return status;
      }
    } else if (member.value.IsArray()) {
      json::Value fresh(rapidjson::kArrayType);
      if (auto status = merge_list(fresh, member.value, key, allocator); !status.ok()) {
        return status;
      }
      json::set(target, key, std::move(fresh), allocator);
    } else {
      json::set(target, key, json::Value(member.value, allocator), allocator);
    }
  }
  return ok_status();
}

Status merge_list(json::Value& target, const json::Value& patch, std::string_view field, json::Allocator& allocator) {
  // A `{"$patch": "replace"}` item replaces the list with the other items.
  bool replace = std::any_of(patch.Begin(), patch.End(), [](const json::Value& item) {
    const json::Value* directive = json::find(item, "$patch");
    return directive != nullptr && directive->IsString() && std::string_view(directive->GetString()) == "replace";
  });
  if (replace) {
    target.SetArray();
    for (const auto& item : patch.GetArray()) {
      if (json::find(item, "$patch") == nullptr) {
        target.PushBack(json::Value(item, allocator), allocator);
      }
    }
    return ok_status();
  }
  if (is_set_list(field)) {
    for (const auto& item : patch.GetArray()) {
      if (std::none_of(target.Begin(), target.End(), [&](const json::Value& value) { return value == item; })) {
        target.PushBack(json::Value(item, allocator), allocator);
      }
    }
    return ok_status();
  }
  auto keys = patch.Empty() ? std::vector<std::string>{} : list_merge_keys(field, patch[0]);
  if (keys.empty()) {
    target.CopyFrom(patch, allocator);
    return ok_status();
  }
  for (const auto& item : patch.GetArray()) {
    auto match = std::find_if(target.Begin(), target.End(),
                              [&](const json::Value& existing) { return same_keys(existing, item, keys); });
    const json::Value* directive = json::find(item, "$patch");
    if (directive != nullptr && directive->IsString() && std::string_view(directive->GetString()) == "delete") {
      if (match != target.End()) {
        target.Erase(match);
      }
      continue;
    }
    if (match == target.End()) {
      json::Value fresh(rapidjson::kObjectType);
      if (auto status = merge_map(fresh, item, allocator); !status.ok()) {
        return status;
      }
      target.PushBack(std::move(fresh), allocator);
    } else if (auto status = merge_map(*match, item, allocator); !status.ok()) {
      return status;
    }
  }
  return ok_status();
}

}  // namespace

Status apply_strategic_merge_patch(json::Value& target, const json::Value& patch, json::Allocator& allocator) {
  if (!patch.IsObject()) {
    return Error(ErrorKind::invalid, "strategic merge patch must be a JSON object");
  }
  return merge_map(target, patch, allocator);
}

}  // namespace kstate::emulator
