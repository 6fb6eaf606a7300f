// JSON -> YAML rendering on yaml-cpp's emitter with deterministic key order.
#include "states/yaml_render.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <vector>

namespace kstate::states {
namespace {

bool looks_numeric(std::string_view text) {
  // Decimal, octal, hex, binary, floats with exponents, underscores, sexagesimal and
  // infinities: anything a YAML 1.1 or 1.2 reader might take as a number.
  static const std::regex number(
      R"(^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$|^[-+]?0[xXoObB][0-9a-fA-F_]+$|^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$)");
  return std::regex_match(text.begin(), text.end(), number);
}

bool is_reserved_word(std::string_view text) {
  static constexpr std::array<std::string_view, 22> words = {
      "y",    "Y",    "yes",   "Yes",   "YES",   "n",  "N",  "no", "No",  "NO",  "true",
      "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
  static constexpr std::array<std::string_view, 5> nulls = {"~", "null", "Null", "NULL", ""};
  return std::find(words.begin(), words.end(), text) != words.end() ||
         std::find(nulls.begin(), nulls.end(), text) != nulls.end();
}

void emit(YAML::Emitter& out, const json::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      out << YAML::Null;
      break;
    case rapidjson::kFalseType:
      out << false;
      break;
    case rapidjson::kTrueType:
      out << true;
      break;
    case rapidjson::kNumberType:
      if (value.IsInt64()) {
        out << value.GetInt64();
      } else if (value.IsUint64()) {
        out << value.GetUint64();
      } else {
        out << json::dump(value);  // RapidJSON prints the shortest round-trip form
      }
      break;
    case rapidjson::kStringType: {
      std::string_view text(value.GetString(), value.GetStringLength());
      // A multi-line string ending in a newline reads back the same from a literal
      // block with the default "clip" chomping, which adds exactly that newline.
      if (text.size() > 1 && text.back() == '\n' && text.find_first_of("\t\r") == std::string_view::npos &&
          text[text.size() - 2] != '\n' && std::isspace(static_cast<unsigned char>(text.front())) == 0) {
        out << YAML::Literal << std::string(text.substr(0, text.size() - 1));
      } else if (needs_quotes(text)) {
        out << YAML::DoubleQuoted << std::string(text);
      } else {
        out << std::string(text);
      }
      break;
    }
    case rapidjson::kArrayType:
      if (value.Empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        break;
      }
      out << YAML::BeginSeq;
      for (const auto& item : value.GetArray()) {
        emit(out, item);
      }
      out << YAML::EndSeq;
      break;
    case rapidjson::kObjectType: {
      if (value.MemberCount() == 0) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        break;
      }
      std::vector<const json::Value::Member*> members;
      members.reserve(value.MemberCount());
      for (const auto& member : value.GetObject()) {
        members.push_back(&member);
      }
      std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
        return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
               std::string_view(b->name.GetString(), b->name.GetStringLength());
      });
      out << YAML::BeginMap;
      for (const auto* member : members) {
        std::string_view key(member->name.GetString(), member->name.GetStringLength());
        out << YAML::Key;
        if (needs_quotes(key)) {
          out << YAML::DoubleQuoted;
        }
        out << std::string(key) << YAML::Value;
        emit(out, member->value);
      }
      out << YAML::EndMap;
      break;
    }
  }
}

}  // namespace

bool needs_quotes(std::string_view text) {
  if (text.empty() || is_reserved_word(text) || looks_numeric(text)) {
    return true;
  }
  if (std::isspace(static_cast<unsigned char>(text.front())) != 0 ||
      std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    return true;
  }
  // Indicators that change meaning at the start of a plain scalar.
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`=").find(text.front()) != std::string_view::npos) {
    return true;
  }
  if (text.find(": ") != std::string_view::npos || text.find(" #") != std::string_view::npos || text.back() == ':') {
    return true;
  }
  return std::any_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string to_yaml(const json::Value& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, value);
  std::string text = out.c_str();
  if (!text.empty() && text.back() != '\n') {
    text.push_back('\n');
  }
  return text;
}

}  // namespace kstate::states
