// The network side of kstate-emulator: TLS (server certificate + optional client
// certificates), HTTP/1.1 keep-alive with Boost.Beast on one io_context thread,
// authentication, the /emulator/ control endpoints, fault injection, watch
// streaming (chunked), the periodic tick and --data-dir persistence. The API
// semantics themselves are in ApiServer.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/emulator/access.hpp"
#include "tests/emulator/control.hpp"
#include "tests/emulator/pki.hpp"

namespace kstate::emulator {

struct EmulatorOptions {
  std::string listen = "127.0.0.1:0";
  std::filesystem::path kubeconfig_out;
  std::optional<std::filesystem::path> data_dir;
  std::string version = "1.31";              // see ApiServer::Options::version
  double compaction_interval_seconds = 300;  // kube-apiserver's --etcd-compaction-interval (0: never)
  FaultSettings faults;
  bool aggregated_discovery = true;  // false: behave as a server older than 1.26 (legacy discovery only)
  bool openapi_schemas = false;      // --openapi-schemas (ApiServer::Options::openapi_schemas)
  // The controllers' delays in seconds; ControllerOptions (controllers.hpp) says what each
  // does and what a real cluster takes.
  double crd_establish_delay_seconds = 0.5;
  double crd_update_delay_seconds = 0;
  double crd_deletion_delay_seconds = 0;
  double crd_create_hold_seconds = 0.1;       // ApiServer::Options::crd_create_hold
  double crd_create_hold_window_seconds = 2;  // ApiServer::Options::crd_create_hold_window
  // false: no `default` ServiceAccount or `kube-root-ca.crt` ConfigMap in new namespaces
  // (a cluster without kube-controller-manager's controllers)
  bool namespace_controllers = true;
  double namespace_controllers_delay_seconds = 0;  // 0: at once, before the namespace's create is answered
  double namespace_deletion_delay_seconds = 0.2;
  double namespace_recheck_interval_seconds = 0.2;
  bool deployment_controller = true;
  double deployment_controller_delay_seconds = 0;
  bool job_controller = true;
  double job_controller_delay_seconds = 0;
  // Seconds between a watch's bookmarks (besides the one 2 s before its timeoutSeconds);
  // kube-apiserver's watch cache: 60.
  double watch_bookmark_interval_seconds = 1;
  std::uint64_t seed = 0;  // 0: random
  // --preload: fixture files whose objects are stored at start-up, status included (preload.hpp)
  std::vector<std::filesystem::path> preload;
};

// Runs until SIGINT/SIGTERM; returns the process exit code.
int run_emulator(const EmulatorOptions& options);

// The kubeconfig the emulator writes (contexts: default admin token, `readonly`, `cert-admin`,
// and one per password user: `basic-reader`, `pod-reader`; access.hpp).
std::string make_kubeconfig(const std::string& server_url, const std::string& ca_pem, const std::string& admin_token,
                            const std::string& readonly_token, const CertificateAndKey& client_certificate,
                            const std::vector<PasswordUser>& password_users = {});

}  // namespace kstate::emulator
