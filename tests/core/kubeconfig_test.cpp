// Kubeconfig resolution as kubectl does it: search order, KUBECONFIG merge
// precedence, --context, relative paths, data fields, and the configuration errors.
#include "core/kubeconfig.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "core/encoding.hpp"
#include "tests/support/temp_dir.hpp"

namespace kubeconfig_test {

using namespace kstate;
using kstate::testing::TempDir;
using kstate::testing::write_file;

namespace {

KubeconfigSources sources_with(std::map<std::string, std::string> env, const TempDir& dir) {
  KubeconfigSources sources;
  sources.getenv = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) {
      return std::nullopt;
    }
    return it->second;
  };
  sources.admin_conf = (dir.path() / "no-admin.conf").string();
  sources.service_account_dir = (dir.path() / "no-serviceaccount").string();
  return sources;
}

std::string one_cluster_config(const std::string& name, const std::string& server, const std::string& user_yaml,
                               const std::string& current = "") {
  return "apiVersion: v1\nkind: Config\n" + (current.empty() ? "" : "current-context: " + current + "\n") +
         "clusters:\n- name: " + name + "\n  cluster:\n    server: " + server +
         "\n    insecure-skip-tls-verify: true\n"
         "users:\n- name: " +
         name + "\n  user:\n" + user_yaml + "contexts:\n- name: " + name + "\n  context:\n    cluster: " + name +
         "\n    user: " + name + "\n    namespace: ns-" + name + "\n";
}

}  // namespace

TEST_CASE("KUBECONFIG files merge with the first file winning each name and current-context", "[kubeconfig]") {
  TempDir dir;
  // a.yaml and b.yaml both define cluster "shared"; a.yaml is first and wins.
  write_file(dir.path() / "a.yaml", one_cluster_config("shared", "https://a.example:6443", "    token: token-a\n"));
  write_file(dir.path() / "b.yaml",
             one_cluster_config("shared", "https://b.example:6443", "    token: token-b\n", "shared") +
                 "current-context-ignored: true\n");
  write_file(dir.path() / "c.yaml",
             one_cluster_config("other", "https://c.example:6443", "    token: token-c\n", "other"));
  std::string list = (dir.path() / "missing.yaml").string() + ":" + (dir.path() / "a.yaml").string() + ":" +
                     (dir.path() / "b.yaml").string() + ":" + (dir.path() / "c.yaml").string();
  auto sources = sources_with({{"KUBECONFIG", list}, {"HOME", dir.path().string()}}, dir);

  // current-context: a.yaml sets none, b.yaml sets "shared" first (c.yaml's "other" loses).
  auto config = load_client_config(sources);
  REQUIRE(config.ok());
  CHECK(config->context_name == "shared");
  CHECK(config->server == "https://a.example:6443");
  CHECK(config->token == "token-a");
  CHECK(config->default_namespace == "ns-shared");

  sources.context = "other";
  auto other = load_client_config(sources);
  REQUIRE(other.ok());
  CHECK(other->server == "https://c.example:6443");
  CHECK(other->token == "token-c");

  sources.context = "nope";
  auto missing = load_client_config(sources);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::config);
  CHECK(missing.error().message.find("context \"nope\" does not exist") != std::string::npos);
}

TEST_CASE("the kubeconfig flag wins over KUBECONFIG and must exist, and the home kube config is the default",
          "[kubeconfig]") {
  TempDir dir;
  write_file(dir.path() / "flag.yaml", one_cluster_config("flag", "https://flag:1", "    token: t\n", "flag"));
  write_file(dir.path() / "env.yaml", one_cluster_config("env", "https://env:1", "    token: t\n", "env"));
  write_file(dir.path() / ".kube" / "config", one_cluster_config("home", "https://home:1", "    token: t\n", "home"));

  auto sources = sources_with({{"KUBECONFIG", (dir.path() / "env.yaml").string()}, {"HOME", dir.path().string()}}, dir);
  CHECK(load_client_config(sources)->server == "https://env:1");
  sources.kubeconfig_flag = (dir.path() / "flag.yaml").string();
  CHECK(load_client_config(sources)->server == "https://flag:1");
  sources.kubeconfig_flag = (dir.path() / "absent.yaml").string();
  CHECK(load_client_config(sources).error().kind == ErrorKind::config);

  auto home_only = sources_with({{"HOME", dir.path().string()}}, dir);
  CHECK(load_client_config(home_only)->server == "https://home:1");
}

TEST_CASE("admin.conf, then the in-cluster service account, are the fallbacks", "[kubeconfig]") {
  TempDir dir;
  auto sources = sources_with({{"HOME", (dir.path() / "empty-home").string()}}, dir);
  auto nothing = load_client_config(sources);
  REQUIRE_FALSE(nothing.ok());
  CHECK(nothing.error().message.find("no configuration has been provided") != std::string::npos);

  // In-cluster: service host/port + token, CA and namespace files.
  write_file(dir.path() / "sa" / "token", "in-cluster-token\n");
  write_file(dir.path() / "sa" / "ca.crt", "-----BEGIN CERTIFICATE-----\n");
  write_file(dir.path() / "sa" / "namespace", "kube-system\n");
  auto in_cluster = sources_with({{"HOME", (dir.path() / "empty-home").string()},
                                  {"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                  {"KUBERNETES_SERVICE_PORT", "443"}},
                                 dir);
  in_cluster.service_account_dir = (dir.path() / "sa").string();
  auto config = load_client_config(in_cluster);
  REQUIRE(config.ok());
  CHECK(config->in_cluster);
  CHECK(config->server == "https://[fd00::1]:443");
  CHECK(config->token_file == (dir.path() / "sa" / "token").string());
  CHECK(config->default_namespace == "kube-system");

  // admin.conf comes before in-cluster.
  write_file(dir.path() / "admin.conf", one_cluster_config("admin", "https://admin:6443", "    token: t\n", "admin"));
  in_cluster.admin_conf = (dir.path() / "admin.conf").string();
  CHECK(load_client_config(in_cluster)->server == "https://admin:6443");
}

TEST_CASE("relative paths resolve against the kubeconfig's folder, data fields are base64", "[kubeconfig]") {
  TempDir dir;
  write_file(dir.path() / "conf" / "certs" / "ca.pem", "CA-PEM");
  write_file(dir.path() / "conf" / "certs" / "client.pem", "CLIENT-PEM");
  write_file(dir.path() / "conf" / "token", "file-token");
  std::string key_data = encoding::base64_encode("KEY-PEM");
  write_file(dir.path() / "conf" / "config",
             "current-context: c\n"
             "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n"
             "    certificate-authority: certs/ca.pem\n    tls-server-name: kubernetes\n"
             "users:\n- name: u\n  user:\n    client-certificate: certs/client.pem\n    client-key-data: " +
                 key_data +
                 "\n    tokenFile: token\n"
                 "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./bin/plugin\n"
                 "      args: [get-token]\n      env: [{name: FOO, value: bar}]\n      provideClusterInfo: true\n"
                 "contexts:\n- name: c\n  context: {cluster: c, user: u}\n");
  auto sources = sources_with({}, dir);
  sources.kubeconfig_flag = (dir.path() / "conf" / "config").string();
  auto config = load_client_config(sources);
  REQUIRE(config.ok());
  CHECK(config->certificate_authority_pem == "CA-PEM");
  CHECK(config->client_certificate_pem == "CLIENT-PEM");
  CHECK(config->client_key_pem == "KEY-PEM");
  CHECK(config->tls_server_name == "kubernetes");
  CHECK(config->token_file == (dir.path() / "conf" / "token").string());
  REQUIRE(config->exec.has_value());
  CHECK(config->exec->command == (dir.path() / "conf" / "bin" / "plugin").string());
  CHECK(config->exec->args == std::vector<std::string>{"get-token"});
  CHECK(config->exec->provide_cluster_info);
  CHECK(config->default_namespace == "default");
  // The description names the source of credentials but never their values.
  CHECK(config->describe().find("KEY-PEM") == std::string::npos);
}

TEST_CASE("conflicting or unsupported settings are clear configuration errors", "[kubeconfig]") {
  TempDir dir;
  auto check_error = [&](const std::string& cluster_extra, const std::string& user_yaml, const std::string& expected) {
    write_file(dir.path() / "config",
               "current-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://x:1\n" + cluster_extra +
                   "users:\n- name: u\n  user:\n" + user_yaml +
                   "contexts:\n- name: c\n  context: {cluster: c, user: u}\n");
    auto sources = sources_with({}, dir);
    sources.kubeconfig_flag = (dir.path() / "config").string();
    auto config = load_client_config(sources);
    INFO(expected);
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().kind == ErrorKind::config);
    CHECK(config.error().message.find(expected) != std::string::npos);
  };
  std::string ca = encoding::base64_encode("CA");
  check_error("    insecure-skip-tls-verify: true\n    certificate-authority-data: " + ca + "\n", "    token: t\n",
              "insecure flag is not allowed");
  check_error("    proxy-url: http://proxy:3128\n", "    token: t\n", "proxy-url");
  check_error("", "    token: t\n    username: admin\n    password: pw\n", "not both");
  check_error("", "    auth-provider: {name: gcp}\n", "auth-provider");
  check_error("", "    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}\n", "not supported");
  check_error("", "    client-key-data: '!!!notbase64'\n    client-certificate-data: " + ca + "\n", "base64");
  // Values that would break the Authorization header, named by field but never shown.
  check_error("", "    token: \"abc\\r\\nX-Injected: 1\"\n", "user \"u\" (kubeconfig ");
  check_error("", "    token: \"abc\\r\\nX-Injected: 1\"\n", "token: holds a line break");
  check_error("", "    username: \"ad\\nmin\"\n    password: pw\n", "username: holds a control character");
  check_error("", "    username: admin\n    password: \"p\\u0007w\"\n", "password: holds a control character");
  check_error("", "    username: \"ad:min\"\n    password: pw\n", "username contains ':'");
}

}  // namespace kubeconfig_test
