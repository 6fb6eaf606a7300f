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
  std::string version = "1.31";
  double crd_establish_delay_seconds = 0.5;
  double crd_update_delay_seconds = 0;
  double compaction_interval_seconds = 300;  // kube-apiserver's --etcd-compaction-interval (0: never)
  FaultSettings faults;
  bool aggregated_discovery = true;  // false: behave as a server older than 1.26 (legacy discovery only)
  // false: no `default` ServiceAccount or `kube-root-ca.crt` ConfigMap in new namespaces
  // (a cluster without kube-controller-manager's controllers)
  bool namespace_controllers = true;
  double namespace_controllers_delay_seconds = 0;  // 0: at once, before the namespace's create is answered
  std::uint64_t seed = 0;                          // 0: random
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
