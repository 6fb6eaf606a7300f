// Variables as a user writes them: the reference grammar (table of texts and what
// they become or why they fail), where substituted values land in an object and how
// they are typed, NAME=VALUE assignments and vars files with their errors.
#include "manifests/variables.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace variables_test {

namespace json = kstate::json;
using namespace kstate::manifests;
using kstate::testing::TempDir;

namespace {

const VariableMap kValues = {{"API_SERVER", "10.0.0.1"}, {"EMPTY", ""}, {"REGISTRY", "mirror.local"}};

// The one document of `yaml`, substituted; the errors as "line:column: message".
struct Substituted {
  json::Document object;
  std::vector<std::string> errors;
};

Substituted substitute_yaml(const std::string& yaml, const VariableMap& values = kValues) {
  YamlStream stream = parse_yaml_documents(yaml);
  REQUIRE(stream.errors.empty());
  REQUIRE(stream.documents.size() == 1);
  Substituted out;
  out.object = std::move(stream.documents[0].json);
  for (auto& error : substitute_variables(out.object, out.object.GetAllocator(), stream.documents[0].locator, values)) {
    out.errors.push_back(std::to_string(error.position.line) + ":" + std::to_string(error.position.column) + ": " +
                         error.message);
  }
  return out;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  kstate::testing::write_file(dir.path() / name, text);
  return (dir.path() / name).string();
}

}  // namespace

TEST_CASE("substitute_text: ${NAME}, ${NAME:=default}, the $${ escape and what is left alone") {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"https://${API_SERVER}:6443", "https://10.0.0.1:6443"},
      {"${REGISTRY}/nginx:${TAG:=1.25}", "mirror.local/nginx:1.25"},
      {"${API_SERVER:=127.0.0.1}", "10.0.0.1"},  // a value wins over the default
      {"${EMPTY:=fallback}", "fallback"},        // := takes the default when the value is empty, as the shell
      {"[${EMPTY}]", "[]"},                      // a defined empty value is ""
      {"${UNSET:=}", ""},                        // an empty default
      {"${UNSET:=a:b=c d}", "a:b=c d"},          // the default runs to the first }
      {"echo $${HOME} ${API_SERVER}", "echo ${HOME} 10.0.0.1"},
      {"$HOME $$ $ {x} cost: 5$", "$HOME $$ $ {x} cost: 5$"},  // only ${ starts a reference
      {"no reference", "no reference"},
      {"", ""},
  };
  for (const auto& test : cases) {
    INFO(test.text);
    SubstitutedText result = substitute_text(test.text, kValues);
    CHECK(result.problems.empty());
    CHECK(result.text == test.expected);
  }
}

TEST_CASE("substitute_text: undefined, malformed and unterminated references are problems with their offset") {
  struct Case {
    std::string text;
    ReferenceProblem problem;
    std::size_t offset;
    std::string reference;
    std::string name;
  };
  const std::vector<Case> cases = {
      {"x ${UNSET} y", ReferenceProblem::undefined, 2, "${UNSET}", "UNSET"},
      {"${HOME:-/root}", ReferenceProblem::malformed, 0, "${HOME:-/root}", ""},  // shell syntax, not Flux's
      {"${1}", ReferenceProblem::malformed, 0, "${1}", ""},
      {"${ NAME }", ReferenceProblem::malformed, 0, "${ NAME }", ""},
      {"${}", ReferenceProblem::malformed, 0, "${}", ""},
      {"${A:=${B}}", ReferenceProblem::malformed, 0, "${A:=${B}", ""},  // no nested references
      {"abc ${NAME\nnext", ReferenceProblem::unterminated, 4, "${NAME", ""},
  };
  for (const auto& test : cases) {
    INFO(test.text);
    SubstitutedText result = substitute_text(test.text, kValues);
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0].problem == test.problem);
    CHECK(result.problems[0].offset == test.offset);
    CHECK(result.problems[0].reference == test.reference);
    CHECK(result.problems[0].name == test.name);
  }
  CHECK(substitute_text("${UNSET}", kValues).problems[0].message() ==
        "undefined variable UNSET in ${UNSET}: set it (vars, vars-from, --var, --vars-from) or give a default, "
        "${UNSET:=value}; to keep the text write $${UNSET}, or annotate the object kstate.io/substitute: disabled");
  CHECK(substitute_text("${HOME:-x}", kValues).problems[0].message() ==
        "${HOME:-x} is not a variable reference kstate substitutes (${NAME} or ${NAME:=default}); to keep the text "
        "write $${HOME:-x}, or annotate the object kstate.io/substitute: disabled");
}

TEST_CASE("substitute_variables: plain scalars are typed again, quoted and block ones stay strings") {
  Substituted result = substitute_yaml(
      R"(spec:
  replicas: ${REPLICAS}
  paused: ${PAUSED}
  port: "${PORT}"
  single: '${PORT}'
  tagged: !!str ${PORT}
  empty: ${EMPTY}
  image: ${REGISTRY}/web:1.0
  list:
  - ${PORT}
  - "${PORT}"
  script: |
    port=${PORT}
)",
      {{"REPLICAS", "3"}, {"PAUSED", "yes"}, {"PORT", "8080"}, {"EMPTY", ""}, {"REGISTRY", "mirror.local"}});
  REQUIRE(result.errors.empty());
  CHECK(json::dump(result.object) ==
        R"({"spec":{"replicas":3,"paused":true,"port":"8080","single":"8080","tagged":"8080","empty":null,)"
        R"("image":"mirror.local/web:1.0","list":[8080,"8080"],"script":"port=8080\n"}})");
}

TEST_CASE("substitute_variables: a value never adds structure (no YAML injection)") {
  const std::string hostile = "x\nhostNetwork: true\n---\nkind: Secret";
  Substituted result = substitute_yaml("spec:\n  name: ${VALUE}\n  quoted: \"${VALUE}\"\n", {{"VALUE", hostile}});
  REQUIRE(result.errors.empty());
  const json::Value* spec = json::find(result.object, "spec");
  REQUIRE(spec != nullptr);
  CHECK(spec->MemberCount() == 2);
  CHECK(json::string_or(json::find(*spec, "name"), "") == hostile);
  CHECK(json::string_or(json::find(*spec, "quoted"), "") == hostile);
}

TEST_CASE("substitute_variables: keys stay as written; errors name the line of each variable once") {
  Substituted result = substitute_yaml(R"(metadata:
  labels:
    ${KEY}: ${UNSET}
  annotations:
    a: ${UNSET}
    b: "${OTHER} and ${HOME:-x}"
data:
  script: |
    #!/bin/sh
    echo ${LATE}
  big: ${.nan}
)");
  CHECK(result.errors == std::vector<std::string>{
                             "3:13: undefined variable UNSET in ${UNSET}: set it (vars, vars-from, --var, --vars-from) "
                             "or give a default, ${UNSET:=value}; to keep the text write $${UNSET}, or annotate the "
                             "object kstate.io/substitute: disabled",
                             "6:8: undefined variable OTHER in ${OTHER}: set it (vars, vars-from, --var, --vars-from) "
                             "or give a default, ${OTHER:=value}; to keep the text write $${OTHER}, or annotate the "
                             "object kstate.io/substitute: disabled",
                             "6:8: ${HOME:-x} is not a variable reference kstate substitutes (${NAME} or "
                             "${NAME:=default}); to keep the text write $${HOME:-x}, or annotate the object "
                             "kstate.io/substitute: disabled",
                             // inside a literal block: the line of the reference itself
                             "10:0: undefined variable LATE in ${LATE}: set it (vars, vars-from, --var, --vars-from) "
                             "or give a default, ${LATE:=value}; to keep the text write $${LATE}, or annotate the "
                             "object kstate.io/substitute: disabled",
                             "11:8: ${.nan} is not a variable reference kstate substitutes (${NAME} or "
                             "${NAME:=default}); to keep the text write $${.nan}, or annotate the object "
                             "kstate.io/substitute: disabled"});
}

TEST_CASE("substitute_variables: a substituted plain value JSON cannot hold is an error at its position") {
  Substituted result = substitute_yaml("spec:\n  ratio: ${RATIO}\n", {{"RATIO", ".nan"}});
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0] ==
        "2:10: after substitution, `.nan` is NaN, which JSON cannot represent (kubectl: json: unsupported value: NaN); "
        "quote it to keep a string");
}

TEST_CASE("substitute_variables: at most ten errors per object, then how many more") {
  std::string yaml = "data:\n";
  for (int i = 0; i < 14; ++i) {
    yaml += "  k" + std::to_string(i) + ": ${UNSET_" + std::to_string(i) + "}\n";
  }
  Substituted result = substitute_yaml(yaml);
  REQUIRE(result.errors.size() == 11);
  CHECK(result.errors.back() == "1:1: and 4 more variable problems in this object, not shown");
}

TEST_CASE("add_assignment: NAME=VALUE, the value may hold = and be empty") {
  VariableMap values;
  CHECK_FALSE(add_assignment("A=x=y", values));
  CHECK_FALSE(add_assignment("_b1=", values));
  CHECK(values == VariableMap{{"A", "x=y"}, {"_b1", ""}});
  CHECK(add_assignment("A", values) == "expected NAME=VALUE, got \"A\"");
  CHECK(add_assignment("1A=x", values) ==
        "\"1A\" is not a variable name (letters, digits and _, not starting with a digit)");
  CHECK(add_assignment("A-B=x", values).has_value());
}

TEST_CASE("load_variables_file: values as written, later files win, errors name file:line") {
  TempDir dir("kstate-vars");
  const std::string node = write(dir, "node.yaml", R"(# node-1
NODE_IP: 10.0.0.11
K8S_VERSION: 1.10
ENABLED: yes
PORT: 0x1F
QUOTED: "a: b"
)");
  const std::string site = write(dir, "site.yaml", "NODE_IP: 10.0.0.12\nOTHER: x\n");
  VariableMap values;
  CHECK(load_variables_file(node, values).empty());
  CHECK(load_variables_file(site, values).empty());
  CHECK(values == VariableMap{{"ENABLED", "yes"},
                              {"K8S_VERSION", "1.10"},
                              {"NODE_IP", "10.0.0.12"},
                              {"OTHER", "x"},
                              {"PORT", "0x1F"},
                              {"QUOTED", "a: b"}});

  const std::string bad = write(dir, "bad.yaml", R"(GOOD: ok
bad-name: x
LIST: [a]
NOTHING:
MAP: {a: b}
)");
  VariableMap partial;
  std::vector<std::string> errors;
  for (const auto& error : load_variables_file(bad, partial)) {
    errors.push_back(error.to_string());
  }
  CHECK(errors == std::vector<std::string>{
                      bad + ":2:1: \"bad-name\" is not a variable name (letters, digits and _, not starting with a "
                            "digit)",
                      bad + ":3:7: LIST: expected a single value, not a list",
                      bad + ":4:9: NOTHING: no value (write NOTHING: \"\" for an empty one)",
                      bad + ":5:6: MAP: expected a single value, not a mapping"});
  CHECK(partial == VariableMap{{"GOOD", "ok"}});

  VariableMap none;
  const std::string list = write(dir, "list.yaml", "- A\n");
  REQUIRE(load_variables_file(list, none).size() == 1);
  CHECK(load_variables_file(list, none)[0].to_string() == list + ":1:1: a vars file holds one mapping of NAME: value");
  const std::string missing = (dir.path() / "missing.yaml").string();
  REQUIRE(load_variables_file(missing, none).size() == 1);
  CHECK(load_variables_file(missing, none)[0].to_string() ==
        "cannot read vars file: " + missing + ": No such file or directory");
  const std::string empty = write(dir, "empty.yaml", "");
  CHECK(load_variables_file(empty, none).empty());
  CHECK(none.empty());
}

}  // namespace variables_test
