// Finding and resolving the kubeconfig exactly as kubectl does, down to what one
// connection needs (ClientConfig): server, TLS material, and the credentials source.
//
// Search order: --kubeconfig (that file only, must exist); else every file of the
// KUBECONFIG list (missing files skipped; for clusters/users/contexts the first file
// that sets a name wins; current-context comes from the first file that sets it);
// else ~/.kube/config; then /etc/kubernetes/admin.conf; then the in-cluster service
// account (KUBERNETES_SERVICE_HOST/PORT + token, CA and namespace files). --context
// overrides current-context. Relative paths (certificate-authority, client-certificate,
// client-key, tokenFile, an exec command containing '/') resolve against the folder
// of the file that defined the entry.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace kstate {

// users[].user.exec: a client.authentication.k8s.io credential plugin.
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  bool provide_cluster_info = false;
  std::string interactive_mode;  // Never | IfAvailable | Always (kstate never has a terminal)
  std::string install_hint;
};

// Everything needed to talk to one API server. Secret fields (token, password,
// client key, exec output) must never be logged; describe() prints a redacted view.
struct ClientConfig {
  std::string server;  // https://host:port
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  std::string certificate_authority_pem;  // empty: the system trust store
  std::string client_certificate_pem;
  std::string client_key_pem;
  // Where the certificate and key came from when they are files (client-certificate,
  // client-key): re-read like the token file, so a rotated certificate is picked up.
  std::string client_certificate_file;
  std::string client_key_file;
  std::string token;
  std::string token_file;  // re-read (at most once a minute) so rotation works
  std::string username;
  std::string password;
  std::optional<ExecConfig> exec;
  bool in_cluster = false;                    // token file re-read every minute
  std::string default_namespace = "default";  // the context's namespace
  std::string context_name;
  std::string origin;  // which file(s) or "in-cluster", for messages

  // A one-line description without secrets, e.g. for `-v debug`.
  std::string describe() const;
};

// Where to look; every field has kubectl's default, tests override them.
struct KubeconfigSources {
  std::string kubeconfig_flag;  // --kubeconfig
  std::string context;          // --context
  // Environment look-up (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT).
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::string admin_conf = "/etc/kubernetes/admin.conf";
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Resolves the configuration to use. Errors are ErrorKind::config with one clear
// message (file and field named; never a secret value).
Result<ClientConfig> load_client_config(const KubeconfigSources& sources);

// The files kubectl would read, in precedence order (for messages and tests).
std::vector<std::string> kubeconfig_search_list(const KubeconfigSources& sources);

}  // namespace kstate
