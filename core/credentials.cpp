// Credential sources: token, token file, basic auth, exec plugins, in-cluster.
#include "core/credentials.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/credential_file.hpp"
#include "core/encoding.hpp"
#include "core/json.hpp"
#include "core/strings.hpp"

extern char** environ;  // NOLINT: POSIX

namespace kstate {
namespace {

using WallClock = std::chrono::system_clock;

std::optional<std::string> read_whole_file(const std::string& path) {
  auto content = read_credential_file(path, "client certificate");
  if (!content) {
    return std::nullopt;
  }
  return std::move(content.value());
}

// Whether a PEM certificate and a PEM private key belong together.
bool certificate_matches_key(const std::string& certificate_pem, const std::string& key_pem) {
  BIO* certificate_bio = BIO_new_mem_buf(certificate_pem.data(), static_cast<int>(certificate_pem.size()));
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* certificate =
      certificate_bio != nullptr ? PEM_read_bio_X509(certificate_bio, nullptr, nullptr, nullptr) : nullptr;
  EVP_PKEY* key = key_bio != nullptr ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
  bool matches = certificate != nullptr && key != nullptr && X509_check_private_key(certificate, key) == 1;
  ERR_clear_error();  // a failed parse must not confuse the next TLS call on this thread
  EVP_PKEY_free(key);
  X509_free(certificate);
  BIO_free(key_bio);
  BIO_free(certificate_bio);
  return matches;
}

class KubeconfigCredentialSource final : public CredentialSource {
 public:
  KubeconfigCredentialSource(ClientConfig config, CredentialOptions options)
      : config_(std::move(config)), options_(std::move(options)) {
    if (!options_.clock) {
      options_.clock = real_clock();
    }
    if (!options_.exec_runner) {
      options_.exec_runner = [timeout = options_.exec_timeout](const ExecConfig& exec, const std::string& info) {
        return run_exec_plugin(exec, info, timeout);
      };
    }
  }

  bool may_block(bool after_unauthorized) const override {
    if (!config_.exec) {
      return false;
    }
    bool expired = exec_cache_ && exec_cache_->expiration && *exec_cache_->expiration <= options_.clock->wall_now();
    return !exec_cache_ || expired || after_unauthorized;
  }

  Result<Credentials> get(bool after_unauthorized) override {
    Credentials credentials;
    refresh_client_certificate(after_unauthorized);
    credentials.client_certificate_pem = config_.client_certificate_pem;
    credentials.client_key_pem = config_.client_key_pem;
    if (config_.exec) {
      auto now = options_.clock->wall_now();
      bool expired = exec_cache_ && exec_cache_->expiration && *exec_cache_->expiration <= now;
      if (!exec_cache_ || expired || after_unauthorized) {
        auto output = options_.exec_runner(*config_.exec, exec_info_json(*config_.exec, config_));
        if (!output) {
          return output.error();
        }
        auto status = parse_exec_credential(output.value(), config_.exec->api_version);
        if (!status) {
          return status.error();
        }
        exec_cache_ = std::move(status.value());
      }
      if (!exec_cache_->token.empty()) {
        credentials.authorization = "Bearer " + exec_cache_->token;  // (checked: parse_exec_credential)
      }
      if (!exec_cache_->client_certificate_pem.empty()) {
        credentials.client_certificate_pem = exec_cache_->client_certificate_pem;
        credentials.client_key_pem = exec_cache_->client_key_pem;
      }
      return credentials;
    }
    if (!config_.token_file.empty()) {
      auto now = options_.clock->wall_now();
      if (!file_token_read_ || now - file_token_read_at_ >= options_.token_file_refresh || after_unauthorized) {
        auto content = read_credential_file(config_.token_file, "the bearer token file");
        std::string token = content ? std::string(strings::trim(*content)) : std::string();
        if (!content && content.error().kind != ErrorKind::io) {
          return content.error();  // refused: not a regular file, too large
        }
        if (!content || token.empty()) {
          // Missing, unreadable or empty: keep serving the last good token while a
          // rotation is in progress.
          if (file_token_.empty() && config_.token.empty()) {
            return content ? Error(ErrorKind::config, "the bearer token file " + config_.token_file + " is empty")
                           : content.error();
          }
        } else if (auto problem = token_problem(token); !problem.empty()) {
          // Never sent, never quoted: `tokenFile: /etc/shadow` must not end up in a header.
          return Error(ErrorKind::config,
                       "the bearer token file " + config_.token_file + ": " + problem + " (refused, never sent)");
        } else {
          file_token_ = std::move(token);
        }
        file_token_read_ = true;
        file_token_read_at_ = now;
      }
      const std::string& token = file_token_.empty() ? config_.token : file_token_;
      credentials.authorization = "Bearer " + token;
      return credentials;
    }
    if (!config_.token.empty()) {
      credentials.authorization = "Bearer " + config_.token;
    } else if (!config_.username.empty() || !config_.password.empty()) {
      credentials.authorization = "Basic " + encoding::base64_encode(config_.username + ":" + config_.password);
    }
    return credentials;
  }

 private:
  // Re-reads client-certificate/client-key files at the refresh interval (and after a
  // 401). A pair that cannot be read or does not match (a rotation half done) is
  // ignored: the last good pair stays in use.
  void refresh_client_certificate(bool after_unauthorized) {
    if (config_.client_certificate_file.empty() || config_.client_key_file.empty()) {
      return;
    }
    auto now = options_.clock->wall_now();
    if (!certificate_read_at_) {
      certificate_read_at_ = now;  // loaded with the kubeconfig
    }
    if (!after_unauthorized && now - *certificate_read_at_ < options_.token_file_refresh) {
      return;
    }
    certificate_read_at_ = now;
    auto certificate = read_whole_file(config_.client_certificate_file);
    auto key = read_whole_file(config_.client_key_file);
    if (!certificate || !key || certificate->empty() || key->empty()) {
      return;
    }
    if (*certificate == config_.client_certificate_pem && *key == config_.client_key_pem) {
      return;
    }
    if (!certificate_matches_key(*certificate, *key)) {
      return;
    }
    config_.client_certificate_pem = std::move(*certificate);
    config_.client_key_pem = std::move(*key);
  }

  ClientConfig config_;
  CredentialOptions options_;
  std::optional<WallClock::time_point> certificate_read_at_;
  std::optional<ExecCredentialStatus> exec_cache_;
  std::string file_token_;
  bool file_token_read_ = false;
  WallClock::time_point file_token_read_at_{};
};

}  // namespace

std::optional<std::time_t> parse_rfc3339_seconds(std::string_view text) {
  std::string value(text);
  std::tm tm{};
  const char* rest = strptime(value.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) {
    return std::nullopt;
  }
  if (*rest == '.') {  // fractional seconds: ignored (sub-second precision is irrelevant here)
    ++rest;
    while (*rest >= '0' && *rest <= '9') {
      ++rest;
    }
  }
  long offset_seconds = 0;
  if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else if (*rest == '+' || *rest == '-') {
    int hours = 0;
    int minutes = 0;
    if (std::sscanf(rest + 1, "%2d:%2d", &hours, &minutes) != 2) {
      return std::nullopt;
    }
    offset_seconds = (*rest == '+' ? 1 : -1) * (hours * 3600L + minutes * 60L);
    rest += 6;
  } else {
    return std::nullopt;
  }
  if (*rest != '\0') {
    return std::nullopt;
  }
  return timegm(&tm) - offset_seconds;
}

std::optional<WallClock::time_point> parse_rfc3339(std::string_view text) {
  auto seconds = parse_rfc3339_seconds(text);
  // Whole seconds the clock holds, with a second to spare for the fractions callers add.
  constexpr std::time_t limit =
      std::chrono::duration_cast<std::chrono::seconds>(WallClock::duration::max()).count() - 1;
  if (!seconds || *seconds > limit || *seconds < -limit) {
    return std::nullopt;
  }
  return WallClock::from_time_t(*seconds);
}

std::string exec_info_json(const ExecConfig& exec, const ClientConfig& config) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("apiVersion");
  writer.String(exec.api_version);
  writer.Key("kind");
  writer.String("ExecCredential");
  writer.Key("spec");
  writer.StartObject();
  writer.Key("interactive");
  writer.Bool(false);
  if (exec.provide_cluster_info) {
    writer.Key("cluster");
    writer.StartObject();
    writer.Key("server");
    writer.String(config.server);
    if (!config.tls_server_name.empty()) {
      writer.Key("tls-server-name");
      writer.String(config.tls_server_name);
    }
    if (config.insecure_skip_tls_verify) {
      writer.Key("insecure-skip-tls-verify");
      writer.Bool(true);
    }
    if (!config.certificate_authority_pem.empty()) {
      writer.Key("certificate-authority-data");
      writer.String(encoding::base64_encode(config.certificate_authority_pem));
    }
    writer.EndObject();
  }
  writer.EndObject();
  writer.EndObject();
  return buffer.GetString();
}

Result<ExecCredentialStatus> parse_exec_credential(std::string_view output, std::string_view expected_api_version) {
  // Never quote the output in errors: it holds the credential.
  auto document = json::parse(output);
  if (!document || !document->IsObject()) {
    return Error(ErrorKind::config, "exec plugin output is not a JSON ExecCredential");
  }
  if (json::get_string(*document, "kind") != "ExecCredential") {
    return Error(ErrorKind::config, "exec plugin output is not of kind ExecCredential");
  }
  auto api_version = json::get_string(*document, "apiVersion");
  if (api_version != expected_api_version) {
    return Error(ErrorKind::config, "exec plugin returned apiVersion \"" + std::string(api_version.value_or("")) +
                                        "\", expected \"" + std::string(expected_api_version) + "\"");
  }
  const auto* status = json::find(*document, "status");
  if (status == nullptr || !status->IsObject()) {
    return Error(ErrorKind::config, "exec plugin output has no status");
  }
  ExecCredentialStatus result;
  result.token = std::string(json::string_or(json::find(*status, "token"), ""));
  result.client_certificate_pem = std::string(json::string_or(json::find(*status, "clientCertificateData"), ""));
  result.client_key_pem = std::string(json::string_or(json::find(*status, "clientKeyData"), ""));
  if (result.token.empty() && result.client_certificate_pem.empty()) {
    return Error(ErrorKind::config, "exec plugin returned neither a token nor a client certificate");
  }
  if (auto problem = token_problem(result.token); !result.token.empty() && !problem.empty()) {
    return Error(ErrorKind::config, "exec plugin returned a token that " + problem + " (refused, never sent)");
  }
  if (result.client_certificate_pem.empty() != result.client_key_pem.empty()) {
    return Error(ErrorKind::config, "exec plugin returned a client certificate without a key, or a key alone");
  }
  if (auto expiration = json::get_string(*status, "expirationTimestamp"); expiration && !expiration->empty()) {
    auto seconds = parse_rfc3339_seconds(*expiration);
    if (!seconds) {
      return Error(ErrorKind::config, "exec plugin returned an invalid expirationTimestamp");
    }
    // Go's time (and so client-go) holds years the clock here does not: a far-future
    // expiry never comes, a time before 1678 (Go's zero time is year 1) has passed.
    result.expiration = parse_rfc3339(*expiration);
    if (!result.expiration) {
      result.expiration = *seconds > 0 ? WallClock::time_point::max() : WallClock::time_point::min();
    }
  }
  return result;
}

Result<std::string> run_exec_plugin(const ExecConfig& exec, const std::string& exec_info,
                                    std::chrono::milliseconds timeout) {
  std::vector<std::string> environment;
  auto overridden = [&](std::string_view entry) {
    auto name = entry.substr(0, entry.find('='));
    if (name == "KUBERNETES_EXEC_INFO") {
      return true;
    }
    for (const auto& [key, value] : exec.env) {
      if (key == name) {
        return true;
      }
    }
    return false;
  };
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!overridden(*entry)) {
      environment.emplace_back(*entry);
    }
  }
  for (const auto& [key, value] : exec.env) {
    environment.push_back(key + "=" + value);
  }
  environment.push_back("KUBERNETES_EXEC_INFO=" + exec_info);
  std::vector<char*> envp;
  for (auto& entry : environment) {
    envp.push_back(entry.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> arguments{exec.command};
  arguments.insert(arguments.end(), exec.args.begin(), exec.args.end());
  std::vector<char*> argv;
  for (auto& argument : arguments) {
    argv.push_back(argument.data());
  }
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Error(ErrorKind::io, std::string("exec plugin: pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  pid_t pid = 0;
  // Its own process group, so the deadline kills what a wrapper script started too
  // (a `sleep` left behind would keep our stderr open and outlive the plugin).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  int spawn_error = posix_spawnp(&pid, exec.command.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawn_error != 0) {
    close(pipe_fds[0]);
    std::string message = "exec plugin \"" + exec.command + "\" could not be started: " + std::strerror(spawn_error);
    if (!exec.install_hint.empty()) {
      message += "\n" + exec.install_hint;
    }
    return Error(ErrorKind::config, message);
  }
  std::string output;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  bool too_long = false;
  for (;;) {
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (remaining <= 0) {
      timed_out = true;
      break;
    }
    pollfd descriptor{pipe_fds[0], POLLIN, 0};
    int ready = poll(&descriptor, 1, static_cast<int>(remaining));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    char chunk[4096];
    auto count = read(pipe_fds[0], chunk, sizeof chunk);
    if (count < 0 && errno == EINTR) {
      continue;
    }
    if (count <= 0) {
      break;
    }
    if (output.size() + static_cast<std::size_t>(count) > max_credential_bytes) {
      too_long = true;  // a credential is a few kB: this is not one
      break;
    }
    output.append(chunk, static_cast<std::size_t>(count));
  }
  close(pipe_fds[0]);
  if (timed_out || too_long) {
    kill(-pid, SIGKILL);  // the whole group
  }
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Error(ErrorKind::timeout, "exec plugin \"" + exec.command + "\" did not finish in time");
  }
  if (too_long) {
    return Error(ErrorKind::config, "exec plugin \"" + exec.command + "\" wrote more than " +
                                        std::to_string(max_credential_bytes / 1024) + " KiB (refused)");
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return Error(ErrorKind::config, "exec plugin \"" + exec.command + "\" failed (exit status " +
                                        std::to_string(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1) + ")");
  }
  return output;
}

std::unique_ptr<CredentialSource> make_credential_source(const ClientConfig& config, CredentialOptions options) {
  return std::make_unique<KubeconfigCredentialSource>(config, std::move(options));
}

}  // namespace kstate
