// YAML -> JSON typing, table-driven from data/yaml_to_json/cases.json: every case was
// run through kubectl (see data/README.md), so these tests pin kstate to what kubectl
// sends for the same text, and list the few places where kstate deliberately differs.
#include "manifests/yaml_to_json.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "core/json.hpp"

namespace yaml_to_json_test {

using kstate::manifests::parse_yaml_documents;
using kstate::manifests::YamlLimits;
namespace json = kstate::json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  std::stringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

// Equal values of the same JSON type; integers must stay integers (1000, not 1000.0).
bool same_json(const json::Value& expected, const json::Value& actual, std::string& why) {
  if (expected.IsNumber() && actual.IsNumber()) {
    bool expected_integer = expected.IsInt64() || expected.IsUint64();
    bool actual_integer = actual.IsInt64() || actual.IsUint64();
    if (expected_integer != actual_integer) {
      why = "integer/float mismatch: expected " + json::dump(expected) + ", got " + json::dump(actual);
      return false;
    }
    if (!(expected == actual)) {
      why = "expected " + json::dump(expected) + ", got " + json::dump(actual);
      return false;
    }
    return true;
  }
  if (expected.GetType() != actual.GetType()) {
    why = "type mismatch: expected " + json::dump(expected) + ", got " + json::dump(actual);
    return false;
  }
  if (expected.IsObject()) {
    if (expected.MemberCount() != actual.MemberCount()) {
      why = "member count: expected " + json::dump(expected) + ", got " + json::dump(actual);
      return false;
    }
    for (const auto& member : expected.GetObject()) {
      auto found = actual.FindMember(member.name);
      if (found == actual.MemberEnd()) {
        why = "missing key " + std::string(member.name.GetString()) + " in " + json::dump(actual);
        return false;
      }
      if (!same_json(member.value, found->value, why)) {
        return false;
      }
    }
    return true;
  }
  if (expected.IsArray()) {
    if (expected.Size() != actual.Size()) {
      why = "array size: expected " + json::dump(expected) + ", got " + json::dump(actual);
      return false;
    }
    for (rapidjson::SizeType i = 0; i < expected.Size(); ++i) {
      if (!same_json(expected[i], actual[i], why)) {
        return false;
      }
    }
    return true;
  }
  if (!(expected == actual)) {
    why = "expected " + json::dump(expected) + ", got " + json::dump(actual);
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("YAML typing matches kubectl for every recorded case", "[yaml]") {
  auto cases = json::parse(read_text(KSTATE_SOURCE_DIR "/tests/manifests/data/yaml_to_json/cases.json"));
  REQUIRE(cases.ok());
  REQUIRE(cases->IsArray());
  REQUIRE(cases->Size() >= 60);
  for (const auto& test_case : cases->GetArray()) {
    std::string name = json::get_string(test_case, "name").value_or("?").data();
    std::string yaml(json::get_string(test_case, "yaml").value_or(""));
    INFO("case: " << name << "\nyaml:\n" << yaml);
    auto stream = parse_yaml_documents(yaml);
    const json::Value* expected = json::find(test_case, "kstate");
    if (expected == nullptr) {
      expected = json::find(test_case, "kubectl");
    }
    if (auto expected_error = json::get_string(test_case, "kstate_error")) {
      REQUIRE(stream.errors.size() == 1);
      CHECK_THAT(stream.errors[0].message, Catch::Contains(std::string(*expected_error)));
      CHECK(stream.documents.empty());
      continue;
    }
    REQUIRE(expected != nullptr);  // a kubectl error needs a kstate_error expectation
    REQUIRE(stream.errors.empty());
    REQUIRE(stream.documents.size() == 1);
    std::string why;
    CHECK(same_json(*expected, stream.documents[0].json, why));
    if (!why.empty()) {
      FAIL_CHECK(why);
    }
  }
}

TEST_CASE("YAML errors carry 1-based line and column", "[yaml]") {
  auto stream = parse_yaml_documents("a: 1\nb: [1, 2\nc: 3\n");
  REQUIRE(stream.errors.size() == 1);
  CHECK(stream.errors[0].position.line == 3);
  CHECK(stream.errors[0].position.column == 2);
  CHECK(stream.errors[0].message ==
        "YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 4)");

  auto duplicate = parse_yaml_documents("metadata:\n  name: a\n  name: b\n");
  REQUIRE(duplicate.errors.size() == 1);
  CHECK(duplicate.errors[0].position.line == 3);
  CHECK(duplicate.errors[0].position.column == 3);
  CHECK(duplicate.errors[0].message == "duplicate key \"name\" in this mapping");
}

TEST_CASE("Multi-document streams keep order and skip empty documents", "[yaml]") {
  auto stream = parse_yaml_documents("---\na: 1\n---\n---\n# only a comment\n---\nb: 2\n...\n");
  REQUIRE(stream.errors.empty());
  std::vector<std::string> non_empty;
  for (auto& document : stream.documents) {
    if (!document.json.IsNull()) {
      non_empty.push_back(json::dump(document.json));
    }
  }
  CHECK(non_empty == std::vector<std::string>{R"({"a":1})", R"({"b":2})"});
}

TEST_CASE("JSON input is read as YAML flow syntax with the same result", "[yaml]") {
  auto stream = parse_yaml_documents(R"({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "on"},
    "n": [1, 2.5, true, null, 12345678901234567890]})");
  REQUIRE(stream.errors.empty());
  REQUIRE(stream.documents.size() == 1);
  CHECK(
      json::dump(stream.documents[0].json) ==
      R"({"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1","b":"on"},"n":[1,2.5,true,null,12345678901234567890]})");
}

TEST_CASE("A document with a later syntax error keeps the documents before it", "[yaml]") {
  auto stream = parse_yaml_documents("a: 1\n---\nb: [\n");
  REQUIRE(stream.documents.size() == 1);
  CHECK(json::dump(stream.documents[0].json) == R"({"a":1})");
  REQUIRE(stream.errors.size() == 1);
}

TEST_CASE("Invalid UTF-8 and control characters are rejected with their position", "[yaml]") {
  auto bad_byte = parse_yaml_documents("a: 1\nb: \xff\n");
  REQUIRE(bad_byte.errors.size() == 1);
  CHECK(bad_byte.errors[0].position.line == 2);
  CHECK(bad_byte.errors[0].position.column == 4);
  auto control = parse_yaml_documents(std::string("a: \x01\n"));
  REQUIRE(control.errors.size() == 1);
  CHECK_THAT(control.errors[0].message, Catch::Contains("control characters"));
  auto bom = parse_yaml_documents(
      "\xEF\xBB\xBF"
      "a: 1\n");
  CHECK(bom.errors.empty());
}

TEST_CASE("The position of a bad character counts lines by LF and columns by characters, not bytes", "[yaml]") {
  // 'é' is two bytes and '🙂' four: one column each. CR is a column like any other.
  auto control = parse_yaml_documents("a: 1\r\nb: \"h\xC3\xA9llo \xF0\x9F\x99\x82\" \x01\n");
  REQUIRE(control.errors.size() == 1);
  CHECK(control.errors[0].position.line == 2);
  CHECK(control.errors[0].position.column == 14);
  CHECK_THAT(control.errors[0].message, Catch::Contains("control characters"));
  auto cut = parse_yaml_documents("a: 1\n\nc: \xC3\xA9\xC3");
  REQUIRE(cut.errors.size() == 1);
  CHECK(cut.errors[0].position.line == 3);
  CHECK(cut.errors[0].position.column == 5);
  CHECK_THAT(cut.errors[0].message, Catch::Contains("incomplete UTF-8"));
  auto first = parse_yaml_documents("\x7F");
  REQUIRE(first.errors.size() == 1);
  CHECK(first.errors[0].position.line == 1);
  CHECK(first.errors[0].position.column == 1);
  auto clean = parse_yaml_documents("a: \"\xE2\x82\xAC \xF0\x9F\x99\x82\"\n");  // € and 🙂
  CHECK(clean.errors.empty());
}

TEST_CASE("Limits: alias expansion (billion laughs) is bounded", "[yaml][limits]") {
  std::string laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  char previous = 'a';
  for (char level = 'b'; level <= 'i'; ++level) {
    laughs += std::string(1, level) + ": &" + level + " [";
    for (int i = 0; i < 10; ++i) {
      laughs += std::string(i ? ", *" : "*") + previous;
    }
    laughs += "]\n";
    previous = level;
  }
  auto stream = parse_yaml_documents(laughs);
  REQUIRE(stream.errors.size() == 1);
  CHECK_THAT(stream.errors[0].message, Catch::Contains("aliases expand to more than 100000 nodes"));
  CHECK(stream.documents.empty());

  YamlLimits small;
  small.max_alias_expanded_nodes = 5;
  auto ok = parse_yaml_documents("a: &a [1, 2]\nb: *a\n", small);
  CHECK(ok.errors.empty());
  auto over = parse_yaml_documents("a: &a [1, 2, 3]\nb: *a\nc: *a\n", small);
  REQUIRE(over.errors.size() == 1);
  CHECK(over.errors[0].position.line == 3);
}

TEST_CASE("Limits: recursive aliases, nesting depth and document size", "[yaml][limits]") {
  auto recursive = parse_yaml_documents("a: &x [1, *x]\n");
  REQUIRE(recursive.errors.size() == 1);
  CHECK_THAT(recursive.errors[0].message, Catch::Contains("recursive alias"));

  YamlLimits limits;
  limits.max_nesting_depth = 10;
  auto deep = parse_yaml_documents(std::string(20, '[') + std::string(20, ']'), limits);
  REQUIRE(deep.errors.size() == 1);
  CHECK(deep.errors[0].message == "nesting is deeper than the limit of 10 levels (max_nesting_depth)");
  CHECK(deep.errors[0].position.column == 11);
  auto shallow = parse_yaml_documents(std::string(9, '[') + std::string(9, ']'), limits);
  CHECK(shallow.errors.empty());

  limits.max_document_bytes = 100;
  std::string big = "small: 1\n---\nbig:\n";
  for (int i = 0; i < 20; ++i) {
    big += "  key" + std::to_string(i) + ": value\n";
  }
  auto sized = parse_yaml_documents(big, limits);
  REQUIRE(sized.errors.size() == 1);
  CHECK_THAT(sized.errors[0].message, Catch::Contains("larger than the limit of 100 bytes"));
  REQUIRE(sized.documents.size() == 1);  // the first document still loads
}

TEST_CASE("Limits: documents and nodes per file, aliases counted with the nodes", "[yaml][limits]") {
  YamlLimits limits;
  limits.max_documents_per_file = 3;
  auto three = parse_yaml_documents("a: 1\n---\n---\nb: 2\n", limits);
  CHECK(three.errors.empty());
  CHECK(three.documents.size() == 3);
  auto four = parse_yaml_documents("a: 1\n---\n---\nb: 2\n---\nc: 3\n", limits);
  REQUIRE(four.errors.size() == 1);
  CHECK(four.errors[0].message == "the file holds more than 3 documents (max_documents_per_file); split it");
  CHECK(four.errors[0].position.line == 5);
  CHECK(four.documents.size() == 3);  // the ones before the limit still load

  limits = YamlLimits{};
  limits.max_nodes_per_file = 10;  // a: 1 is 3 nodes (mapping, key, value)
  auto nodes = parse_yaml_documents("a: 1\n---\nb: 2\n---\nc: 3\n---\nd: 4\n", limits);
  REQUIRE(nodes.errors.size() == 1);
  CHECK(nodes.errors[0].message == "the file holds more than 10 YAML nodes (max_nodes_per_file); split it");
  CHECK(nodes.errors[0].position.line == 7);
  CHECK(nodes.documents.size() == 3);
  // Nodes that aliases materialise count too: 7 parsed (the mapping, x, the list and
  // its 2 items, y, the alias), 3 more made by *x.
  limits.max_nodes_per_file = 10;
  CHECK(parse_yaml_documents("x: &x [1, 2]\ny: *x\n", limits).errors.empty());
  limits.max_nodes_per_file = 9;
  auto aliased = parse_yaml_documents("x: &x [1, 2]\ny: *x\n", limits);
  REQUIRE(aliased.errors.size() == 1);
  CHECK_THAT(aliased.errors[0].message, Catch::Contains("with what aliases expand to, the file holds more than 9"));
}

TEST_CASE("A manifest's JSON takes memory in proportion to what it holds", "[yaml]") {
  // 300 one-member mappings: ~32 bytes each when sized to fit. Objects grown member by
  // member start with room for 16 (512 bytes), which made 1,000 manifests take 7.6 MB.
  std::string text = "items:\n";
  for (int i = 0; i < 300; ++i) {
    text += "- {a: " + std::to_string(i) + "}\n";
  }
  auto stream = parse_yaml_documents(text);
  REQUIRE(stream.errors.empty());
  REQUIRE(stream.documents.size() == 1);
  const json::Value& items = stream.documents[0].json["items"];
  REQUIRE(items.Size() == 300);
  CHECK(items[299]["a"].GetInt() == 299);
  CHECK(stream.documents[0].json.GetAllocator().reserved_bytes() < 48 * 1024);
}

TEST_CASE("Positions are found through sequences, converted keys, aliases and merge keys", "[yaml]") {
  auto stream = parse_yaml_documents(
      "spec:\n"
      "  ports:\n"
      "  - port: 80\n"
      "  - port: 443\n"
      "    true: x\n"
      "  0777: y\n"
      "base: &base {name: a}\n"
      "copy: *base\n"
      "merged:\n"
      "  <<: *base\n"
      "  extra: 1\n");
  REQUIRE(stream.errors.empty());
  REQUIRE(stream.documents.size() == 1);
  const auto& root = stream.documents[0].locator;
  const auto ports = root.child("spec").child("ports");
  CHECK(ports.position().line == 3);
  CHECK(ports.item(1).position().line == 4);
  CHECK(ports.item(1).position().column == 5);
  CHECK(ports.item(1).child("port").position().column == 11);
  // Keys as kubectl sends them: `true` and `511`, each at the key the user wrote.
  CHECK(ports.item(1).key_position("true").line == 5);
  CHECK(ports.item(1).key_position("true").column == 5);
  CHECK(root.child("spec").child("511").position().line == 6);
  CHECK(root.child("spec").key_position("511").column == 3);
  // Missing: the parent's position.
  CHECK(ports.item(2).position().line == 3);
  CHECK(root.child("spec").child("0777").position().line == 2);
  // Through an alias: the anchored mapping.
  CHECK(root.child("copy").child("name").position().line == 7);
  // A merged mapping knows its own keys; merged-in ones point at the mapping.
  CHECK(root.child("merged").child("extra").position().line == 11);
  CHECK(root.child("merged").child("name").position().line == 10);
}

}  // namespace yaml_to_json_test
