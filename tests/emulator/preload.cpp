// Loading fixture objects straight into the store (see preload.hpp).
#include "tests/emulator/preload.hpp"

#include <vector>

#include "core/encoding.hpp"
#include "tests/emulator/yaml_json.hpp"

namespace kstate::emulator {
namespace {

// The documents of a YAML stream: split at lines that are "---" (with an optional
// comment or trailing space), as fixture files are written. JSON text is one document.
std::vector<std::string_view> documents_of(std::string_view text) {
  std::vector<std::string_view> documents;
  std::size_t start = 0;
  std::size_t line = 0;
  while (line <= text.size()) {
    auto end = text.find('\n', line);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view current = text.substr(line, end - line);
    bool separator = current.starts_with("---") &&
                     (current.size() == 3 || current[3] == ' ' || current[3] == '\t' || current[3] == '\r');
    if (separator) {
      documents.push_back(text.substr(start, line - start));
      start = end + 1;
    }
    line = end + 1;
  }
  if (start < text.size()) {
    documents.push_back(text.substr(start));
  }
  return documents;
}

bool blank(std::string_view document) {
  std::size_t at = 0;
  while (at < document.size()) {
    auto end = document.find('\n', at);
    auto current = document.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    auto first = current.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && current[first] != '#') {
      return false;
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return true;
}

std::string text_at(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

// A uid derived from the object's key: the same file gives the same uids.
std::string uid_for(const std::string& key) {
  std::string hex = encoding::sha256_hex(key);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-4" + hex.substr(13, 3) + "-a" + hex.substr(17, 3) + "-" +
         hex.substr(20, 12);
}

Status ensure_namespace(ApiServer& api, const std::string& name) {
  if (api.store().get(object_key("", "namespaces", "", name))) {
    return ok_status();
  }
  Request request;
  request.method = "POST";
  request.path = "/api/v1/namespaces";
  request.accept = "application/json";
  request.content_type = "application/json";
  request.user_agent = "kstate-emulator-preload";
  request.identity = Identity{true, "kstate-emulator-preload", {"system:masters", "system:authenticated"}, true};
  request.body = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})";
  auto response = api.handle(request);
  if (response.status != 201) {
    return Error(ErrorKind::invalid, "cannot create namespace " + name + ": " + response.body);
  }
  return ok_status();
}

Status store_object(ApiServer& api, const json::Value& object, const std::string& where) {
  if (!object.IsObject()) {
    return Error(ErrorKind::invalid_input, where + ": not an object");
  }
  std::string api_version = text_at(object, {"apiVersion"});
  std::string kind = text_at(object, {"kind"});
  auto slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  const ResourceType* type = api.catalog().find_kind(group, version, kind);
  if (type == nullptr) {
    return Error(ErrorKind::invalid_input, where + ": the emulator does not serve " + api_version + " " + kind);
  }
  std::string name = text_at(object, {"metadata", "name"});
  if (name.empty()) {
    return Error(ErrorKind::invalid_input, where + ": " + kind + " without metadata.name");
  }
  std::string namespace_name;
  if (type->namespaced) {
    namespace_name = text_at(object, {"metadata", "namespace"});
    if (namespace_name.empty()) {
      namespace_name = "default";
    }
    if (auto created = ensure_namespace(api, namespace_name); !created) {
      return Error(created.error().kind, where + ": " + created.error().message);
    }
  }
  std::string key = object_key(type->group, type->plural, namespace_name, name);
  auto stored = std::make_shared<json::Document>();
  stored->CopyFrom(object, stored->GetAllocator());
  auto& allocator = stored->GetAllocator();
  json::Value& metadata = json::ensure_object(*stored, "metadata", allocator);
  if (type->namespaced) {
    json::set_string(metadata, "namespace", namespace_name, allocator);
  }
  if (json::find(metadata, "uid") == nullptr) {
    json::set_string(metadata, "uid", uid_for(key), allocator);
  }
  if (json::find(metadata, "creationTimestamp") == nullptr) {
    json::set_string(metadata, "creationTimestamp", api.now_rfc3339(), allocator);
  }
  json::set_string(metadata, "resourceVersion", std::to_string(api.store().next_version()), allocator);
  const char* event = api.store().get(key) ? "MODIFIED" : "ADDED";
  api.store().put(key, std::move(stored), event);
  return ok_status();
}

}  // namespace

Result<std::size_t> preload_objects(ApiServer& api, std::string_view text, const std::string& source) {
  std::size_t stored = 0;
  std::size_t index = 0;
  for (std::string_view document : documents_of(text)) {
    ++index;
    if (blank(document)) {
      continue;
    }
    std::string where = source + ", document " + std::to_string(index);
    auto parsed = parse_json_or_yaml(document);
    if (!parsed) {
      return Error(ErrorKind::invalid_input, where + ": " + parsed.error().message);
    }
    const json::Value* items = nullptr;
    if (parsed->IsArray()) {
      items = &parsed.value();
    } else if (const json::Value* list = json::find(*parsed, "items");
               list != nullptr && list->IsArray() && text_at(*parsed, {"kind"}).ends_with("List")) {
      items = list;
    }
    if (items == nullptr) {
      if (auto put = store_object(api, *parsed, where); !put) {
        return put.error();
      }
      ++stored;
      continue;
    }
    std::size_t item_index = 0;
    for (const auto& item : items->GetArray()) {
      if (auto put = store_object(api, item, where + ", item " + std::to_string(item_index++)); !put) {
        return put.error();
      }
      ++stored;
    }
  }
  api.reload_custom_resources();
  return stored;
}

}  // namespace kstate::emulator
