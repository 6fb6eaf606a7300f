// YAML -> JSON with YAML 1.2 core-schema scalars (true/false, null, ints, floats;
// quoted scalars stay strings), as Kubernetes' sigs.k8s.io/yaml does.
#include "tests/emulator/yaml_json.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <regex>

namespace kstate::emulator {

namespace {

json::Value scalar_to_json(const YAML::Node& node, json::Allocator& allocator) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {  // quoted or explicitly a string
    return json::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), allocator);
  }
  if (text == "true" || text == "True" || text == "TRUE") {
    return json::Value(true);
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    return json::Value(false);
  }
  if (text.empty() || text == "null" || text == "Null" || text == "NULL" || text == "~") {
    return json::Value();
  }
  static const std::regex integer("[-+]?[0-9]+");
  static const std::regex number("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(text, integer)) {
    std::int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size()) {
      return json::Value(static_cast<int64_t>(value));
    }
  }
  if (std::regex_match(text, number)) {
    return json::Value(std::strtod(text.c_str(), nullptr));
  }
  return json::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), allocator);
}

json::Value node_to_json(const YAML::Node& node, json::Allocator& allocator) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json::Value object(rapidjson::kObjectType);
      for (const auto& entry : node) {
        json::set(object, entry.first.Scalar(), node_to_json(entry.second, allocator), allocator);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      json::Value array(rapidjson::kArrayType);
      for (const auto& item : node) {
        array.PushBack(node_to_json(item, allocator), allocator);
      }
      return array;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(node, allocator);
    default:
      return json::Value();
  }
}

}  // namespace

Result<json::Document> parse_json_or_yaml(std::string_view text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    auto parsed = json::parse(text);
    if (parsed) {
      return parsed;
    }
  }
  try {
    YAML::Node node = YAML::Load(std::string(text));
    json::Document doc;
    json::Value value = node_to_json(node, doc.GetAllocator());
    static_cast<json::Value&>(doc) = std::move(value);
    return doc;
  } catch (const YAML::Exception& error) {
    return Error(ErrorKind::invalid, std::string("error converting YAML to JSON: ") + error.what());
  }
}

}  // namespace kstate::emulator
