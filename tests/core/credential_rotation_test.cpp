// Credentials that change while kstate runs, against kstate-emulator:
//  - a slow exec plugin runs off the io thread (other clients' requests on the same
//    io_context keep completing meanwhile) and is killed at its deadline;
//  - a token file replaced on rotation: one 401 per rotation, then success;
//  - an exec plugin is re-run exactly once on 401, even when several requests in
//    flight get the 401 together;
//  - client certificate/key files replaced (a new certificate from the emulator's
//    own CA): new connections present it; a half-written rotation (key without its
//    certificate) is ignored.
// The emulator accepts extra tokens through /emulator/tokens (and revokes them).
#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "core/dynamic_client.hpp"
#include "tests/support/api_resources.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace credential_rotation_test {

using namespace kstate;
using kstate::testing::Emulator;
using kstate::testing::read_file;
using kstate::testing::run_process;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using SteadyClock = std::chrono::steady_clock;

namespace {

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

// Replaces a file the way kubelet and cert-manager do: write aside, then rename.
void replace_file(const std::filesystem::path& path, const std::string& content) {
  auto aside = path;
  aside += ".new";
  write_file(aside, content);
  std::filesystem::rename(aside, path);
}

void accept_token(Emulator& emulator, const std::string& token) {
  auto reply =
      emulator.request("POST", "/emulator/tokens", R"({"token":")" + token + R"(","user":"rotating","admin":true})");
  REQUIRE(reply.status == 200);
}

void revoke_token(Emulator& emulator, const std::string& token) {
  auto reply = emulator.request("POST", "/emulator/tokens", R"({"token":")" + token + R"(","revoke":true})");
  REQUIRE(reply.status == 200);
}

// The emulator's configuration (server, CA) without its credentials.
ClientConfig server_only(const Emulator& emulator) {
  KubeconfigSources sources;
  sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  auto config = load_client_config(sources);
  REQUIRE(config.ok());
  ClientConfig bare;
  bare.server = config->server;
  bare.certificate_authority_pem = config->certificate_authority_pem;
  return bare;
}

// An exec plugin printing the token stored in $TOKEN_FILE, counting its runs in
// $COUNTER, after sleeping $DELAY seconds.
ExecConfig token_plugin(const TempDir& dir, const std::string& delay) {
  auto path = dir.path() / "plugin.sh";
  write_file(path,
             "#!/bin/sh\n"
             "sleep \"$DELAY\" & echo $! > \"$SLEEPER\"; wait\n"
             "n=$(cat \"$COUNTER\" 2>/dev/null || echo 0); echo $((n+1)) > \"$COUNTER\"\n"
             "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"%s\"}}' \"$(cat \"$TOKEN_FILE\")\"\n");
  chmod(path.c_str(), 0755);
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = path.string();
  exec.env = {{"COUNTER", (dir.path() / "runs").string()},
              {"TOKEN_FILE", (dir.path() / "token").string()},
              {"DELAY", delay},
              {"SLEEPER", (dir.path() / "sleeper.pid").string()}};
  return exec;
}

int plugin_runs(const TempDir& dir) {
  auto text = read_file(dir.path() / "runs");
  return text.empty() ? 0 : std::stoi(text);
}

std::unique_ptr<Transport> transport_for(boost::asio::io_context& io, const ClientConfig& config,
                                         CredentialOptions credential_options) {
  TransportOptions options;
  options.request_timeout = std::chrono::seconds(10);
  options.retry.backoff_base = std::chrono::milliseconds(5);
  auto made =
      make_http_transport(io.get_executor(), config, make_credential_source(config, credential_options), options);
  REQUIRE(made.ok());
  return std::move(made.value());
}

Result<json::Document> get_namespace(boost::asio::io_context& io, DynamicClient& client) {
  ApiResource namespaces;
  namespaces.version = "v1";
  namespaces.kind = "Namespace";
  namespaces.plural = "namespaces";
  return run_sync(io, client.get(namespaces, "", "default"));
}

// The user the emulator saw on its last logged request.
std::string last_user(const Emulator& emulator) {
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  const auto& requests = json::find(*log, "requests")->GetArray();
  REQUIRE(requests.Size() > 0);
  return std::string(json::string_or(json::find(requests[requests.Size() - 1], "user"), ""));
}

// A client key and certificate for `user` (in system:masters) signed by the emulator's CA.
void issue_client_certificate(const Emulator& emulator, const TempDir& dir, const std::string& user,
                              const std::filesystem::path& certificate_out, const std::filesystem::path& key_out) {
  auto stored = json::parse(read_file(emulator.data_dir() / "pki" / "credentials.json"));
  REQUIRE(stored.ok());
  write_file(dir.path() / "ca.crt", std::string(json::string_or(json::find(*stored, "caCertificate"), "")));
  write_file(dir.path() / "ca.key", std::string(json::string_or(json::find(*stored, "caKey"), "")));
  auto key = dir.path() / (user + ".key");
  auto request = dir.path() / (user + ".csr");
  auto certificate = dir.path() / (user + ".crt");
  auto made =
      run_process({"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                   "-keyout", key.string(), "-subj", "/O=system:masters/CN=" + user, "-out", request.string()});
  REQUIRE(made.exit_code == 0);
  auto signed_ = run_process({"openssl", "x509", "-req", "-in", request.string(), "-CA",
                              (dir.path() / "ca.crt").string(), "-CAkey", (dir.path() / "ca.key").string(),
                              "-CAcreateserial", "-days", "1", "-out", certificate.string()});
  REQUIRE(signed_.exit_code == 0);
  // Key first, then certificate: a reader in between sees a mismatched pair.
  replace_file(key_out, read_file(key));
  replace_file(certificate_out, read_file(certificate));
}

}  // namespace

TEST_CASE("a slow exec plugin runs off the io thread, and is killed at its deadline", "[credentials][emulator]") {
  Emulator emulator;
  TempDir dir;
  accept_token(emulator, "exec-token-slow");
  write_file(dir.path() / "token", "exec-token-slow");
  boost::asio::io_context io;

  ClientConfig slow = server_only(emulator);
  slow.exec = token_plugin(dir, "1");
  auto slow_transport = transport_for(io, slow, CredentialOptions{});
  DynamicClient slow_client(*slow_transport);

  KubeconfigSources sources;
  sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  auto other = make_client(io.get_executor(), sources, TransportOptions{});
  REQUIRE(other.ok());
  DynamicClient& other_client = *other.value()->dynamic;

  auto resource = configmaps();
  auto start = SteadyClock::now();
  std::optional<SteadyClock::duration> slow_done;
  std::optional<Status> slow_result;
  int other_completed_meanwhile = 0;
  std::optional<SteadyClock::duration> other_first;
  boost::asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::string ns = "default";
        ListOptions options;
        auto listed = co_await slow_client.list(resource, ns, options);
        slow_result = listed.ok() ? ok_status() : Status(listed.error());
        slow_done = SteadyClock::now() - start;
      },
      boost::asio::detached);
  boost::asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::string ns = "default";
        ListOptions options;
        while (!slow_done) {
          auto listed = co_await other_client.list(resource, ns, options);
          if (!listed) {
            co_return;
          }
          if (!slow_done) {
            ++other_completed_meanwhile;
            if (!other_first) {
              other_first = SteadyClock::now() - start;
            }
          }
        }
      },
      boost::asio::detached);
  io.run();
  REQUIRE(slow_result);
  CHECK(slow_result->ok());
  REQUIRE(slow_done);
  REQUIRE(other_first);
  auto slow_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*slow_done).count();
  auto first_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*other_first).count();
  CHECK(slow_ms >= 1000);
  CHECK(first_ms < 500);
  CHECK(other_completed_meanwhile >= 5);
  CHECK(plugin_runs(dir) == 1);
  WARN("exec plugin (1 s) off the io thread: the other client completed "
       << other_completed_meanwhile << " LISTs meanwhile, first after " << first_ms << " ms; slow request " << slow_ms
       << " ms");

  // A plugin that hangs is killed at the deadline and the request fails with a timeout.
  ClientConfig hanging = server_only(emulator);
  hanging.exec = token_plugin(dir, "30");
  CredentialOptions short_deadline;
  short_deadline.exec_timeout = std::chrono::milliseconds(300);
  auto hanging_transport = transport_for(io, hanging, short_deadline);
  DynamicClient hanging_client(*hanging_transport);
  auto before = SteadyClock::now();
  auto failed = get_namespace(io, hanging_client);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - before).count();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().kind == ErrorKind::timeout);
  CHECK(failed.error().message.find("did not finish in time") != std::string::npos);
  CHECK(waited < 3000);
  // The plugin's own child (its `sleep`) died with it: the deadline kills the process group.
  auto sleeper = read_file(dir.path() / "sleeper.pid");
  REQUIRE_FALSE(sleeper.empty());
  auto sleeper_state = [&] {
    std::ifstream in(std::filesystem::path("/proc") / std::to_string(std::stoi(sleeper)) / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? 'X' : stat[close + 2];
  };
  for (int i = 0; i < 100 && sleeper_state() != 'X' && sleeper_state() != 'Z'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK((sleeper_state() == 'X' || sleeper_state() == 'Z'));
  WARN("hanging exec plugin: request failed after " << waited << " ms (deadline 300 ms)");
}

TEST_CASE("token file rotation: one 401 per rotation, then success", "[credentials][emulator]") {
  Emulator emulator;
  TempDir dir;
  auto token_file = dir.path() / "token";
  accept_token(emulator, "token-0");
  write_file(token_file, "token-0\n");
  boost::asio::io_context io;
  ClientConfig config = server_only(emulator);
  config.token_file = token_file.string();
  CredentialOptions options;
  options.token_file_refresh = std::chrono::hours(1);  // only the 401 makes it re-read the file
  auto transport = transport_for(io, config, options);
  DynamicClient client(*transport);
  REQUIRE(get_namespace(io, client).ok());

  const int rotations = 3;
  int failures = 0;
  for (int rotation = 1; rotation <= rotations; ++rotation) {
    std::string fresh = "token-" + std::to_string(rotation);
    accept_token(emulator, fresh);
    revoke_token(emulator, "token-" + std::to_string(rotation - 1));
    replace_file(token_file, fresh + "\n");
    for (int request = 0; request < 3; ++request) {
      failures += get_namespace(io, client).ok() ? 0 : 1;
    }
  }
  auto stats = transport->stats();
  CHECK(failures == 0);
  CHECK(stats.requests["GET 401"] == static_cast<std::uint64_t>(rotations));
  CHECK(stats.requests["GET 200"] == static_cast<std::uint64_t>(1 + 3 * rotations));
  WARN("token file rotation: " << rotations << " rotations, " << stats.requests["GET 401"] << " x 401, " << failures
                               << " failed requests");
}

TEST_CASE("exec plugin rotation: re-run exactly once on 401, even for requests in flight together",
          "[credentials][emulator]") {
  Emulator emulator;
  TempDir dir;
  accept_token(emulator, "exec-a");
  write_file(dir.path() / "token", "exec-a");
  boost::asio::io_context io;
  ClientConfig config = server_only(emulator);
  config.exec = token_plugin(dir, "0");
  auto transport = transport_for(io, config, CredentialOptions{});
  DynamicClient client(*transport);
  REQUIRE(get_namespace(io, client).ok());
  REQUIRE(get_namespace(io, client).ok());
  CHECK(plugin_runs(dir) == 1);  // cached: no expirationTimestamp

  accept_token(emulator, "exec-b");
  revoke_token(emulator, "exec-a");
  write_file(dir.path() / "token", "exec-b");
  REQUIRE(get_namespace(io, client).ok());
  CHECK(plugin_runs(dir) == 2);
  CHECK(transport->stats().requests["GET 401"] == 1);

  // Four requests in flight when the token is revoked: four 401s, one plugin run.
  accept_token(emulator, "exec-c");
  revoke_token(emulator, "exec-b");
  write_file(dir.path() / "token", "exec-c");
  int succeeded = 0;
  ApiResource namespaces;
  namespaces.version = "v1";
  namespaces.kind = "Namespace";
  namespaces.plural = "namespaces";
  for (int i = 0; i < 4; ++i) {
    boost::asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          std::string ns;
          std::string name = "default";
          auto got = co_await client.get(namespaces, ns, name);
          succeeded += got.ok() ? 1 : 0;
        },
        boost::asio::detached);
  }
  io.restart();
  io.run();
  CHECK(succeeded == 4);
  CHECK(plugin_runs(dir) == 3);
  auto unauthorized = transport->stats().requests["GET 401"];
  CHECK(unauthorized >= 2);
  CHECK(unauthorized <= 5);
  WARN("exec plugin rotation: 2 rotations, " << plugin_runs(dir) << " plugin runs in all, " << unauthorized
                                             << " x 401 (4 requests in flight during the second rotation)");
}

TEST_CASE("client certificate files replaced while running: new connections present the new certificate",
          "[credentials][emulator]") {
  Emulator emulator;
  TempDir dir;
  auto certificate = dir.path() / "client.crt";
  auto key = dir.path() / "client.key";
  issue_client_certificate(emulator, dir, "rotated-1", certificate, key);
  // A kubeconfig naming the files relative to its folder, as kubeadm and kubelet write them.
  auto config_text = read_file(emulator.kubeconfig_path());
  KubeconfigSources emulator_sources;
  emulator_sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  auto emulator_config = load_client_config(emulator_sources);
  REQUIRE(emulator_config.ok());
  write_file(dir.path() / "ca.pem", emulator_config->certificate_authority_pem);
  write_file(dir.path() / "kubeconfig",
             "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
             "clusters:\n- name: e\n  cluster:\n    server: " +
                 emulator_config->server +
                 "\n    certificate-authority: ca.pem\n"
                 "users:\n- name: u\n  user:\n    client-certificate: client.crt\n    client-key: client.key\n"
                 "contexts:\n- name: c\n  context:\n    cluster: e\n    user: u\n");
  KubeconfigSources sources;
  sources.kubeconfig_flag = (dir.path() / "kubeconfig").string();
  auto config = load_client_config(sources);
  REQUIRE(config.ok());
  CHECK(config->client_certificate_file == certificate.string());

  boost::asio::io_context io;
  auto clock =
      std::make_shared<kstate::testing::ManualClock>(io, std::chrono::system_clock::from_time_t(1'800'000'000));
  CredentialOptions options;
  options.clock = clock;
  auto transport = transport_for(io, config.value(), options);
  DynamicClient client(*transport);
  REQUIRE(get_namespace(io, client).ok());
  CHECK(last_user(emulator) == "rotated-1");

  issue_client_certificate(emulator, dir, "rotated-2", certificate, key);
  REQUIRE(get_namespace(io, client).ok());
  CHECK(last_user(emulator) == "rotated-1");  // files are re-read once a minute
  clock->advance(std::chrono::seconds(61));
  REQUIRE(get_namespace(io, client).ok());
  CHECK(last_user(emulator) == "rotated-2");

  // A rotation caught half-way (new key, old certificate): the last good pair stays.
  auto spare_key = dir.path() / "spare.key";
  run_process({"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out",
               spare_key.string()});
  replace_file(key, read_file(spare_key));
  clock->advance(std::chrono::seconds(61));
  REQUIRE(get_namespace(io, client).ok());
  CHECK(last_user(emulator) == "rotated-2");
  CHECK(transport->stats().requests["GET 401"] == 0);
  WARN("client certificate rotation: picked up within one refresh interval (60 s), 0 x 401, half rotation ignored");
  (void)config_text;
}

}  // namespace credential_rotation_test
