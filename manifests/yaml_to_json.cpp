// YAML -> JSON with kubectl's (go-yaml v2 + sigs.k8s.io/yaml) typing rules. libyaml's
// event parser builds a small tree per document (kept for error positions); the tree
// is then converted to RapidJSON, resolving plain scalars the YAML 1.1 way, expanding
// aliases and merge keys under a node budget, and rejecting what JSON cannot hold.
#include "manifests/yaml_to_json.hpp"

#include <yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/encoding.hpp"

namespace kstate::manifests {

namespace {

enum class NodeKind : std::uint8_t { null, scalar, sequence, mapping, alias };
// Plain scalars without a tag are resolved (YAML 1.1 rules); quoted, block and "!"
// scalars are strings; anything else carries an explicit tag.
enum class TagKind : std::uint8_t { plain, non_plain, explicit_tag };

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// YamlNode::converted_key before conversion, and for `<<` keys.
constexpr int kKeyUnknown = -1;
// YamlNode::converted_key when the JSON key is the node's own text.
constexpr int kKeyIsText = -2;

}  // namespace

// One node of a document's tree. The tree is kept after conversion to answer "where
// was this value?", so it is compact: scalar and tag text live in the arena's one
// buffer, and children are linked (first child, next sibling) instead of each
// collection owning a vector. A mapping's children alternate key, value.
struct YamlNode {
  NodeKind kind = NodeKind::null;
  TagKind tag_kind = TagKind::plain;
  ScalarStyle style = ScalarStyle::plain;  // scalars only
  TextPosition position;
  std::uint32_t value_offset = 0;  // scalar text in YamlNodeArena::text
  std::uint32_t value_length = 0;
  std::uint32_t tag_offset = 0;  // only for TagKind::explicit_tag
  std::uint32_t tag_length = 0;
  int first_child = -1;
  int next_sibling = -1;
  int child_count = 0;
  int alias_target = -1;
  // A mapping key's JSON key once converted: kKeyUnknown, kKeyIsText (the key is the
  // node's own text, the common case), or an index into YamlNodeArena::converted_keys.
  int converted_key = kKeyUnknown;
};

struct YamlNodeArena {
  std::vector<YamlNode> nodes;
  std::string text;
  std::deque<std::string> converted_keys;  // a deque: views into it stay valid as it grows

  std::string_view value(const YamlNode& node) const {
    return std::string_view(text).substr(node.value_offset, node.value_length);
  }
  std::string_view tag(const YamlNode& node) const {
    return std::string_view(text).substr(node.tag_offset, node.tag_length);
  }
  const YamlNode& at(int index) const { return nodes[static_cast<std::size_t>(index)]; }
  // The JSON key of mapping key `node`, or nullopt when it was not converted.
  std::optional<std::string_view> converted_key(const YamlNode& node) const {
    if (node.converted_key == kKeyIsText) {
      return value(node);
    }
    if (node.converted_key >= 0) {
      return std::string_view(converted_keys[static_cast<std::size_t>(node.converted_key)]);
    }
    return std::nullopt;
  }
};

namespace {

// ---------------------------------------------------------------------------------
// Input checks

// go-yaml refuses input that is not UTF-8 or holds control characters; kubectl then
// fails the whole file, and so do we (it also keeps invalid bytes out of JSON).
bool check_characters(std::string_view text, YamlError& error) {
  int line = 1;
  int column = 1;
  std::size_t i = 0;
  auto fail = [&](const char* what) {
    error.position = {line, column};
    error.message = what;
    return false;
  };
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::uint32_t code_point = 0;
    std::size_t length = 1;
    if (byte < 0x80) {
      code_point = byte;
    } else if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
      code_point = byte & 0x1Fu;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      code_point = byte & 0x0Fu;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      code_point = byte & 0x07u;
    } else {
      return fail("invalid UTF-8 byte (manifests must be UTF-8 text)");
    }
    if (i + length > text.size()) {
      return fail("incomplete UTF-8 sequence (manifests must be UTF-8 text)");
    }
    for (std::size_t k = 1; k < length; ++k) {
      auto continuation = static_cast<unsigned char>(text[i + k]);
      if ((continuation & 0xC0u) != 0x80u) {
        return fail("invalid UTF-8 sequence (manifests must be UTF-8 text)");
      }
      code_point = (code_point << 6) | (continuation & 0x3Fu);
    }
    bool overlong = (length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000);
    bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
    if (overlong || surrogate || code_point > 0x10FFFF) {
      return fail("invalid UTF-8 sequence (manifests must be UTF-8 text)");
    }
    // YAML's printable set (c-printable); tab, LF, CR and NEL are allowed.
    bool printable = code_point == 0x09 || code_point == 0x0A || code_point == 0x0D ||
                     (code_point >= 0x20 && code_point <= 0x7E) || code_point == 0x85 ||
                     (code_point >= 0xA0 && code_point <= 0xD7FF) || (code_point >= 0xE000 && code_point <= 0xFFFD) ||
                     code_point >= 0x10000;
    if (!printable) {
      return fail("control characters are not allowed in YAML");
    }
    if (code_point == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return true;
}

// Go's encoding/json writes each byte of an invalid UTF-8 sequence as U+FFFD.
std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    auto byte = static_cast<unsigned char>(bytes[i]);
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (byte < 0x80) {
      length = 1;
    } else if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      if (byte == 0xE0) {
        low = 0xA0;
      } else if (byte == 0xED) {
        high = 0x9F;
      }
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      if (byte == 0xF0) {
        low = 0x90;
      } else if (byte == 0xF4) {
        high = 0x8F;
      }
    }
    bool valid = length > 0 && i + length <= bytes.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      auto continuation = static_cast<unsigned char>(bytes[i + k]);
      unsigned char lower_bound = k == 1 ? low : 0x80;
      unsigned char upper_bound = k == 1 ? high : 0xBF;
      valid = continuation >= lower_bound && continuation <= upper_bound;
    }
    if (valid) {
      out.append(bytes.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Building the tree from libyaml events

// Builds one tree per document from libyaml's events (libyaml is the C parser that
// go-yaml, and so kubectl, is a port of: same scanner, same syntax errors).
class TreeBuilder {
 public:
  TreeBuilder(const YamlLimits& limits, std::vector<YamlError>& errors) : limits_(limits), errors_(errors) {}

  struct Built {
    std::shared_ptr<YamlNodeArena> arena;
    int root = -1;  // -1: empty document
    TextPosition start;
  };
  std::vector<Built> documents;

  // Parses the whole stream; stops at the first syntax error or exceeded limit.
  void run(std::string_view text) {
    yaml_parser_t parser;
    if (yaml_parser_initialize(&parser) == 0) {
      errors_.push_back({{0, 0}, "cannot initialise the YAML parser"});
      return;
    }
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    bool done = false;
    while (!done) {
      yaml_event_t event;
      if (yaml_parser_parse(&parser, &event) == 0) {
        report_syntax_error(parser);
        break;
      }
      done = event.type == YAML_STREAM_END_EVENT;
      bool keep_going = handle(event);
      yaml_event_delete(&event);
      if (!keep_going) {
        break;
      }
    }
    yaml_parser_delete(&parser);
  }

 private:
  static TextPosition to_position(const yaml_mark_t& mark) {
    return {static_cast<int>(mark.line) + 1, static_cast<int>(mark.column) + 1};
  }
  static ScalarStyle style_of(yaml_scalar_style_t style) {
    switch (style) {
      case YAML_SINGLE_QUOTED_SCALAR_STYLE:
        return ScalarStyle::single_quoted;
      case YAML_DOUBLE_QUOTED_SCALAR_STYLE:
        return ScalarStyle::double_quoted;
      case YAML_LITERAL_SCALAR_STYLE:
        return ScalarStyle::literal;
      case YAML_FOLDED_SCALAR_STYLE:
        return ScalarStyle::folded;
      default:
        return ScalarStyle::plain;
    }
  }
  std::vector<YamlNode>& nodes() { return current_.arena->nodes; }

  void report_syntax_error(const yaml_parser_t& parser) {
    std::string message = "YAML syntax error: ";
    message += parser.problem != nullptr ? parser.problem : "unknown problem";
    if (parser.context != nullptr) {
      message += std::string(" (") + parser.context + " at line " + std::to_string(parser.context_mark.line + 1) +
                 ", column " + std::to_string(parser.context_mark.column + 1) + ")";
    }
    errors_.push_back({to_position(parser.problem_mark), std::move(message)});
  }

  bool handle(const yaml_event_t& event) {
    switch (event.type) {
      case YAML_DOCUMENT_START_EVENT:
        if (++file_documents_ > limits_.max_documents_per_file) {
          errors_.push_back({to_position(event.start_mark), "the file holds more than " +
                                                                std::to_string(limits_.max_documents_per_file) +
                                                                " documents (max_documents_per_file); split it"});
          return false;
        }
        current_ = Built{};
        current_.arena = std::make_shared<YamlNodeArena>();
        // The documents of one file tend to be alike: sized like the previous one, the
        // arena grows rarely (each growth moves it, ~10% of parsing a manifest).
        current_.arena->nodes.reserve(previous_nodes_);
        current_.arena->text.reserve(previous_text_);
        current_.start = to_position(event.start_mark);
        document_start_offset_ = event.start_mark.index;
        stack_.clear();
        last_child_.clear();
        anchors_.clear();
        return true;
      case YAML_DOCUMENT_END_EVENT:
        previous_nodes_ = current_.arena->nodes.size();
        previous_text_ = current_.arena->text.size();
        documents.push_back(std::move(current_));
        return true;
      case YAML_SCALAR_EVENT: {
        const auto& scalar = event.data.scalar;
        if (!check_size(event.start_mark, scalar.length)) {
          return false;
        }
        int index = add_node(event.start_mark, NodeKind::scalar);
        YamlNode& node = nodes()[static_cast<std::size_t>(index)];
        std::string& text = current_.arena->text;
        node.value_offset = static_cast<std::uint32_t>(text.size());
        node.value_length = static_cast<std::uint32_t>(scalar.length);
        text.append(reinterpret_cast<const char*>(scalar.value), scalar.length);
        if (scalar.tag != nullptr && std::string_view(reinterpret_cast<const char*>(scalar.tag)) != "!") {
          set_tag(node, scalar.tag);
        } else {
          // go-yaml: untagged plain scalars are resolved; quoted, block and "!" ones are strings.
          node.tag_kind =
              scalar.tag == nullptr && scalar.style == YAML_PLAIN_SCALAR_STYLE ? TagKind::plain : TagKind::non_plain;
        }
        node.style = style_of(scalar.style);
        remember_anchor(scalar.anchor, index);
        return true;
      }
      case YAML_ALIAS_EVENT: {
        if (!check_size(event.start_mark, 0)) {
          return false;
        }
        int index = add_node(event.start_mark, NodeKind::alias);
        std::string name(reinterpret_cast<const char*>(event.data.alias.anchor));
        auto found = anchors_.find(name);
        if (found == anchors_.end()) {
          errors_.push_back({to_position(event.start_mark), "unknown anchor '" + name + "' referenced"});
          return false;
        }
        nodes()[static_cast<std::size_t>(index)].alias_target = found->second;
        return true;
      }
      case YAML_SEQUENCE_START_EVENT:
        return open_collection(event.start_mark, NodeKind::sequence, event.data.sequence_start.tag,
                               event.data.sequence_start.anchor);
      case YAML_MAPPING_START_EVENT:
        return open_collection(event.start_mark, NodeKind::mapping, event.data.mapping_start.tag,
                               event.data.mapping_start.anchor);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        if (!stack_.empty()) {
          stack_.pop_back();
          last_child_.pop_back();
        }
        return true;
      default:
        return true;
    }
  }

  void remember_anchor(const yaml_char_t* anchor, int index) {
    if (anchor != nullptr) {
      anchors_[reinterpret_cast<const char*>(anchor)] = index;
    }
  }

  // Called once before each node is added.
  bool check_size(const yaml_mark_t& mark, std::size_t extra) {
    if (++file_nodes_ > limits_.max_nodes_per_file) {
      errors_.push_back({to_position(mark), "the file holds more than " + std::to_string(limits_.max_nodes_per_file) +
                                                " YAML nodes (max_nodes_per_file); split it"});
      return false;
    }
    if (mark.index + extra - document_start_offset_ > limits_.max_document_bytes) {
      errors_.push_back({to_position(mark), "document is larger than the limit of " +
                                                std::to_string(limits_.max_document_bytes) +
                                                " bytes (max_document_bytes)"});
      return false;
    }
    return true;
  }

  int add_node(const yaml_mark_t& mark, NodeKind kind) {
    auto index = static_cast<int>(nodes().size());
    YamlNode& node = nodes().emplace_back();
    node.kind = kind;
    node.position = to_position(mark);
    if (!stack_.empty()) {
      YamlNode& parent = nodes()[static_cast<std::size_t>(stack_.back())];
      ++parent.child_count;
      int& last = last_child_.back();
      if (last < 0) {
        parent.first_child = index;
      } else {
        nodes()[static_cast<std::size_t>(last)].next_sibling = index;
      }
      last = index;
    } else if (current_.root < 0) {
      current_.root = index;
    }
    return index;
  }

  void set_tag(YamlNode& node, const yaml_char_t* tag) {
    std::string_view name(reinterpret_cast<const char*>(tag));
    std::string& text = current_.arena->text;
    node.tag_kind = TagKind::explicit_tag;
    node.tag_offset = static_cast<std::uint32_t>(text.size());
    node.tag_length = static_cast<std::uint32_t>(name.size());
    text.append(name);
  }

  bool open_collection(const yaml_mark_t& mark, NodeKind kind, const yaml_char_t* tag, const yaml_char_t* anchor) {
    if (!check_size(mark, 0)) {
      return false;
    }
    if (static_cast<int>(stack_.size()) >= limits_.max_nesting_depth) {
      errors_.push_back({to_position(mark), "nesting is deeper than the limit of " +
                                                std::to_string(limits_.max_nesting_depth) +
                                                " levels (max_nesting_depth)"});
      return false;
    }
    int index = add_node(mark, kind);
    if (tag != nullptr) {
      set_tag(nodes()[static_cast<std::size_t>(index)], tag);
    }
    remember_anchor(anchor, index);
    stack_.push_back(index);
    last_child_.push_back(-1);
    return true;
  }

  const YamlLimits& limits_;
  std::vector<YamlError>& errors_;
  Built current_;
  std::size_t document_start_offset_ = 0;
  std::vector<int> stack_;       // the open collections, outermost first
  std::vector<int> last_child_;  // the last child of each, -1 before the first
  std::size_t previous_nodes_ = 0;
  std::size_t previous_text_ = 0;
  std::unordered_map<std::string, int> anchors_;
  std::size_t file_documents_ = 0;

 public:
  std::size_t file_nodes_ = 0;  // so far; the converter adds what aliases materialise
};

// ---------------------------------------------------------------------------------
// Scalar resolution (go-yaml v2 resolve.go semantics)

struct Scalar {
  enum class Type { string, null_value, boolean, int64, uint64, float64 } type = Type::string;
  std::string_view text;  // the string (into the arena, or into storage the converter keeps)
  bool boolean = false;
  std::int64_t int64 = 0;
  std::uint64_t uint64 = 0;
  double float64 = 0;
};

const char* short_tag(Scalar::Type type) {
  switch (type) {
    case Scalar::Type::string:
      return "!!str";
    case Scalar::Type::null_value:
      return "!!null";
    case Scalar::Type::boolean:
      return "!!bool";
    case Scalar::Type::int64:
    case Scalar::Type::uint64:
      return "!!int";
    case Scalar::Type::float64:
      return "!!float";
  }
  return "!!str";
}

// strconv.ParseUint(s, 0, 64) for an unsigned body (no sign).
bool go_parse_uint(std::string_view s, std::uint64_t& out) {
  if (s.empty()) {
    return false;
  }
  unsigned base = 10;
  if (s[0] == '0') {
    if (s.size() >= 3 && (s[1] == 'b' || s[1] == 'B')) {
      base = 2;
      s.remove_prefix(2);
    } else if (s.size() >= 3 && (s[1] == 'o' || s[1] == 'O')) {
      base = 8;
      s.remove_prefix(2);
    } else if (s.size() >= 3 && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  std::uint64_t value = 0;
  for (char c : s) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'z') {
      digit = static_cast<unsigned>(c - 'a') + 10;
    } else if (c >= 'A' && c <= 'Z') {
      digit = static_cast<unsigned>(c - 'A') + 10;
    } else {
      return false;
    }
    if (digit >= base) {
      return false;
    }
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / base) {
      return false;  // out of range
    }
    value = value * base + digit;
  }
  out = value;
  return true;
}

// strconv.ParseInt(s, 0, 64).
bool go_parse_int(std::string_view s, std::int64_t& out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::uint64_t magnitude = 0;
  if (!go_parse_uint(s, magnitude)) {
    return false;
  }
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
  if (negative) {
    if (magnitude > kLimit) {
      return false;
    }
    out = magnitude == kLimit ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(magnitude);
  } else {
    if (magnitude >= kLimit) {
      return false;
    }
    out = static_cast<std::int64_t>(magnitude);
  }
  return true;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool is_yaml_style_float(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t digits = i;
    while (i < s.size() && is_digit(s[i])) {
      ++i;
    }
    if (i == digits) {
      return false;
    }
  } else {
    std::size_t digits = i;
    while (i < s.size() && is_digit(s[i])) {
      ++i;
    }
    if (i == digits) {
      return false;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && is_digit(s[i])) {
        ++i;
      }
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    std::size_t digits = i;
    while (i < s.size() && is_digit(s[i])) {
      ++i;
    }
    if (i == digits) {
      return false;
    }
  }
  return i == s.size();
}

// strconv.ParseFloat for the decimal forms above: overflow is an error, underflow is not.
bool parse_decimal_float(const std::string& s, double& out) {
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isinf(value)) {
    return false;
  }
  out = value;
  return true;
}

struct MapEntry {
  std::string_view text;
  Scalar::Type type;
  bool boolean;
  double float64;
};

const MapEntry* lookup_resolve_map(std::string_view text) {
  static const std::array<MapEntry, 39> kEntries = {{
      {"y", Scalar::Type::boolean, true, 0},
      {"Y", Scalar::Type::boolean, true, 0},
      {"yes", Scalar::Type::boolean, true, 0},
      {"Yes", Scalar::Type::boolean, true, 0},
      {"YES", Scalar::Type::boolean, true, 0},
      {"true", Scalar::Type::boolean, true, 0},
      {"True", Scalar::Type::boolean, true, 0},
      {"TRUE", Scalar::Type::boolean, true, 0},
      {"on", Scalar::Type::boolean, true, 0},
      {"On", Scalar::Type::boolean, true, 0},
      {"ON", Scalar::Type::boolean, true, 0},
      {"n", Scalar::Type::boolean, false, 0},
      {"N", Scalar::Type::boolean, false, 0},
      {"no", Scalar::Type::boolean, false, 0},
      {"No", Scalar::Type::boolean, false, 0},
      {"NO", Scalar::Type::boolean, false, 0},
      {"false", Scalar::Type::boolean, false, 0},
      {"False", Scalar::Type::boolean, false, 0},
      {"FALSE", Scalar::Type::boolean, false, 0},
      {"off", Scalar::Type::boolean, false, 0},
      {"Off", Scalar::Type::boolean, false, 0},
      {"OFF", Scalar::Type::boolean, false, 0},
      {"", Scalar::Type::null_value, false, 0},
      {"~", Scalar::Type::null_value, false, 0},
      {"null", Scalar::Type::null_value, false, 0},
      {"Null", Scalar::Type::null_value, false, 0},
      {"NULL", Scalar::Type::null_value, false, 0},
      {".nan", Scalar::Type::float64, false, std::numeric_limits<double>::quiet_NaN()},
      {".NaN", Scalar::Type::float64, false, std::numeric_limits<double>::quiet_NaN()},
      {".NAN", Scalar::Type::float64, false, std::numeric_limits<double>::quiet_NaN()},
      {".inf", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {".Inf", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {".INF", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {"+.inf", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {"+.Inf", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {"+.INF", Scalar::Type::float64, false, std::numeric_limits<double>::infinity()},
      {"-.inf", Scalar::Type::float64, false, -std::numeric_limits<double>::infinity()},
      {"-.Inf", Scalar::Type::float64, false, -std::numeric_limits<double>::infinity()},
      {"-.INF", Scalar::Type::float64, false, -std::numeric_limits<double>::infinity()},
  }};
  for (const auto& entry : kEntries) {
    if (entry.text == text) {
      return &entry;
    }
  }
  return nullptr;
}

// The value of an untagged plain scalar.
Scalar resolve_plain(std::string_view in) {
  Scalar result;
  result.text = in;
  char hint = 'N';  // empty input: looked up in the map (null)
  if (!in.empty()) {
    char first = in[0];
    if (first == '+' || first == '-') {
      hint = 'S';
    } else if (is_digit(first)) {
      hint = 'D';
    } else if (first == '.') {
      hint = '.';
    } else if (std::string_view("yYnNtTfFoO~").find(first) != std::string_view::npos) {
      hint = 'M';
    } else {
      return result;  // a string
    }
  }
  if (const MapEntry* entry = lookup_resolve_map(in)) {
    result.type = entry->type;
    result.boolean = entry->boolean;
    result.float64 = entry->float64;
    return result;
  }
  if (hint == '.') {
    double value = 0;
    if (is_yaml_style_float(in) && parse_decimal_float(std::string(in), value)) {
      result.type = Scalar::Type::float64;
      result.float64 = value;
    }
    return result;
  }
  if (hint == 'D' || hint == 'S') {
    std::string plain;
    plain.reserve(in.size());
    for (char c : in) {
      if (c != '_') {
        plain += c;
      }
    }
    if (go_parse_int(plain, result.int64)) {
      result.type = Scalar::Type::int64;
      return result;
    }
    if (go_parse_uint(plain, result.uint64)) {
      result.type = Scalar::Type::uint64;
      return result;
    }
    double value = 0;
    if (is_yaml_style_float(plain) && parse_decimal_float(plain, value)) {
      result.type = Scalar::Type::float64;
      result.float64 = value;
      return result;
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------
// Tree -> JSON

class ConversionError {
 public:
  ConversionError(TextPosition position, std::string message) : position_(position), message_(std::move(message)) {}
  TextPosition position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  TextPosition position_;
  std::string message_;
};

// strconv.FormatFloat(key, 'g', -1, 32), which sigs.k8s.io/yaml uses for float keys.
std::string format_float_key(double value) {
  if (std::isnan(value)) {
    return ".nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? ".inf" : "-.inf";
  }
  // Go narrows to float32 first; beyond its range that is +-Inf, printed as .inf.
  if (std::fabs(value) > static_cast<double>(std::numeric_limits<float>::max())) {
    return value > 0 ? ".inf" : "-.inf";
  }
  auto narrowed = static_cast<float>(value);
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), narrowed, std::chars_format::scientific);
  if (ec != std::errc()) {
    return std::to_string(value);
  }
  std::string_view scientific(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
  bool negative = !scientific.empty() && scientific[0] == '-';
  if (negative) {
    scientific.remove_prefix(1);
  }
  std::size_t e = scientific.find('e');
  if (e == std::string_view::npos || e + 1 >= scientific.size()) {
    return std::to_string(value);
  }
  std::string digits;
  for (char c : scientific.substr(0, e)) {
    if (c != '.') {
      digits += c;
    }
  }
  int exponent = 0;
  std::from_chars(scientific.data() + e + 1 + (scientific[e + 1] == '+' ? 1 : 0), scientific.data() + scientific.size(),
                  exponent);
  if (digits == "0") {
    return negative ? "-0" : "0";
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 6) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += exponent < 0 ? "e-" : "e+";
    int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) {
      out += '0';
    }
    out += std::to_string(magnitude);
    return out;
  }
  int point = exponent + 1;  // digits before the decimal point
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-point), '0');
    out += digits;
  } else if (static_cast<std::size_t>(point) >= digits.size()) {
    out += digits;
    out.append(static_cast<std::size_t>(point) - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<std::size_t>(point));
    out += '.';
    out += digits.substr(static_cast<std::size_t>(point));
  }
  return out;
}

// "`.nan` is NaN, which JSON cannot represent ..." for a float JSON cannot hold.
std::string unrepresentable_message(const std::string& written, double value) {
  std::string shown = std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf");
  return "`" + written + "` is " + shown + ", which JSON cannot represent (kubectl: json: unsupported value: " + shown +
         "); quote it to keep a string";
}

// Writes a resolved scalar to a RapidJSON handler as kubectl's JSON holds it; false
// (nothing written) for NaN and infinities, which JSON has no number for.
template <typename Handler>
bool write_scalar(Handler& out, const Scalar& scalar) {
  switch (scalar.type) {
    case Scalar::Type::string:
      out.String(scalar.text.data(), static_cast<rapidjson::SizeType>(scalar.text.size()), true);
      return true;
    case Scalar::Type::null_value:
      out.Null();
      return true;
    case Scalar::Type::boolean:
      out.Bool(scalar.boolean);
      return true;
    case Scalar::Type::int64:
      out.Int64(scalar.int64);
      return true;
    case Scalar::Type::uint64:
      out.Uint64(scalar.uint64);
      return true;
    case Scalar::Type::float64:
      break;
  }
  const double value = scalar.float64;
  if (std::isnan(value) || std::isinf(value)) {
    return false;
  }
  // Go's encoding/json prints integral floats without a fraction (1e3 -> 1000).
  if (value == std::floor(value)) {
    if (value >= -9.2e18 && value <= 9.2e18) {
      out.Int64(static_cast<std::int64_t>(value));
      return true;
    }
    if (value > 0 && value < 1.8e19) {
      out.Uint64(static_cast<std::uint64_t>(value));
      return true;
    }
  }
  out.Double(value);
  return true;
}

// A RapidJSON handler that sets one value (write_scalar into a json::Value).
struct ValueSetter {
  json::Value& out;
  json::Allocator& allocator;
  void String(const char* text, rapidjson::SizeType length, bool /*copy*/) { out.SetString(text, length, allocator); }
  void Null() { out.SetNull(); }
  void Bool(bool value) { out.SetBool(value); }
  void Int64(std::int64_t value) { out.SetInt64(value); }
  void Uint64(std::uint64_t value) { out.SetUint64(value); }
  void Double(double value) { out.SetDouble(value); }
};

// Emits a document's JSON as RapidJSON SAX events into a json::Document (through
// Document::Populate), so that each object and array is allocated once at its final
// size and no intermediate tree of values is built. Mappings with merge keys, where
// later entries override earlier ones, are first gathered into scratch values.
class Converter {
 public:
  // `file_nodes`: the file's nodes so far, parsed and materialised (max_nodes_per_file).
  Converter(YamlNodeArena& arena, const YamlLimits& limits, std::size_t& file_nodes)
      : arena_(arena), limits_(limits), file_nodes_(file_nodes) {
    in_progress_.assign(arena.nodes.size(), false);
  }

  // The document's root as a value of `document`; throws ConversionError.
  void convert(int root, json::Document& document) {
    auto generator = [&](json::Document& handler) {
      out_ = &handler;
      emit(root, 1);
      return true;
    };
    document.Populate(generator);
  }

 private:
  using Handler = json::Document;  // RapidJSON's Handler concept, implemented by Document

  struct Entry {
    std::string key;
    json::Value value;
    bool explicit_key = false;
  };

  YamlNode& at(int index) { return arena_.nodes[static_cast<std::size_t>(index)]; }
  std::string_view text_of(const YamlNode& node) const { return arena_.value(node); }
  std::string value_text(const YamlNode& node) const { return std::string(arena_.value(node)); }

  void emit(int index, int depth) {
    const YamlNode& node = at(index);
    if (depth > limits_.max_nesting_depth) {
      throw ConversionError(node.position, "nesting is deeper than the limit of " +
                                               std::to_string(limits_.max_nesting_depth) +
                                               " levels after expanding aliases (max_nesting_depth)");
    }
    count_node();
    switch (node.kind) {
      case NodeKind::null:
        out_->Null();
        return;
      case NodeKind::alias:
        emit_alias(index, depth);
        return;
      case NodeKind::scalar:
        emit_scalar(node);
        return;
      case NodeKind::sequence: {
        guard_recursion(index);
        out_->StartArray();
        for (int child = node.first_child; child >= 0; child = at(child).next_sibling) {
          emit(child, depth + 1);
        }
        out_->EndArray(static_cast<rapidjson::SizeType>(node.child_count));
        in_progress_[static_cast<std::size_t>(index)] = false;
        return;
      }
      case NodeKind::mapping:
        emit_mapping(index, depth);
        return;
    }
  }

  void count_node() {
    if (expanding_ == 0) {
      return;  // (a parsed node: counted by the tree builder)
    }
    if (++expanded_nodes_ > limits_.max_alias_expanded_nodes) {
      throw ConversionError(expansion_position_, "aliases expand to more than " +
                                                     std::to_string(limits_.max_alias_expanded_nodes) +
                                                     " nodes (max_alias_expanded_nodes)");
    }
    if (++file_nodes_ > limits_.max_nodes_per_file) {
      throw ConversionError(expansion_position_, "with what aliases expand to, the file holds more than " +
                                                     std::to_string(limits_.max_nodes_per_file) +
                                                     " nodes (max_nodes_per_file); split it");
    }
  }

  void guard_recursion(int index) {
    if (in_progress_[static_cast<std::size_t>(index)]) {
      throw ConversionError(at(index).position, "alias refers to a node that contains it (recursive alias)");
    }
    in_progress_[static_cast<std::size_t>(index)] = true;
  }

  int resolve_alias(int index) {
    const YamlNode& node = at(index);
    if (node.kind != NodeKind::alias) {
      return index;
    }
    if (node.alias_target < 0) {
      throw ConversionError(node.position, "unknown anchor");
    }
    return node.alias_target;
  }

  // Errors about expansion point at the outermost alias being expanded: the one the
  // user wrote in the document at hand.
  void begin_expansion(const YamlNode& alias) {
    if (expanding_++ == 0) {
      expansion_position_ = alias.position;
    }
  }

  void emit_alias(int index, int depth) {
    int target = resolve_alias(index);
    if (in_progress_[static_cast<std::size_t>(target)]) {
      throw ConversionError(at(index).position, "alias refers to a node that contains it (recursive alias)");
    }
    begin_expansion(at(index));
    emit(target, depth);
    --expanding_;
  }

  void emit_scalar(const YamlNode& node) {
    Scalar scalar = resolve_scalar(node);
    if (!write_scalar(*out_, scalar)) {
      throw ConversionError(node.position, unrepresentable_message(value_text(node), scalar.float64));
    }
  }

  // Text the converter made (decoded !!binary, keys written as numbers), kept while it
  // runs so that Scalar::text and keys can point at it.
  std::string_view keep(std::string text) { return made_text_.emplace_back(std::move(text)); }

  Scalar resolve_scalar(const YamlNode& node) {
    Scalar result;
    result.text = text_of(node);
    if (node.kind == NodeKind::null) {
      result.type = Scalar::Type::null_value;
      return result;
    }
    if (node.tag_kind == TagKind::non_plain) {
      return result;
    }
    if (node.tag_kind == TagKind::plain) {
      return resolve_plain(result.text);
    }
    std::string_view tag = arena_.tag(node);
    if (tag.substr(0, kTagPrefix.size()) != kTagPrefix) {
      return result;  // a local tag (!foo): go-yaml keeps the text
    }
    tag.remove_prefix(kTagPrefix.size());
    if (tag == "str" || tag == "timestamp") {
      return result;
    }
    if (tag == "binary") {
      // As go-yaml: Go's base64.StdEncoding after dropping line breaks.
      auto decoded = encoding::base64_decode(result.text, encoding::Base64Spacing::line_breaks);
      if (!decoded) {
        throw ConversionError(node.position, "!!binary value contains invalid base64 data");
      }
      result.text = keep(to_valid_utf8(*decoded));
      return result;
    }
    if (tag != "bool" && tag != "int" && tag != "float" && tag != "null") {
      return result;  // other tags (!!map on a scalar, ...) are not resolved by go-yaml
    }
    Scalar resolved = resolve_plain(result.text);
    std::string wanted = "!!" + std::string(tag);
    if (wanted == short_tag(resolved.type)) {
      return resolved;
    }
    if (tag == "float" && resolved.type == Scalar::Type::int64) {
      resolved.type = Scalar::Type::float64;
      resolved.float64 = static_cast<double>(resolved.int64);
      return resolved;
    }
    throw ConversionError(node.position, std::string("cannot decode ") + short_tag(resolved.type) + " `" +
                                             value_text(node) + "` as a " + wanted);
  }

  // The JSON key of mapping key `key_index`, also recorded in the tree for YamlLocator.
  std::string_view convert_key(int key_index) {
    int index = resolve_alias(key_index);
    const YamlNode& node = at(index);
    if (node.kind == NodeKind::sequence || node.kind == NodeKind::mapping) {
      throw ConversionError(at(key_index).position, std::string("invalid map key: a ") +
                                                        (node.kind == NodeKind::sequence ? "sequence" : "mapping") +
                                                        " cannot be a JSON key");
    }
    Scalar scalar = resolve_scalar(node);
    std::string_view key;
    switch (scalar.type) {
      case Scalar::Type::string:
        key = scalar.text;
        break;
      case Scalar::Type::boolean:
        key = scalar.boolean ? "true" : "false";
        break;
      case Scalar::Type::int64:
        key = keep(std::to_string(scalar.int64));
        break;
      case Scalar::Type::float64:
        key = keep(format_float_key(scalar.float64));
        break;
      case Scalar::Type::null_value:
        throw ConversionError(at(key_index).position,
                              "unsupported map key: null (kubectl rejects null keys; quote it to use \"" +
                                  value_text(node) + "\" as a key)");
      case Scalar::Type::uint64:
        throw ConversionError(at(key_index).position, "unsupported map key of type uint64: " + value_text(node));
    }
    YamlNode& key_node = at(key_index);
    if (key_node.converted_key != kKeyUnknown) {
      // Converted before: the mapping is expanded again through an alias.
    } else if (key_node.kind == NodeKind::scalar && key == text_of(key_node)) {
      key_node.converted_key = kKeyIsText;
    } else {
      key_node.converted_key = static_cast<int>(arena_.converted_keys.size());
      arena_.converted_keys.emplace_back(key);
    }
    return key;
  }

  bool is_merge_key(const YamlNode& node) const {
    return node.kind == NodeKind::scalar && text_of(node) == "<<" &&
           (node.tag_kind == TagKind::plain || arena_.tag(node) == "tag:yaml.org,2002:merge");
  }

  void emit_mapping(int index, int depth) {
    guard_recursion(index);
    const YamlNode& mapping = at(index);
    for (int key = mapping.first_child; key >= 0; key = at(at(key).next_sibling).next_sibling) {
      if (is_merge_key(at(key))) {
        emit_merged_mapping(index, depth);
        in_progress_[static_cast<std::size_t>(index)] = false;
        return;
      }
    }
    // The keys of the mappings being written, innermost last, to find duplicates.
    const std::size_t first_key = keys_.size();
    std::unordered_set<std::string_view> many_keys;  // used past a few keys
    constexpr std::size_t kLinearSearchLimit = 8;
    out_->StartObject();
    rapidjson::SizeType members = 0;
    for (int key_index = mapping.first_child; key_index >= 0;) {
      const int value_index = at(key_index).next_sibling;
      std::string_view key = convert_key(key_index);
      bool duplicate = false;
      if (keys_.size() - first_key < kLinearSearchLimit) {
        duplicate = std::find(keys_.begin() + static_cast<std::ptrdiff_t>(first_key), keys_.end(), key) != keys_.end();
      } else {
        if (many_keys.empty()) {
          many_keys.insert(keys_.begin() + static_cast<std::ptrdiff_t>(first_key), keys_.end());
        }
        duplicate = !many_keys.insert(key).second;
      }
      if (duplicate) {
        throw ConversionError(at(key_index).position, "duplicate key \"" + std::string(key) + "\" in this mapping");
      }
      keys_.push_back(key);
      out_->Key(key.data(), static_cast<rapidjson::SizeType>(key.size()), true);
      emit(value_index, depth + 1);
      ++members;
      key_index = at(value_index).next_sibling;
    }
    keys_.resize(first_key);
    out_->EndObject(members);
    in_progress_[static_cast<std::size_t>(index)] = false;
  }

  // ----- mappings with merge keys (`<<`): gathered as values first, then written

  // The value of node `index` as a value in the scratch pool.
  json::Value capture(int index, int depth) {
    json::Document captured(&scratch_);
    Handler* outer = out_;
    auto generator = [&](json::Document& handler) {
      out_ = &handler;
      emit(index, depth);
      return true;
    };
    try {
      captured.Populate(generator);
    } catch (...) {
      out_ = outer;
      throw;
    }
    out_ = outer;
    return json::Value(std::move(static_cast<json::Value&>(captured)));
  }

  static Entry* find_entry(std::vector<Entry>& entries, std::unordered_map<std::string, std::size_t>& index,
                           const std::string& key) {
    if (entries.size() > 8) {
      if (index.empty()) {
        for (std::size_t i = 0; i < entries.size(); ++i) {
          index.emplace(entries[i].key, i);
        }
      }
      auto found = index.find(key);
      return found == index.end() ? nullptr : &entries[found->second];
    }
    for (auto& entry : entries) {
      if (entry.key == key) {
        return &entry;
      }
    }
    return nullptr;
  }

  static void put(std::vector<Entry>& entries, std::unordered_map<std::string, std::size_t>& index, std::string key,
                  json::Value value, bool explicit_key) {
    if (Entry* existing = find_entry(entries, index, key)) {
      existing->value = std::move(value);
      existing->explicit_key = existing->explicit_key || explicit_key;
      return;
    }
    if (!index.empty()) {
      index.emplace(key, entries.size());
    }
    entries.push_back(Entry{std::move(key), std::move(value), explicit_key});
  }

  // Applies one merge source (a mapping, possibly through an alias) onto entries.
  void merge_mapping(int source_index, int depth, std::vector<Entry>& entries,
                     std::unordered_map<std::string, std::size_t>& index) {
    int target = resolve_alias(source_index);
    if (at(target).kind != NodeKind::mapping) {
      throw ConversionError(at(source_index).position, "map merge requires map or sequence of maps as the value");
    }
    bool through_alias = target != source_index;
    if (through_alias) {
      begin_expansion(at(source_index));
    }
    json::Value merged = capture(target, depth);
    if (through_alias) {
      --expanding_;
    }
    for (auto& member : merged.GetObject()) {
      put(entries, index, std::string(member.name.GetString(), member.name.GetStringLength()), std::move(member.value),
          false);
    }
  }

  void emit_merged_mapping(int index, int depth) {
    std::vector<Entry> entries;
    entries.reserve(static_cast<std::size_t>(at(index).child_count) / 2);
    std::unordered_map<std::string, std::size_t> lookup;
    for (int key_index = at(index).first_child; key_index >= 0;) {
      const int value_index = at(key_index).next_sibling;
      const int next_key = at(value_index).next_sibling;
      if (is_merge_key(at(key_index))) {
        int value_target = resolve_alias(value_index);
        if (at(value_target).kind == NodeKind::sequence) {
          std::vector<int> sources;
          for (int source = at(value_target).first_child; source >= 0; source = at(source).next_sibling) {
            sources.push_back(source);
          }
          if (value_target != value_index) {
            begin_expansion(at(value_index));
          }
          // Earlier sources take precedence, so apply them last.
          for (auto source = sources.rbegin(); source != sources.rend(); ++source) {
            merge_mapping(*source, depth + 1, entries, lookup);
          }
          if (value_target != value_index) {
            --expanding_;
          }
        } else {
          merge_mapping(value_index, depth + 1, entries, lookup);
        }
        key_index = next_key;
        continue;
      }
      std::string key(convert_key(key_index));
      if (Entry* existing = find_entry(entries, lookup, key); existing != nullptr && existing->explicit_key) {
        throw ConversionError(at(key_index).position, "duplicate key \"" + key + "\" in this mapping");
      }
      json::Value value = capture(value_index, depth + 1);
      put(entries, lookup, std::move(key), std::move(value), true);
      key_index = next_key;
    }
    out_->StartObject();
    for (auto& entry : entries) {
      out_->Key(entry.key.data(), static_cast<rapidjson::SizeType>(entry.key.size()), true);
      entry.value.Accept(*out_);
    }
    out_->EndObject(static_cast<rapidjson::SizeType>(entries.size()));
  }

  YamlNodeArena& arena_;
  const YamlLimits& limits_;
  std::size_t& file_nodes_;
  Handler* out_ = nullptr;
  std::vector<bool> in_progress_;
  std::vector<std::string_view> keys_;
  std::deque<std::string> made_text_;  // a deque: views into it stay valid as it grows
  json::Allocator scratch_;            // values of mappings with merge keys
  int expanding_ = 0;
  std::size_t expanded_nodes_ = 0;
  TextPosition expansion_position_;
};

}  // namespace

TextPosition YamlLocator::key_position(std::string_view key) const {
  if (!arena_ || node_ < 0) {
    return position_;
  }
  const YamlNode& node = arena_->at(node_);
  for (int key_index = node.first_child; key_index >= 0;) {
    const YamlNode& key_node = arena_->at(key_index);
    if (arena_->converted_key(key_node) == key) {
      return key_node.position;
    }
    key_index = key_node.next_sibling < 0 ? -1 : arena_->at(key_node.next_sibling).next_sibling;
  }
  return position_;
}

YamlLocator YamlLocator::child(std::string_view key) const {
  if (!arena_ || node_ < 0) {
    return *this;
  }
  const YamlNode* node = &arena_->at(node_);
  if (node->kind == NodeKind::alias && node->alias_target >= 0) {
    node = &arena_->at(node->alias_target);
  }
  if (node->kind != NodeKind::mapping) {
    return YamlLocator(arena_, -1, position_);
  }
  for (int key_index = node->first_child; key_index >= 0;) {
    const YamlNode& key_node = arena_->at(key_index);
    const int value = key_node.next_sibling;
    if (value < 0) {
      break;
    }
    if (arena_->converted_key(key_node) == key) {
      return YamlLocator(arena_, value, arena_->at(value).position);
    }
    key_index = arena_->at(value).next_sibling;
  }
  return YamlLocator(arena_, -1, position_);
}

YamlLocator YamlLocator::item(std::size_t index) const {
  if (!arena_ || node_ < 0) {
    return *this;
  }
  const YamlNode* node = &arena_->at(node_);
  if (node->kind == NodeKind::alias && node->alias_target >= 0) {
    node = &arena_->at(node->alias_target);
  }
  if (node->kind != NodeKind::sequence || index >= static_cast<std::size_t>(node->child_count)) {
    return YamlLocator(arena_, -1, position_);
  }
  int child = node->first_child;
  for (std::size_t i = 0; i < index; ++i) {
    child = arena_->at(child).next_sibling;
  }
  return YamlLocator(arena_, child, arena_->at(child).position);
}

std::optional<ScalarSource> YamlLocator::scalar() const {
  if (!arena_ || node_ < 0) {
    return std::nullopt;
  }
  const YamlNode* node = &arena_->at(node_);
  if (node->kind == NodeKind::alias && node->alias_target >= 0) {
    node = &arena_->at(node->alias_target);
  }
  if (node->kind != NodeKind::scalar) {
    return std::nullopt;
  }
  return ScalarSource{arena_->value(*node), node->style, node->tag_kind == TagKind::explicit_tag};
}

bool plain_scalar_value(std::string_view text, json::Value& out, json::Allocator& allocator, std::string& error) {
  const Scalar scalar = resolve_plain(text);
  ValueSetter setter{out, allocator};
  if (!write_scalar(setter, scalar)) {
    error = unrepresentable_message(std::string(text), scalar.float64);
    return false;
  }
  return true;
}

YamlStream parse_yaml_documents(std::string_view text, const YamlLimits& limits) {
  YamlStream stream;
  YamlError character_error;
  if (!check_characters(text, character_error)) {
    stream.errors.push_back(std::move(character_error));
    return stream;
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    text.remove_prefix(3);  // UTF-8 byte order mark
  }
  TreeBuilder builder(limits, stream.errors);
  builder.run(text);
  stream.documents.reserve(builder.documents.size());
  for (auto& built : builder.documents) {
    YamlDocument document;
    document.start = built.start;
    if (built.root < 0) {
      document.json.SetNull();
      stream.documents.push_back(std::move(document));
      continue;
    }
    try {
      Converter converter(*built.arena, limits, builder.file_nodes_);
      converter.convert(built.root, document.json);
    } catch (const ConversionError& error) {
      stream.errors.push_back({error.position(), error.message()});
      continue;
    }
    document.locator = YamlLocator(built.arena, built.root, built.arena->at(built.root).position);
    stream.documents.push_back(std::move(document));
  }
  return stream;
}

}  // namespace kstate::manifests
