// The shared test fixture for kstate-emulator (tests/emulator/): starts the
// binary on a free loopback port with its own data directory and kubeconfig,
// and offers what integration tests need around it: the URL, kubeconfig path
// and tokens, raw HTTPS requests, stop/crash/restart (same port, same data),
// fault injection and the request log through the admin-only /emulator/ paths.
//
//   kstate::testing::Emulator emulator;                  // running when constructed
//   run_process({"kubectl", "--kubeconfig", emulator.kubeconfig_path(), "get", "ns"});
//   emulator.set_faults(R"({"failNext": 2, "failCode": 429, "retryAfterSeconds": 1})");
//   emulator.reset_request_log();  ...  CHECK(emulator.count_requests("PATCH", "/api/v1/namespaces/default/configmaps")
//   == 1);
//
// The binary is the build's kstate-emulator (or $KSTATE_EMULATOR when set).
// Construction throws std::runtime_error when it cannot start.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace kstate::testing {

struct EmulatorOptions {
  std::vector<std::string> extra_args;  // passed through, e.g. {"--fault-latency-ms", "50"}
  std::string version;                  // --version (empty: the emulator's default, 1.31)
  double crd_establish_delay_seconds = 0.2;
  // false: --no-namespace-controllers (no `default` ServiceAccount or `kube-root-ca.crt`
  // ConfigMap in each namespace), for tests that count every object of a collection
  bool namespace_controllers = true;
  // true: --openapi-schemas (OpenAPI v3 documents carry the built-in kinds' schemas)
  bool openapi_schemas = false;
};
// For tests that count every object of a collection they fill.
inline EmulatorOptions without_namespace_controllers() {
  EmulatorOptions options;
  options.namespace_controllers = false;
  return options;
}

struct HttpReply {
  int status = 0;  // 0 when the connection failed
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string error;                           // transport error, if any
};

// Path of the kstate-emulator binary tests should run.
std::filesystem::path emulator_binary();

class Emulator {
 public:
  explicit Emulator(EmulatorOptions options = {});
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  const std::string& url() const { return url_; }
  std::uint16_t port() const { return port_; }
  std::filesystem::path kubeconfig_path() const { return directory_.path() / "kubeconfig"; }
  std::filesystem::path data_dir() const { return directory_.path() / "data"; }
  const std::string& admin_token() const { return admin_token_; }
  const std::string& readonly_token() const { return readonly_token_; }
  const std::string& ca_pem() const { return ca_pem_; }

  int stop();      // SIGTERM: the store is flushed, the port freed; its exit code (-1: not running)
  void crash();    // SIGKILL: what a power cut would leave
  void restart();  // stops if needed, then starts on the same port with the same data directory
  bool running();

  // One HTTPS request (Connection: close). `token`: nullopt = admin, "" = no credentials.
  // `timeout` bounds each socket read/write (status 0 and `error` set when it fires).
  HttpReply request(const std::string& method, const std::string& path, const std::string& body = "",
                    const std::string& content_type = "application/json",
                    const std::optional<std::string>& token = std::nullopt,
                    const std::map<std::string, std::string>& headers = {},
                    std::chrono::seconds timeout = std::chrono::seconds(30)) const;

  // Fault injection (JSON keys: latencyMs, failNext, failFraction, failCode, retryAfterSeconds,
  // closeNext, hangNext, warnNext with warning, pathPrefix, path, method). Throws when the
  // emulator rejects the settings.
  void set_faults(const std::string& settings_json);
  void clear_faults();
  // The request log as JSON: {"total":N,"requests":[{method,path,query,verb,code,user,fault}],"counters":{...}}.
  std::string request_log() const;
  void reset_request_log();
  // Logged requests with this method (empty = any) whose path starts with path_prefix.
  int count_requests(const std::string& method, const std::string& path_prefix) const;
  // Requests that arrived and now wait out an injected latency of at least min_latency_ms,
  // with this method (empty = any) and a path starting with path_prefix (not logged yet:
  // the log has requests once served).
  int count_delayed(const std::string& method, const std::string& path_prefix, int min_latency_ms = 0) const;
  // Ends every such wait at once (the requests are then served); returns how many.
  void release_delayed();
  // Forgets watch history: watches from older resourceVersions then get 410 Expired.
  void compact();

 private:
  void start();

  EmulatorOptions options_;
  TempDir directory_{"kstate-emulator"};
  std::unique_ptr<BackgroundProcess> process_;
  std::string url_;
  std::uint16_t port_ = 0;
  std::string admin_token_;
  std::string readonly_token_;
  std::string ca_pem_;
};

}  // namespace kstate::testing
