// Credentials for each request: where the Authorization header and the client
// certificate come from (static token, token file re-read so rotation works, basic
// auth, exec credential plugins with caching until expirationTimestamp, in-cluster
// service account). The transport asks for credentials before each request and asks
// again with `after_unauthorized` once when the server answered 401, which re-reads
// token files and re-runs exec plugins.
#pragma once

#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/kubeconfig.hpp"

namespace kstate {

struct Credentials {
  std::string authorization;  // full header value ("Bearer ...", "Basic ..."); empty: none
  std::string client_certificate_pem;
  std::string client_key_pem;
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // Current credentials. `after_unauthorized`: the last request got 401 with these,
  // so cached tokens must be refreshed (token file re-read, exec plugin re-run).
  virtual Result<Credentials> get(bool after_unauthorized) = 0;
  // Whether get(after_unauthorized) may block for long (run an exec plugin): the
  // transport then calls it on a worker thread so the io thread keeps serving others.
  // get() is never called twice at once.
  virtual bool may_block(bool /*after_unauthorized*/) const { return false; }
};

// Runs an exec plugin: given the plugin and the KUBERNETES_EXEC_INFO value, returns
// its standard output. Injected so tests can count runs; the default spawns it.
using ExecRunner = std::function<Result<std::string>(const ExecConfig& exec, const std::string& exec_info)>;
// Spawns the plugin (PATH look-up for bare names), environment = ours + exec.env +
// KUBERNETES_EXEC_INFO, stdin /dev/null, stderr inherited (as kubectl), a deadline.
Result<std::string> run_exec_plugin(const ExecConfig& exec, const std::string& exec_info,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The decoded status of an ExecCredential.
struct ExecCredentialStatus {
  std::string token;
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expiration;
};
// Parses plugin output; checks apiVersion matches the one requested and kind.
Result<ExecCredentialStatus> parse_exec_credential(std::string_view output, std::string_view expected_api_version);
// The KUBERNETES_EXEC_INFO JSON for a plugin (cluster info when provideClusterInfo).
std::string exec_info_json(const ExecConfig& exec, const ClientConfig& config);
// RFC 3339 ("2026-11-21T10:00:00Z", fractions and offsets accepted). nullopt as well for
// times the clock cannot hold (nanoseconds in 64 bits: years 1678 to 2262).
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);
// The same as seconds since 1970, for any year (what to do beyond the clock is the caller's).
std::optional<std::time_t> parse_rfc3339_seconds(std::string_view text);

// Credentials from a resolved kubeconfig. `clock` is injected so tests check expiry
// and the one-minute token file re-read without sleeping.
struct CredentialOptions {
  std::shared_ptr<const Clock> clock;                                 // its wall time; the real clock when null
  ExecRunner exec_runner;                                             // default: run_exec_plugin
  std::chrono::milliseconds exec_timeout = std::chrono::seconds(60);  // the default runner kills the plugin then
  // How often token files and client certificate/key files are re-read (and always
  // after a 401), so rotated credentials are picked up while running.
  std::chrono::seconds token_file_refresh = std::chrono::seconds(60);
};
std::unique_ptr<CredentialSource> make_credential_source(const ClientConfig& config, CredentialOptions options = {});

}  // namespace kstate
