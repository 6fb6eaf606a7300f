// Every auth method as the transport sees it: static token, token file re-read
// (rotation), basic auth, client certificates, and exec credential plugins (a real
// shell script written by the test: v1 and v1beta1, KUBERNETES_EXEC_INFO, caching
// until expirationTimestamp, re-run after a 401).
#include "core/credentials.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "core/encoding.hpp"
#include "core/json.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/temp_dir.hpp"

namespace credentials_test {

using namespace kstate;
using kstate::testing::read_file;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using namespace std::chrono_literals;

namespace {

// Simulated time for the credentials' expiry and re-reads (they set no timer on it).
struct SimulatedTime {
  boost::asio::io_context io;
  std::shared_ptr<kstate::testing::ManualClock> clock;
  explicit SimulatedTime(Clock::WallTime start = std::chrono::system_clock::from_time_t(1'800'000'000))
      : clock(std::make_shared<kstate::testing::ManualClock>(io, start)) {}
};

// A plugin that counts its runs, records KUBERNETES_EXEC_INFO and prints a token
// numbered by the run, expiring at the time given in $EXPIRES.
std::string write_plugin(const TempDir& dir, const std::string& api_version) {
  auto path = dir.path() / "plugin.sh";
  write_file(path,
             "#!/bin/sh\n"
             "n=$(cat \"$COUNTER\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$COUNTER\"\n"
             "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\n"
             "echo \"args: $*\" > \"$ARGS_FILE\"\n"
             "printf '{\"apiVersion\":\"" +
                 api_version +
                 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token-%s\","
                 "\"expirationTimestamp\":\"%s\"}}' \"$n\" \"$EXPIRES\"\n");
  chmod(path.c_str(), 0755);
  return path.string();
}

ClientConfig exec_config(const TempDir& dir, const std::string& api_version, const std::string& expires) {
  ClientConfig config;
  config.server = "https://127.0.0.1:6443";
  config.certificate_authority_pem = "CA";
  ExecConfig exec;
  exec.api_version = api_version;
  exec.command = write_plugin(dir, api_version);
  exec.args = {"--cluster", "one"};
  exec.env = {{"COUNTER", (dir.path() / "count").string()},
              {"INFO_FILE", (dir.path() / "info.json").string()},
              {"ARGS_FILE", (dir.path() / "args").string()},
              {"EXPIRES", expires}};
  exec.provide_cluster_info = true;
  config.exec = exec;
  return config;
}

}  // namespace

TEST_CASE("a static bearer token and basic auth become Authorization headers", "[credentials]") {
  ClientConfig token_config;
  token_config.token = "static-token";
  CHECK(make_credential_source(token_config)->get(false)->authorization == "Bearer static-token");

  ClientConfig basic_config;
  basic_config.username = "admin";
  basic_config.password = "secret";
  CHECK(make_credential_source(basic_config)->get(false)->authorization ==
        "Basic " + encoding::base64_encode("admin:secret"));

  ClientConfig cert_config;
  cert_config.client_certificate_pem = "CERT";
  cert_config.client_key_pem = "KEY";
  auto credentials = make_credential_source(cert_config)->get(false);
  CHECK(credentials->authorization.empty());
  CHECK(credentials->client_certificate_pem == "CERT");
  CHECK(credentials->client_key_pem == "KEY");
}

TEST_CASE("a token file is re-read after a minute or after a 401, so rotation works", "[credentials]") {
  TempDir dir;
  write_file(dir.path() / "token", "first\n");
  ClientConfig config;
  config.token_file = (dir.path() / "token").string();
  SimulatedTime time;
  CredentialOptions options;
  options.clock = time.clock;
  auto source = make_credential_source(config, options);
  CHECK(source->get(false)->authorization == "Bearer first");
  write_file(dir.path() / "token", "second\n");
  time.clock->advance(30s);
  CHECK(source->get(false)->authorization == "Bearer first");  // cached for a minute
  time.clock->advance(31s);
  CHECK(source->get(false)->authorization == "Bearer second");
  write_file(dir.path() / "token", "third");
  CHECK(source->get(true)->authorization == "Bearer third");  // a 401 forces a re-read
  // While the file is briefly missing during a rotation, the last token is kept.
  std::filesystem::remove(dir.path() / "token");
  time.clock->advance(61s);
  CHECK(source->get(false)->authorization == "Bearer third");
}

TEST_CASE("an exec plugin (v1) runs with KUBERNETES_EXEC_INFO and is cached until it expires", "[credentials]") {
  TempDir dir;
  auto config = exec_config(dir, "client.authentication.k8s.io/v1", "2027-01-15T08:00:00Z");
  SimulatedTime time(*parse_rfc3339("2027-01-15T07:00:00Z"));
  CredentialOptions options;
  options.clock = time.clock;
  auto source = make_credential_source(config, options);

  CHECK(source->get(false)->authorization == "Bearer exec-token-1");
  CHECK(read_file(dir.path() / "args") == "args: --cluster one\n");
  auto info = json::parse(read_file(dir.path() / "info.json"));
  REQUIRE(info.ok());
  CHECK(json::get_string(*info, "apiVersion") == "client.authentication.k8s.io/v1");
  CHECK(json::get_string(*info, "kind") == "ExecCredential");
  CHECK(json::string_or(json::find_path(*info, {"spec", "cluster", "server"}), "") == "https://127.0.0.1:6443");
  CHECK(json::string_or(json::find_path(*info, {"spec", "cluster", "certificate-authority-data"}), "") ==
        encoding::base64_encode("CA"));
  CHECK(json::find_path(*info, {"spec", "interactive"})->IsFalse());

  time.clock->advance(30min);
  CHECK(source->get(false)->authorization == "Bearer exec-token-1");  // still valid: not re-run
  CHECK(read_file(dir.path() / "count") == "1\n");
  CHECK(source->get(true)->authorization == "Bearer exec-token-2");  // 401: re-run once
  time.clock->advance(31min);                                        // past expirationTimestamp
  CHECK(source->get(false)->authorization == "Bearer exec-token-3");
  CHECK(read_file(dir.path() / "count") == "3\n");
}

TEST_CASE("an exec plugin (v1beta1) works, wrong apiVersion, failures and bad output are errors", "[credentials]") {
  TempDir dir;
  auto config = exec_config(dir, "client.authentication.k8s.io/v1beta1", "");
  auto source = make_credential_source(config);
  CHECK(source->get(false)->authorization == "Bearer exec-token-1");
  CHECK(source->get(false)->authorization == "Bearer exec-token-1");  // no expiry: cached

  // Output for another apiVersion than requested is rejected.
  auto mismatched = parse_exec_credential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}})",
      "client.authentication.k8s.io/v1");
  CHECK_FALSE(mismatched.ok());
  auto garbage = parse_exec_credential("not json at all sensitive-value", "client.authentication.k8s.io/v1");
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().message.find("sensitive-value") == std::string::npos);
  auto certificate = parse_exec_credential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"C","clientKeyData":"K"}})",
      "client.authentication.k8s.io/v1");
  REQUIRE(certificate.ok());
  CHECK(certificate->client_certificate_pem == "C");

  ClientConfig missing;
  missing.exec =
      ExecConfig{"client.authentication.k8s.io/v1", (dir.path() / "nope").string(), {}, {}, false, "", "install it"};
  auto failed = make_credential_source(missing)->get(false);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message.find("install it") != std::string::npos);

  write_file(dir.path() / "fail.sh", "#!/bin/sh\nexit 3\n");
  chmod((dir.path() / "fail.sh").c_str(), 0755);
  ClientConfig failing;
  failing.exec =
      ExecConfig{"client.authentication.k8s.io/v1", (dir.path() / "fail.sh").string(), {}, {}, false, "", ""};
  auto exit_error = make_credential_source(failing)->get(false);
  REQUIRE_FALSE(exit_error.ok());
  CHECK(exit_error.error().message.find("exit status 3") != std::string::npos);
}

TEST_CASE("RFC 3339 timestamps with offsets and fractions parse", "[credentials]") {
  auto utc = parse_rfc3339("2026-11-21T10:00:00Z");
  REQUIRE(utc);
  CHECK(parse_rfc3339("2026-11-21T12:00:00.123+02:00") == utc);
  CHECK_FALSE(parse_rfc3339("yesterday"));
}

TEST_CASE("RFC 3339 times the clock cannot hold are refused, and a plugin's far-future expiry means no expiry",
          "[credentials]") {
  // system_clock counts nanoseconds in 64 bits: years 1678 to 2262. Converting year 4054
  // overflowed (undefined behaviour, found by fuzzing the inventory decoder).
  CHECK(parse_rfc3339("2262-01-01T00:00:00Z"));
  CHECK(parse_rfc3339("1678-01-01T00:00:00Z"));
  CHECK_FALSE(parse_rfc3339("4054-01-15T08:00:00Z"));
  CHECK_FALSE(parse_rfc3339("9999-12-31T23:59:59Z"));
  CHECK_FALSE(parse_rfc3339("0001-01-01T00:00:00Z"));
  // Go's time holds year 9999, so client-go accepts such an expirationTimestamp: never
  // expires within the process's life. Year 1 (Go's zero time) has expired.
  const std::string credential = R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                                 R"("status":{"token":"t","expirationTimestamp":")";
  auto far = parse_exec_credential(credential + R"(9999-12-31T23:59:59Z"}})", "client.authentication.k8s.io/v1");
  REQUIRE(far.ok());
  REQUIRE(far->expiration);
  CHECK(*far->expiration > *parse_rfc3339("2262-01-01T00:00:00Z"));
  auto zero = parse_exec_credential(credential + R"(0001-01-01T00:00:00Z"}})", "client.authentication.k8s.io/v1");
  REQUIRE(zero.ok());
  REQUIRE(zero->expiration);
  CHECK(*zero->expiration < *parse_rfc3339("1678-01-01T00:00:00Z"));
  CHECK_FALSE(parse_exec_credential(credential + R"(soon"}})", "client.authentication.k8s.io/v1").ok());
}

}  // namespace credentials_test
