// Regression tests for the bugs the libFuzzer targets (tests/fuzz/) found in the core
// decoders: each input is the minimised crash or a readable equivalent, and each
// test asserts what a user sees instead of a crash or a wrong value.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/json.hpp"
#include "core/kubeconfig.hpp"
#include "core/response.hpp"
#include "core/watch.hpp"
#include "tests/support/temp_dir.hpp"

namespace fuzz_regression_test {

using namespace kstate;
using kstate::testing::TempDir;
using kstate::testing::write_file;

TEST_CASE("numbers decode as strtod reads them, never as RapidJSON 1.1 misread them (status_fuzz, watch_fuzz)",
          "[json][fuzz]") {
  // RapidJSON 1.1's full-precision path read 0e151 as -1.57e-235, 31 zeros after
  // "0." as 1.2e-240, refused 0e400, and crashed (segfault) on 0.0333333333333333378E-333.
  for (std::string text : {"0e151", "-0E+99", "0.0e200", "0.000E5", "0.0000000000000000000000000000000"}) {
    INFO(text);
    auto document = json::parse(text);
    REQUIRE(document.ok());
    REQUIRE(document->IsDouble());
    CHECK(document->GetDouble() == 0.0);
  }
  for (std::string text : {"0.0333333333333333378E-333", "2.2250738585072011e-308", "1.7976931348623157e308",
                           "123456789012345678901234567890", "0.1", "5e-324", "1e-400"}) {
    INFO(text);
    auto document = json::parse("[" + text + "]");
    REQUIRE(document.ok());
    CHECK((*document)[0].GetDouble() == std::strtod(text.c_str(), nullptr));
  }
  // Integers keep their exact types and values; numbers beyond double are errors as before.
  auto integers = json::parse(R"({"small":-5,"int64":-9223372036854775808,"uint64":18446744073709551615,"zero":-0})");
  REQUIRE(integers.ok());
  CHECK((*integers)["small"].IsInt());
  CHECK((*integers)["small"].GetInt() == -5);
  CHECK((*integers)["int64"].GetInt64() == INT64_MIN);
  CHECK((*integers)["uint64"].GetUint64() == UINT64_MAX);
  CHECK((*integers)["zero"].GetInt() == 0);
  auto too_big = json::parse("[1e400]");
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().message == "invalid JSON at offset 1: Number too big to be stored in double.");
  // RapidJSON's reader refuses exponents over 308 before any conversion, even of a
  // zero (Go reads 0e400 as 0): a clear error, as before, not a wrong value.
  auto zero_too_big = json::parse("0e400");
  REQUIRE_FALSE(zero_too_big.ok());
  CHECK(zero_too_big.error().message.find("Number too big") != std::string::npos);
  // Exponents inside strings are text.
  auto in_string = json::parse(R"({"text":"0e151"})");
  REQUIRE(in_string.ok());
  CHECK(std::string((*in_string)["text"].GetString()) == "0e151");
  // Errors still name the byte offset.
  auto broken = json::parse(R"({"a": tru})");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message == "invalid JSON at offset 9: Invalid value.");
}

TEST_CASE("JSON nested deeper than the limit is an error, not a stack overflow (status_fuzz)", "[json][fuzz]") {
  // 1 MB of '[' crashed every JSON decoder (Status bodies, watch events, discovery).
  std::string deep(1'000'000, '[');
  auto document = json::parse(deep);
  REQUIRE_FALSE(document.ok());
  CHECK(document.error().message.find("nested deeper than 10000") != std::string::npos);
  auto error = error_from_response(500, deep);
  CHECK(error.kind == ErrorKind::server_error);
  CHECK(error.message.find("HTTP 500") != std::string::npos);
  WatchDecoder decoder;
  auto events = decoder.feed("{\"type\":\"ADDED\",\"object\":" + std::string(20'000, '[') + "\n");
  CHECK_FALSE(events.ok());
  // Brackets inside strings do not count, and the limit itself is accepted.
  auto in_string = json::parse("{\"a\":\"" + std::string(20'000, '[') + "\"}");
  CHECK(in_string.ok());
  std::string at_limit = std::string(10'000, '[') + std::string(10'000, ']');
  CHECK(json::parse(at_limit).ok());
}

TEST_CASE("a kubeconfig entry that is not a mapping is a configuration error, not a crash (kubeconfig_fuzz)",
          "[kubeconfig][fuzz]") {
  // `context: text` made yaml-cpp throw BadSubscript outside any try block:
  // std::terminate, kstate aborted.
  TempDir dir;
  KubeconfigSources sources;
  sources.admin_conf = (dir.path() / "absent-admin.conf").string();
  sources.service_account_dir = (dir.path() / "absent-serviceaccount").string();
  sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
  sources.kubeconfig_flag = (dir.path() / "config").string();
  for (std::string broken : {
           "clusters:\n- name: c\n  cluster: {server: https://x}\ncontexts:\n- name: a\n  context: cluster-c\n"
           "current-context: a\n",
           "clusters:\n- name: c\n  cluster: https://x\ncontexts:\n- name: a\n  context: {cluster: c}\n"
           "current-context: a\n",
           "clusters:\n- name: c\n  cluster: {server: https://x}\nusers:\n- name: u\n  user: [token]\n"
           "contexts:\n- name: a\n  context: {cluster: c, user: u}\ncurrent-context: a\n",
           "clusters:\n- name: c\n  cluster: {server: https://x}\nusers:\n- name: u\n  user: {exec: plugin}\n"
           "contexts:\n- name: a\n  context: {cluster: c, user: u}\ncurrent-context: a\n",
       }) {
    INFO(broken);
    write_file(dir.path() / "config", broken);
    auto config = load_client_config(sources);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().kind == ErrorKind::config);
    CHECK(config.error().message.find("is not a mapping") != std::string::npos);
  }
}

}  // namespace fuzz_regression_test
