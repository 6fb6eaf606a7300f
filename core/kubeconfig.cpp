// kubectl-compatible kubeconfig discovery, merging and resolution (see kubeconfig.hpp).
#include "core/kubeconfig.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "core/credential_file.hpp"
#include "core/encoding.hpp"

namespace kstate {
namespace {

namespace fs = std::filesystem;

// One named entry (cluster, user or context) and the folder its relative paths resolve against.
struct Entry {
  YAML::Node node;
  std::string folder;
  std::string file;
};

struct MergedConfig {
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
  std::string current_context;
  std::vector<std::string> files;

  bool empty() const { return clusters.empty() && users.empty() && contexts.empty() && current_context.empty(); }
};

Error config_error(std::string message) {
  return Error(ErrorKind::config, std::move(message));
}

std::optional<std::string> read_env(const KubeconfigSources& sources, const std::string& name) {
  if (sources.getenv) {
    return sources.getenv(name);
  }
  if (const char* value = std::getenv(name.c_str()); value != nullptr) {
    return std::string(value);
  }
  return std::nullopt;
}

// A file the kubeconfig names: every failure is a configuration error (kubeconfig.hpp),
// whether the file is missing or was refused.
Result<std::string> read_named_file(const std::string& path, const std::string& what) {
  auto content = read_credential_file(path, what);
  if (!content) {
    return config_error(content.error().message);
  }
  return content;
}

std::string resolve_path(const std::string& path, const std::string& folder) {
  if (path.empty() || fs::path(path).is_absolute()) {
    return path;
  }
  return (fs::path(folder) / path).lexically_normal().string();
}

// Merges one file: the first file that sets a name keeps it (kubectl's rule).
Status merge_file(const std::string& path, MergedConfig& merged) {
  auto text = read_bounded_file(path, "kubeconfig", max_kubeconfig_bytes, false);
  if (!text) {
    return config_error(text.error().message);
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return config_error("kubeconfig " + path + " is not valid YAML: " + e.what());
  }
  merged.files.push_back(path);
  if (!root || root.IsNull()) {
    return ok_status();  // an empty file is an empty config
  }
  if (!root.IsMap()) {
    return config_error("kubeconfig " + path + " is not a mapping");
  }
  std::string folder = fs::absolute(path).parent_path().string();
  auto merge_list = [&](const char* list_key, const char* item_key, std::map<std::string, Entry>& into) -> Status {
    auto list = root[list_key];
    if (!list || list.IsNull()) {
      return ok_status();
    }
    if (!list.IsSequence()) {
      return config_error("kubeconfig " + path + ": " + list_key + " is not a list");
    }
    for (const auto& item : list) {
      if (!item.IsMap() || !item["name"] || !item["name"].IsScalar()) {
        return config_error("kubeconfig " + path + ": an entry of " + list_key + " has no name");
      }
      auto name = item["name"].as<std::string>();
      YAML::Node value = item[item_key];
      // Later look-ups index the entry by key, which yaml-cpp refuses (throws) on a
      // scalar or a list: say which entry is wrong instead.
      if (value && !value.IsNull() && !value.IsMap()) {
        return config_error("kubeconfig " + path + ": " + item_key + " \"" + name + "\" is not a mapping");
      }
      if (into.count(name) == 0) {
        into.emplace(name, Entry{value ? value : YAML::Node(YAML::NodeType::Map), folder, path});
      }
    }
    return ok_status();
  };
  try {
    if (auto s = merge_list("clusters", "cluster", merged.clusters); !s) {
      return s;
    }
    if (auto s = merge_list("users", "user", merged.users); !s) {
      return s;
    }
    if (auto s = merge_list("contexts", "context", merged.contexts); !s) {
      return s;
    }
    if (merged.current_context.empty() && root["current-context"] && root["current-context"].IsScalar()) {
      merged.current_context = root["current-context"].as<std::string>();
    }
  } catch (const YAML::Exception& e) {
    return config_error("kubeconfig " + path + ": " + e.what());
  }
  return ok_status();
}

std::string scalar(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) {
    return {};
  }
  auto value = node[key];
  if (value && value.IsScalar()) {
    return value.as<std::string>();
  }
  return {};
}

bool boolean(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) {
    return false;
  }
  auto value = node[key];
  return value && value.IsScalar() && value.as<std::string>() == "true";
}

// A *-data field (base64 PEM) or its file twin; both set is an error, as in kubectl.
Result<std::string> pem_field(const Entry& entry, const char* file_key, const char* data_key,
                              const std::string& where) {
  auto data = scalar(entry.node, data_key);
  auto file = scalar(entry.node, file_key);
  if (!data.empty() && !file.empty()) {
    return config_error(std::string(data_key) + " and " + file_key + " are both specified for " + where + ". " +
                        data_key + " will override.");
  }
  if (!data.empty()) {
    auto decoded = encoding::base64_decode(data);
    if (!decoded) {
      return config_error(std::string(data_key) + " of " + where + " is not valid base64");
    }
    return std::move(*decoded);
  }
  if (!file.empty()) {
    return read_named_file(resolve_path(file, entry.folder), std::string(file_key) + " of " + where);
  }
  return std::string();
}

Result<ExecConfig> parse_exec(const Entry& user, const std::string& where) {
  const auto& node = user.node["exec"];
  if (!node.IsMap()) {
    return config_error("exec plugin of " + where + " is not a mapping");
  }
  ExecConfig exec;
  exec.api_version = scalar(node, "apiVersion");
  exec.command = scalar(node, "command");
  exec.install_hint = scalar(node, "installHint");
  exec.interactive_mode = scalar(node, "interactiveMode");
  exec.provide_cluster_info = boolean(node, "provideClusterInfo");
  if (exec.command.empty()) {
    return config_error("exec plugin of " + where + " has no command");
  }
  if (exec.api_version != "client.authentication.k8s.io/v1" &&
      exec.api_version != "client.authentication.k8s.io/v1beta1") {
    return config_error("exec plugin of " + where + ": apiVersion \"" + exec.api_version +
                        "\" is not supported (use client.authentication.k8s.io/v1 or v1beta1)");
  }
  if (exec.interactive_mode == "Always") {
    return config_error("exec plugin of " + where + " requires an interactive terminal (interactiveMode: Always)");
  }
  // kubectl resolves a command with a path separator against the kubeconfig's folder;
  // a bare name is looked up in PATH.
  if (exec.command.find('/') != std::string::npos) {
    exec.command = resolve_path(exec.command, user.folder);
  }
  if (auto args = node["args"]; args && args.IsSequence()) {
    for (const auto& arg : args) {
      exec.args.push_back(arg.as<std::string>());
    }
  }
  if (auto env = node["env"]; env && env.IsSequence()) {
    for (const auto& variable : env) {
      exec.env.emplace_back(scalar(variable, "name"), scalar(variable, "value"));
    }
  }
  return exec;
}

Result<ClientConfig> resolve(const MergedConfig& merged, const std::string& context_flag) {
  std::string origin;
  for (const auto& file : merged.files) {
    origin += (origin.empty() ? "" : ":") + file;
  }
  std::string context_name = context_flag.empty() ? merged.current_context : context_flag;
  if (context_name.empty()) {
    return config_error("no context is selected in " + origin + " (set current-context or use --context)");
  }
  auto context_it = merged.contexts.find(context_name);
  if (context_it == merged.contexts.end()) {
    return config_error("context \"" + context_name + "\" does not exist in " + origin);
  }
  const auto& context = context_it->second.node;
  auto cluster_name = scalar(context, "cluster");
  auto user_name = scalar(context, "user");
  auto cluster_it = merged.clusters.find(cluster_name);
  if (cluster_it == merged.clusters.end()) {
    return config_error("cluster \"" + cluster_name + "\" of context \"" + context_name + "\" does not exist in " +
                        origin);
  }
  ClientConfig config;
  config.context_name = context_name;
  config.origin = origin;
  if (auto ns = scalar(context, "namespace"); !ns.empty()) {
    config.default_namespace = ns;
  }
  try {
    const auto& cluster = cluster_it->second;
    // The file that defined the entry, so a broken entry of a merged KUBECONFIG list is found.
    std::string cluster_where = "cluster \"" + cluster_name + "\" (kubeconfig " + cluster.file + ")";
    config.server = scalar(cluster.node, "server");
    if (config.server.empty()) {
      return config_error(cluster_where + " has no server");
    }
    if (!scalar(cluster.node, "proxy-url").empty()) {
      return config_error(cluster_where + " sets proxy-url, which kstate does not support; connect directly");
    }
    config.tls_server_name = scalar(cluster.node, "tls-server-name");
    config.insecure_skip_tls_verify = boolean(cluster.node, "insecure-skip-tls-verify");
    auto ca = pem_field(cluster, "certificate-authority", "certificate-authority-data", cluster_where);
    if (!ca) {
      return ca.error();
    }
    config.certificate_authority_pem = std::move(ca.value());
    if (config.insecure_skip_tls_verify && !config.certificate_authority_pem.empty()) {
      return config_error(cluster_where +
                          ": specifying a root certificates file with the insecure flag is not allowed");
    }

    if (!user_name.empty() || merged.users.count(user_name) != 0) {
      auto user_it = merged.users.find(user_name);
      if (user_it == merged.users.end()) {
        return config_error("user \"" + user_name + "\" of context \"" + context_name + "\" does not exist in " +
                            origin);
      }
      const auto& user = user_it->second;
      std::string user_where = "user \"" + user_name + "\" (kubeconfig " + user.file + ")";
      if (user.node["auth-provider"]) {
        return config_error(user_where + " uses an auth-provider, which kstate does not support (use exec)");
      }
      if (user.node["as"] || user.node["as-groups"]) {
        return config_error(user_where + " uses impersonation, which kstate does not support");
      }
      auto cert = pem_field(user, "client-certificate", "client-certificate-data", user_where);
      if (!cert) {
        return cert.error();
      }
      auto key = pem_field(user, "client-key", "client-key-data", user_where);
      if (!key) {
        return key.error();
      }
      if (auto file = scalar(user.node, "client-certificate"); !file.empty()) {
        config.client_certificate_file = resolve_path(file, user.folder);
      }
      if (auto file = scalar(user.node, "client-key"); !file.empty()) {
        config.client_key_file = resolve_path(file, user.folder);
      }
      config.client_certificate_pem = std::move(cert.value());
      config.client_key_pem = std::move(key.value());
      if (config.client_certificate_pem.empty() != config.client_key_pem.empty()) {
        return config_error(user_where + " sets a client certificate without a key or a key without a certificate");
      }
      config.token = scalar(user.node, "token");
      config.token_file = resolve_path(scalar(user.node, "tokenFile"), user.folder);
      config.username = scalar(user.node, "username");
      config.password = scalar(user.node, "password");
      // Refused before anything is sent: a CR or LF would forge headers of its own.
      if (auto problem = token_problem(config.token); !config.token.empty() && !problem.empty()) {
        return config_error(user_where + ": token: " + problem + " (refused, never sent)");
      }
      for (const auto& [field, value] :
           {std::pair<const char*, const std::string*>{"username", &config.username}, {"password", &config.password}}) {
        if (auto problem = basic_auth_problem(*value); !problem.empty()) {
          return config_error(user_where + ": " + field + ": " + problem + " (refused, never sent)");
        }
      }
      if ((!config.token.empty() || !config.token_file.empty()) && !config.username.empty()) {
        return config_error(user_where + ": username/password or bearer token may be set, but not both");
      }
      if (config.username.find(':') != std::string::npos) {
        // Basic auth splits user name and password at the first ':'.
        return config_error(user_where +
                            ": username contains ':', which basic auth cannot carry (refused, never sent)");
      }
      if (user.node["exec"]) {
        auto exec = parse_exec(user, user_where);
        if (!exec) {
          return exec.error();
        }
        config.exec = std::move(exec.value());
      }
    }
  } catch (const YAML::Exception& e) {
    return config_error("kubeconfig " + origin + ": " + e.what());
  }
  return config;
}

Result<ClientConfig> in_cluster_config(const KubeconfigSources& sources, const std::string& host,
                                       const std::string& port) {
  ClientConfig config;
  config.in_cluster = true;
  config.origin = "in-cluster service account";
  config.context_name = "in-cluster";
  bool ipv6 = host.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  config.token_file = sources.service_account_dir + "/token";
  if (!fs::exists(config.token_file)) {
    return config_error("in-cluster: service account token " + config.token_file + " does not exist");
  }
  auto ca = read_named_file(sources.service_account_dir + "/ca.crt", "in-cluster CA");
  if (!ca) {
    return ca.error();
  }
  config.certificate_authority_pem = std::move(ca.value());
  if (auto ns = read_named_file(sources.service_account_dir + "/namespace", "namespace"); ns) {
    std::string value = ns.value();
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) {
      value.pop_back();
    }
    if (!value.empty()) {
      config.default_namespace = value;
    }
  }
  return config;
}

}  // namespace

std::string ClientConfig::describe() const {
  std::string auth;
  if (exec) {
    auth = "exec plugin " + exec->command;
  } else if (!token_file.empty()) {
    auth = "token file " + token_file;
  } else if (!token.empty()) {
    auth = "bearer token";
  } else if (!username.empty()) {
    auth = "basic auth as " + username;
  } else if (!client_certificate_pem.empty()) {
    auth = "client certificate";
  } else {
    auth = "anonymous";
  }
  return "server " + server + " (context \"" + context_name + "\" from " + origin + ", " + auth +
         (insecure_skip_tls_verify ? ", TLS verification disabled" : "") + ")";
}

std::vector<std::string> kubeconfig_search_list(const KubeconfigSources& sources) {
  if (!sources.kubeconfig_flag.empty()) {
    return {sources.kubeconfig_flag};
  }
  std::vector<std::string> files;
  if (auto list = read_env(sources, "KUBECONFIG"); list && !list->empty()) {
    std::set<std::string> seen;
    std::stringstream stream(*list);
    std::string item;
    while (std::getline(stream, item, ':')) {
      if (!item.empty() && seen.insert(item).second) {
        files.push_back(item);
      }
    }
    return files;
  }
  if (auto home = read_env(sources, "HOME"); home && !home->empty()) {
    files.push_back(*home + "/.kube/config");
  }
  return files;
}

Result<ClientConfig> load_client_config(const KubeconfigSources& sources) {
  MergedConfig merged;
  if (!sources.kubeconfig_flag.empty()) {
    if (!fs::exists(sources.kubeconfig_flag)) {
      return config_error("kubeconfig " + sources.kubeconfig_flag + " (--kubeconfig) does not exist");
    }
    if (auto s = merge_file(sources.kubeconfig_flag, merged); !s) {
      return s.error();
    }
    return resolve(merged, sources.context);
  }
  for (const auto& file : kubeconfig_search_list(sources)) {
    if (!fs::exists(file)) {
      continue;  // kubectl skips missing files of the list
    }
    if (auto s = merge_file(file, merged); !s) {
      return s.error();
    }
  }
  if (!merged.empty()) {
    return resolve(merged, sources.context);
  }
  if (!sources.admin_conf.empty() && fs::exists(sources.admin_conf)) {
    if (auto s = merge_file(sources.admin_conf, merged); !s) {
      return s.error();
    }
    return resolve(merged, sources.context);
  }
  auto host = read_env(sources, "KUBERNETES_SERVICE_HOST");
  auto port = read_env(sources, "KUBERNETES_SERVICE_PORT");
  if (host && port && !host->empty() && !port->empty()) {
    return in_cluster_config(sources, *host, *port);
  }
  return config_error(
      "no configuration has been provided: no kubeconfig found (--kubeconfig, KUBECONFIG, ~/.kube/config, " +
      sources.admin_conf + ") and not running in a cluster");
}

}  // namespace kstate
