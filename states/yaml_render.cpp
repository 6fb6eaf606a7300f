// JSON -> block YAML rendering with deterministic key order (sorted keys), for diffs
// and text reports.
#include "states/yaml_render.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace kstate::states {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_digit_or_underscore(char c) {
  return is_digit(c) || c == '_';
}
bool is_hex_digit_or_underscore(char c) {
  return is_digit_or_underscore(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Moves `at` past the characters of `text` that `accept` takes; how many it took.
template <typename Accept>
std::size_t skip_while(std::string_view text, std::size_t& at, Accept accept) {
  const std::size_t from = at;
  while (at < text.size() && accept(text[at])) {
    ++at;
  }
  return at - from;
}

bool is_reserved_word(std::string_view text) {
  static constexpr std::array<std::string_view, 22> words = {
      "y",    "Y",    "yes",   "Yes",   "YES",   "n",  "N",  "no", "No",  "NO",  "true",
      "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
  static constexpr std::array<std::string_view, 5> nulls = {"~", "null", "Null", "NULL", ""};
  if (text.size() > 5) {
    return false;  // the longest is "false"; most keys and values are longer
  }
  return std::find(words.begin(), words.end(), text) != words.end() ||
         std::find(nulls.begin(), nulls.end(), text) != nulls.end();
}

}  // namespace

// A scanner instead of std::regex, which took ~2% of a 1,000-object cold apply's CPU
// here for the strings that start like a number (tests/states/diff_test.cpp checks
// it against the regular expression it replaces).
bool looks_numeric(std::string_view text) {
  if (text == ".nan" || text == ".NaN" || text == ".NAN") {
    return true;
  }
  std::size_t at = text.empty() || (text[0] != '+' && text[0] != '-') ? 0 : 1;
  const std::string_view unsigned_part = text.substr(at);
  if (unsigned_part == ".inf" || unsigned_part == ".Inf" || unsigned_part == ".INF") {
    return true;
  }
  if (unsigned_part.empty()) {
    return false;
  }
  // 0x1F, 0o17, 0b101 (underscores allowed).
  if (unsigned_part.size() > 2 && unsigned_part[0] == '0' &&
      std::string_view("xXoObB").find(unsigned_part[1]) != std::string_view::npos) {
    std::size_t digits_at = at + 2;
    if (skip_while(text, digits_at, is_hex_digit_or_underscore) > 0 && digits_at == text.size()) {
      return true;
    }
  }
  if (text[at] == '.') {
    ++at;  // .5, .5e3
    if (skip_while(text, at, is_digit) == 0) {
      return false;
    }
  } else if (is_digit(text[at])) {
    skip_while(text, at, is_digit_or_underscore);
    if (at < text.size() && text[at] == ':') {
      // Sexagesimal, 1:30 or 1:30:15.5 (YAML 1.1): each part after a colon is one digit,
      // or two of which the first is 0-5; no exponent.
      while (at < text.size() && text[at] == ':') {
        ++at;
        if (at + 1 < text.size() && text[at] >= '0' && text[at] <= '5' && is_digit(text[at + 1])) {
          at += 2;
        } else if (at < text.size() && is_digit(text[at])) {
          ++at;
        } else {
          return false;
        }
      }
      if (at < text.size() && text[at] == '.') {
        ++at;
        skip_while(text, at, is_digit_or_underscore);
      }
      return at == text.size();
    }
    if (at < text.size() && text[at] == '.') {
      ++at;
      skip_while(text, at, is_digit_or_underscore);
    }
  } else {
    return false;
  }
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
      ++at;
    }
    if (skip_while(text, at, is_digit) == 0) {
      return false;
    }
  }
  return at == text.size();
}

namespace {

// The emitter writes text directly: yaml-cpp's Emitter checked every plain string
// character by character against its regular expressions, which made rendering the
// diffs of a 1,000-object apply a third of kstate's CPU time. The layout is the one
// yaml-cpp produced with indent 2 and block style (tests/states/diff_test.cpp).
void write_double_quoted(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\x";
          out += hex[u >> 4];
          out += hex[u & 0xf];
        } else {
          out += c;  // UTF-8 passes through, as yaml-cpp wrote it
        }
    }
  }
  out += '"';
}

void write_key(std::string& out, std::string_view key) {
  if (needs_quotes(key)) {
    write_double_quoted(out, key);
  } else {
    out += key;
  }
}

bool is_block(const json::Value& value) {
  return (value.IsObject() && value.MemberCount() > 0) || (value.IsArray() && !value.Empty());
}

// Writes `value` whose first line continues the current line (after "key:" or "- ");
// `indent` is the column of the lines that follow it.
void emit(std::string& out, const json::Value& value, std::size_t indent);

void emit_scalar(std::string& out, const json::Value& value, std::size_t indent) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      out += '~';
      break;
    case rapidjson::kFalseType:
      out += "false";
      break;
    case rapidjson::kTrueType:
      out += "true";
      break;
    case rapidjson::kNumberType:
      if (value.IsInt64()) {
        out += std::to_string(value.GetInt64());
      } else if (value.IsUint64()) {
        out += std::to_string(value.GetUint64());
      } else {
        out += json::dump(value);  // RapidJSON prints the shortest round-trip form
      }
      break;
    case rapidjson::kStringType: {
      std::string_view text(value.GetString(), value.GetStringLength());
      // A multi-line string ending in a newline reads back the same from a literal
      // block with the default "clip" chomping, which adds exactly that newline.
      if (text.size() > 1 && text.back() == '\n' && text.find_first_of("\t\r") == std::string_view::npos &&
          text[text.size() - 2] != '\n' && std::isspace(static_cast<unsigned char>(text.front())) == 0) {
        out += '|';
        bool line_start = true;
        for (char c : text.substr(0, text.size() - 1)) {
          if (line_start) {
            out += '\n';
            if (c != '\n') {
              out.append(std::max<std::size_t>(indent, 2), ' ');  // empty lines get no trailing spaces
            }
          }
          line_start = c == '\n';
          if (!line_start) {
            out += c;
          }
        }
      } else if (needs_quotes(text)) {
        write_double_quoted(out, text);
      } else {
        out += text;
      }
      break;
    }
    case rapidjson::kArrayType:
      out += "[]";
      break;
    case rapidjson::kObjectType:
      out += "{}";
      break;
  }
}

void emit(std::string& out, const json::Value& value, std::size_t indent) {
  if (!is_block(value)) {
    emit_scalar(out, value, indent);
    return;
  }
  bool first = true;
  // Every entry after the first starts a new line at `indent`.
  auto start_entry = [&] {
    if (!first) {
      out += '\n';
      out.append(indent, ' ');
    }
    first = false;
  };
  if (value.IsArray()) {
    for (const auto& item : value.GetArray()) {
      start_entry();
      if (item.IsArray() && !item.Empty()) {
        out += "-\n";  // a sequence in a sequence starts on its own line
        out.append(indent + 2, ' ');
      } else {
        out += "- ";
      }
      emit(out, item, indent + 2);
    }
    return;
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
  for (const auto* member : members) {
    start_entry();
    write_key(out, std::string_view(member->name.GetString(), member->name.GetStringLength()));
    out += ':';
    if (is_block(member->value)) {
      out += '\n';
      out.append(indent + 2, ' ');
      emit(out, member->value, indent + 2);
    } else {
      out += ' ';
      emit_scalar(out, member->value, indent + 2);
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
  std::string text;
  emit(text, value, 0);
  if (!text.empty() && text.back() != '\n') {
    text.push_back('\n');
  }
  return text;
}

}  // namespace kstate::states
