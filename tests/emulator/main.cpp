// kstate-emulator: a loopback kube-apiserver for tests and demos.
//   kstate-emulator --listen 127.0.0.1:0 --kubeconfig-out FILE [--data-dir DIR] [--version 1.31]
//                   [--crd-establish-delay SECONDS] [--crd-update-delay SECONDS]
//                   [--compaction-interval SECONDS] [--no-namespace-controllers] [--namespace-controllers-delay
//                   SECONDS] [--preload FILE ...] [--fault-* ...]
// Prints "listening on https://127.0.0.1:PORT" once it accepts connections.
#include <CLI/CLI.hpp>

#include "tests/emulator/http_server.hpp"

int main(int argc, char** argv) {
  kstate::emulator::EmulatorOptions options;
  CLI::App app{"kstate-emulator: a loopback kube-apiserver for tests and demos"};
  std::string kubeconfig;
  std::string data_dir;
  app.add_option("--listen", options.listen, "HOST:PORT to listen on (port 0 picks a free one)");
  app.add_option("--kubeconfig-out", kubeconfig, "where to write the kubeconfig")->required();
  app.add_option("--data-dir", data_dir, "keep objects (and credentials) here across restarts");
  app.add_option("--version", options.version, "Kubernetes version to report, MAJOR.MINOR");
  app.add_option("--crd-establish-delay", options.crd_establish_delay_seconds,
                 "seconds before a new CRD's kinds are served (default 0.5)");
  app.add_option("--crd-update-delay", options.crd_update_delay_seconds,
                 "seconds before a spec change of an established CRD (a version added or no longer served) "
                 "is served and listed in discovery (default 0: at once)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--compaction-interval", options.compaction_interval_seconds,
                 "seconds between compactions of the watch history, as kube-apiserver's "
                 "--etcd-compaction-interval (default 300; 0: never)")
      ->check(CLI::Range(0.0, 365.0 * 24 * 3600));
  app.add_option("--fault-latency-ms", options.faults.latency_ms, "added latency on every request");
  app.add_option("--fault-fail-fraction", options.faults.fail_fraction, "fraction of requests answered --fault-code");
  app.add_option("--fault-fail-next", options.faults.fail_next, "the next N requests are answered --fault-code");
  app.add_option("--fault-code", options.faults.fail_code, "status code of injected failures (429, 500, 503)");
  app.add_option("--fault-retry-after", options.faults.retry_after_seconds, "Retry-After seconds on 429/503");
  bool no_aggregated_discovery = false;
  app.add_flag("--no-aggregated-discovery", no_aggregated_discovery,
               "serve legacy discovery only, as kube-apiserver before 1.26 (406 when Accept allows nothing else)");
  bool no_namespace_controllers = false;
  app.add_flag("--no-namespace-controllers", no_namespace_controllers,
               "do not create the ServiceAccount `default` and the ConfigMap `kube-root-ca.crt` in each namespace, "
               "as kube-controller-manager does");
  app.add_option("--namespace-controllers-delay", options.namespace_controllers_delay_seconds,
                 "seconds after a namespace is created before those two are made in it (a real cluster: 0.005-0.1; "
                 "default 0: at once, before the namespace's create is answered)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--seed", options.seed, "random seed (uids, generated names, fault rolls)");
  app.add_option("--preload", options.preload,
                 "YAML or JSON file of objects stored at start-up as a running cluster's state, status included "
                 "(e.g. Nodes and Pods with container statuses); repeatable");
  CLI11_PARSE(app, argc, argv);
  options.kubeconfig_out = kubeconfig;
  options.aggregated_discovery = !no_aggregated_discovery;
  options.namespace_controllers = !no_namespace_controllers;
  if (!data_dir.empty()) {
    options.data_dir = data_dir;
  }
  return kstate::emulator::run_emulator(options);
}
