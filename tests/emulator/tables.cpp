// Table columns and cells (see tables.hpp).
#include "tests/emulator/tables.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

namespace kstate::emulator {

namespace {

using json::Allocator;
using json::string_at;
using json::Value;

const char* const kNameDescription =
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow "
    "a client to request the generation of an appropriate name automatically. Name is primarily intended for "
    "creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* const kAgeDescription =
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is "
    "represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

std::int64_t integer_at(const Value& object, std::initializer_list<std::string_view> path) {
  const Value* value = json::find_path(object, path);
  return value != nullptr && value->IsInt64() ? value->GetInt64() : 0;
}

std::chrono::system_clock::time_point parse_rfc3339(const std::string& text) {
  std::tm tm{};
  if (text.size() < 19 || std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                                      &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
    return {};
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

bool is_deployment(const ResourceType& type) {
  return !type.custom && type.group == "apps" && type.plural == "deployments";
}

// metav1.FormatLabelSelector: "app=web,tier in (a,b)".
std::string selector_text(const Value* selector) {
  if (selector == nullptr || !selector->IsObject()) {
    return "<none>";
  }
  std::vector<std::string> parts;
  if (const Value* labels = json::find(*selector, "matchLabels"); labels != nullptr && labels->IsObject()) {
    std::map<std::string, std::string> sorted;
    for (const auto& member : labels->GetObject()) {
      sorted[member.name.GetString()] = std::string(json::string_or(&member.value, ""));
    }
    for (const auto& [key, value] : sorted) {
      parts.push_back(key + "=" + value);
    }
  }
  if (const Value* expressions = json::find(*selector, "matchExpressions");
      expressions != nullptr && expressions->IsArray()) {
    for (const auto& expression : expressions->GetArray()) {
      std::string op = string_at(expression, {"operator"});
      std::string text = string_at(expression, {"key"});
      if (op == "Exists") {
        parts.push_back(text);
        continue;
      }
      if (op == "DoesNotExist") {
        parts.push_back("!" + text);
        continue;
      }
      std::string values;
      if (const Value* list = json::find(expression, "values"); list != nullptr && list->IsArray()) {
        for (const auto& value : list->GetArray()) {
          values += (values.empty() ? "" : ",") + std::string(json::string_or(&value, ""));
        }
      }
      parts.push_back(text + (op == "In" ? " in (" : " notin (") + values + ")");
    }
  }
  if (parts.empty()) {
    return "<none>";
  }
  std::string text;
  for (const auto& part : parts) {
    text += (text.empty() ? "" : ",") + part;
  }
  return text;
}

std::string container_field(const Value& object, const char* field) {
  std::string text;
  if (const Value* containers = json::find_path(object, {"spec", "template", "spec", "containers"});
      containers != nullptr && containers->IsArray()) {
    for (const auto& container : containers->GetArray()) {
      text += (text.empty() ? "" : ",") + string_at(container, {field});
    }
  }
  return text;
}

}  // namespace

std::string human_duration(std::chrono::seconds age) {
  const long long seconds = age.count();
  if (seconds < -1) {
    return "<invalid>";
  }
  if (seconds < 0) {
    return "0s";
  }
  if (seconds < 60 * 2) {
    return std::to_string(seconds) + "s";
  }
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    return std::to_string(minutes) + "m" + (seconds % 60 == 0 ? "" : std::to_string(seconds % 60) + "s");
  }
  if (minutes < 60 * 3) {
    return std::to_string(minutes) + "m";
  }
  const long long hours = seconds / 3600;
  if (hours < 8) {
    return std::to_string(hours) + "h" + (minutes % 60 == 0 ? "" : std::to_string(minutes % 60) + "m");
  }
  if (hours < 48) {
    return std::to_string(hours) + "h";
  }
  if (hours < 24 * 8) {
    return std::to_string(hours / 24) + "d" + (hours % 24 == 0 ? "" : std::to_string(hours % 24) + "h");
  }
  if (hours < 24 * 365 * 2) {
    return std::to_string(hours / 24) + "d";
  }
  if (hours < 24 * 365 * 8) {
    const long long days = hours / 24 - (hours / 24 / 365) * 365;
    return std::to_string(hours / 24 / 365) + "y" + (days == 0 ? "" : std::to_string(days) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::vector<TableColumn> table_columns(const ResourceType& type) {
  if (is_deployment(type)) {
    return {
        {"Name", "string", "name", kNameDescription, 0},
        {"Ready", "string", "", "Number of the pod with ready state", 0},
        {"Up-to-date", "string", "",
         "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", 0},
        {"Available", "string", "",
         "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", 0},
        {"Age", "string", "", kAgeDescription, 0},
        {"Containers", "string", "", "Names of each container in the template.", 1},
        {"Images", "string", "", "Images referenced by each container in the template.", 1},
        {"Selector", "string", "",
         "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by "
         "this deployment.",
         1},
    };
  }
  return {{"Name", "string", "name", kNameDescription, 0}, {"Age", "string", "", kAgeDescription, 0}};
}

json::Value table_cells(const ResourceType& type, const json::Value& object, std::chrono::system_clock::time_point now,
                        json::Allocator& allocator) {
  Value cells(rapidjson::kArrayType);
  auto text = [&](const std::string& value) { cells.PushBack(json::make_string(value, allocator), allocator); };
  const auto age = human_duration(std::chrono::duration_cast<std::chrono::seconds>(
      now - parse_rfc3339(string_at(object, {"metadata", "creationTimestamp"}))));
  text(string_at(object, {"metadata", "name"}));
  if (is_deployment(type)) {
    const Value* wanted = json::find_path(object, {"spec", "replicas"});
    const std::int64_t replicas = wanted != nullptr && wanted->IsInt64() ? wanted->GetInt64() : 0;
    text(std::to_string(integer_at(object, {"status", "readyReplicas"})) + "/" + std::to_string(replicas));
    cells.PushBack(Value(integer_at(object, {"status", "updatedReplicas"})), allocator);
    cells.PushBack(Value(integer_at(object, {"status", "availableReplicas"})), allocator);
    text(age);
    text(container_field(object, "name"));
    text(container_field(object, "image"));
    text(selector_text(json::find_path(object, {"spec", "selector"})));
    return cells;
  }
  text(age);
  return cells;
}

}  // namespace kstate::emulator
