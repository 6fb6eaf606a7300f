// Credentials from hostile or broken kubeconfigs (core/credential_file.hpp, credentials.hpp):
//  - files a kubeconfig names (CA, client certificate and key, token file) are read only
//    when they are regular files up to 1 MiB: /dev/zero, /dev/urandom, a FIFO and a
//    2 MiB file are refused at once, naming the field and the user or cluster;
//  - exec plugin output over 1 MiB is refused (the plugin is killed);
//  - a credential holding a control character (token:, a token file, an exec plugin's
//    token, basic auth) is refused naming where it came from, and nothing is sent: a
//    CR LF would otherwise let a kubeconfig or a token file forge headers such as
//    Impersonate-User; `tokenFile: /etc/shadow` (several lines) never reaches a header.
#include <sys/stat.h>

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "core/credentials.hpp"
#include "core/dynamic_client.hpp"
#include "core/kubeconfig.hpp"
#include "tests/support/hostile_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace credential_limits_test {

using namespace kstate;
using kstate::testing::HostileBehaviour;
using kstate::testing::HostileServer;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using SteadyClock = std::chrono::steady_clock;

namespace {

// A kubeconfig with one cluster and one user whose fields are given as YAML lines.
Result<ClientConfig> load_with(const TempDir& dir, const std::string& cluster_yaml, const std::string& user_yaml) {
  write_file(dir.path() / "config", "current-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://x:1\n" +
                                        cluster_yaml + "users:\n- name: u\n  user:\n" + user_yaml +
                                        "contexts:\n- name: c\n  context: {cluster: c, user: u}\n");
  KubeconfigSources sources;
  sources.kubeconfig_flag = (dir.path() / "config").string();
  sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
  return load_client_config(sources);
}

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Hands out whatever Authorization header it was given (to show the transport's own check).
class FixedCredentials final : public CredentialSource {
 public:
  explicit FixedCredentials(std::string authorization) : authorization_(std::move(authorization)) {}
  Result<Credentials> get(bool) override { return Credentials{authorization_, {}, {}}; }

 private:
  std::string authorization_;
};

}  // namespace

TEST_CASE("credential files: devices, FIFOs and files over 1 MiB are refused at once, naming the field",
          "[credentials][limits]") {
  TempDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string big = (dir.path() / "big.pem").string();
  write_file(big, std::string(2 * 1024 * 1024, 'A'));
  struct Case {
    std::string cluster;
    std::string user;
    std::string expected;
  };
  std::vector<Case> cases;
  for (const std::string& target : {std::string("/dev/zero"), std::string("/dev/urandom"), fifo}) {
    cases.push_back({"", "    client-certificate: " + target + "\n    client-key: " + target + "\n",
                     "cannot read client-certificate of user \"u\" (kubeconfig " + (dir.path() / "config").string() +
                         "): " + target + ": not a regular file"});
    cases.push_back({"    certificate-authority: " + target + "\n", "    token: t\n",
                     "cannot read certificate-authority of cluster \"c\""});
  }
  cases.push_back({"", "    client-certificate: " + big + "\n    client-key: " + big + "\n",
                   big + ": larger than the limit of 1024 KiB"});
  const auto start = SteadyClock::now();
  for (const auto& one : cases) {
    INFO(one.cluster << one.user);
    auto loaded = load_with(dir, one.cluster, one.user);
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.error().kind == ErrorKind::config);
    CHECK_THAT(loaded.error().message, Catch::Contains(one.expected));
  }
  const double took = seconds_since(start);
  CHECK(took < 2.0);

  // A token file is read per request: refused there, naming the file.
  for (const std::string& target : {std::string("/dev/zero"), fifo, big}) {
    auto loaded = load_with(dir, "", "    tokenFile: " + target + "\n");
    REQUIRE(loaded.ok());
    auto got = make_credential_source(*loaded)->get(false);
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().kind == ErrorKind::config);
    CHECK_THAT(got.error().message, Catch::Contains("cannot read the bearer token file: " + target));
  }
  WARN(cases.size() << " kubeconfigs naming /dev/zero, /dev/urandom, a FIFO or a 2 MiB file refused in " << took * 1000
                    << " ms in all");
}

TEST_CASE("exec plugin output over 1 MiB is refused and the plugin killed", "[credentials][limits]") {
  ClientConfig config;
  config.server = "https://127.0.0.1:1";
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = "yes";  // writes forever
  config.exec = exec;
  const auto start = SteadyClock::now();
  auto got = make_credential_source(config)->get(false);
  const double took = seconds_since(start);
  REQUIRE_FALSE(got.ok());
  CHECK_THAT(got.error().message, Catch::Contains("exec plugin \"yes\" wrote more than 1024 KiB (refused)"));
  CHECK(took < 5.0);
  WARN("an exec plugin writing without end: refused after 1 MiB in " << took * 1000 << " ms");
}

TEST_CASE("credentials with control characters are refused, naming where they came from, and never sent",
          "[credentials][security]") {
  TempDir dir;
  // token: in the kubeconfig, with a CR LF that would add an Impersonate-User header.
  auto injected = load_with(dir, "", "    token: \"abc\\r\\nImpersonate-User: system:admin\"\n");
  REQUIRE_FALSE(injected.ok());
  CHECK_THAT(injected.error().message,
             Catch::Contains("user \"u\" (kubeconfig " + (dir.path() / "config").string() +
                             "): token: holds a line break: a token is one line (refused, never sent)"));
  CHECK(injected.error().message.find("Impersonate") == std::string::npos);
  auto nul = load_with(dir, "", "    token: \"abc\\0def\"\n");
  CHECK_THAT(nul.error().message, Catch::Contains("token: holds a control character (byte 4)"));
  auto password = load_with(dir, "", "    username: admin\n    password: \"pw\\nX-Evil: 1\"\n");
  CHECK_THAT(password.error().message, Catch::Contains("password: holds a control character"));

  // A token file of several lines (`tokenFile: /etc/shadow`): refused, not quoted.
  const std::string shadow = (dir.path() / "shadow").string();
  write_file(shadow, "root:$y$j9T$secrethash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n");
  auto shadowed = load_with(dir, "", "    tokenFile: " + shadow + "\n");
  REQUIRE(shadowed.ok());
  auto from_shadow = make_credential_source(*shadowed)->get(false);
  REQUIRE_FALSE(from_shadow.ok());
  CHECK(from_shadow.error().message ==
        "the bearer token file " + shadow + ": holds a line break: a token is one line (refused, never sent)");
  // A rotation that writes a good token is picked up after a 401.
  write_file(shadow, "good-token\n");
  auto rotated = make_credential_source(*shadowed)->get(true);
  REQUIRE(rotated.ok());
  CHECK(rotated->authorization == "Bearer good-token");

  // An exec plugin's token with CR LF.
  auto script = dir.path() / "plugin.sh";
  write_file(script,
             "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"t\\\\r\\\\nImpersonate-Group: system:masters\"}}'\n");
  ::chmod(script.c_str(), 0755);
  ClientConfig exec_config;
  exec_config.server = "https://127.0.0.1:1";
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = script.string();
  exec_config.exec = exec;
  auto from_exec = make_credential_source(exec_config)->get(false);
  REQUIRE_FALSE(from_exec.ok());
  CHECK(from_exec.error().message ==
        "exec plugin returned a token that holds a line break: a token is one line (refused, never sent)");

  // Nothing reaches a server: the request fails before connecting...
  HostileServer server(HostileBehaviour::fixed_answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
  boost::asio::io_context io;
  ClientConfig to_server = *shadowed;
  to_server.server = server.url();
  to_server.certificate_authority_pem = server.ca_pem();
  write_file(shadow, "root:x:0:0\nbin:x:1:1\n");
  auto transport = make_http_transport(io.get_executor(), to_server, make_credential_source(to_server));
  REQUIRE(transport.ok());
  DynamicClient client(*transport.value());
  ApiResource namespaces;
  namespaces.version = "v1";
  namespaces.kind = "Namespace";
  namespaces.plural = "namespaces";
  auto refused = run_sync(io, client.get(namespaces, "", "default"));
  REQUIRE_FALSE(refused.ok());
  CHECK(server.connections() == 0);
  // ... and a header value with CR LF from any source is refused by the transport itself.
  auto forged = make_http_transport(io.get_executor(), to_server,
                                    std::make_unique<FixedCredentials>("Bearer t\r\nImpersonate-User: system:admin"));
  REQUIRE(forged.ok());
  DynamicClient forged_client(*forged.value());
  auto not_sent = run_sync(io, forged_client.get(namespaces, "", "default"));
  REQUIRE_FALSE(not_sent.ok());
  CHECK_THAT(not_sent.error().message, Catch::Contains("the Authorization header holds a control character; not sent"));
  CHECK(server.connections() == 0);
  CHECK(server.received().empty());
  WARN("control characters in token:, tokenFile, exec token, password: refused naming the source; "
       << server.connections() << " connections, " << server.received().size() << " bytes reached the server");
}

}  // namespace credential_limits_test
