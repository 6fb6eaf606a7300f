// kstate-emulator: a loopback kube-apiserver for tests and demos.
//   kstate-emulator --listen 127.0.0.1:0 --kubeconfig-out FILE [--data-dir DIR] [--version 1.32]
//                   [--real-delays] [controller delays...] [--preload FILE ...] [--fault-* ...]
// Prints "listening on https://127.0.0.1:PORT" once it accepts connections.
// tests/emulator/README.md describes every option and what differs from a real cluster.
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
  app.add_option("--version", options.version,
                 "Kubernetes version to report, MAJOR.MINOR (default 1.31: kubectl sends protobuf to 1.32 and later)");
  app.add_option("--compaction-interval", options.compaction_interval_seconds,
                 "seconds between compactions of the watch history, as kube-apiserver's "
                 "--etcd-compaction-interval (default 300; 0: never)")
      ->check(CLI::Range(0.0, 365.0 * 24 * 3600));

  // The controllers' delays: fast by default, a real cluster's with --real-delays.
  bool real_delays = false;
  app.add_flag("--real-delays", real_delays,
               "use the delays a real cluster shows (namespace deletion 5 s, CRD establishment 0.025 s, CR creates "
               "held 2 s, ...) for every delay not given on the command line");
  const auto seconds = CLI::Range(0.0, 3600.0);
  app.add_option("--crd-establish-delay", options.crd_establish_delay_seconds,
                 "seconds before a new CRD is established and its kinds served (default 0.5; real 0.025)")
      ->check(seconds);
  app.add_option("--crd-update-delay", options.crd_update_delay_seconds,
                 "seconds before a spec change of an established CRD (a version added or no longer served) "
                 "is served and listed in discovery (default 0: at once)")
      ->check(seconds);
  app.add_option("--crd-deletion-delay", options.crd_deletion_delay_seconds,
                 "seconds before a deleted CRD reports deletion in progress, and as long again before its custom "
                 "resources and the CRD are gone (default 0; real 0.05)")
      ->check(seconds);
  app.add_option("--crd-create-hold", options.crd_create_hold_seconds,
                 "seconds a create (POST) of a custom resource is held when it comes within --crd-create-hold-window "
                 "of its CRD's establishment (default 0.1; real 2; 0: never)")
      ->check(seconds);
  app.add_option("--crd-create-hold-window", options.crd_create_hold_window_seconds,
                 "see --crd-create-hold (default 2, as real)")
      ->check(seconds);
  bool no_namespace_controllers = false;
  app.add_flag("--no-namespace-controllers", no_namespace_controllers,
               "do not create the ServiceAccount `default` and the ConfigMap `kube-root-ca.crt` in each namespace, "
               "as kube-controller-manager does");
  app.add_option("--namespace-controllers-delay", options.namespace_controllers_delay_seconds,
                 "seconds after a namespace is created before those two are made in it (default 0: at once, before "
                 "the namespace's create is answered; real 0.005-0.1)")
      ->check(seconds);
  app.add_option("--namespace-deletion-delay", options.namespace_deletion_delay_seconds,
                 "seconds after a namespace's deletion before the namespace controller removes its content "
                 "(default 0.2; real 5)")
      ->check(seconds);
  app.add_option("--namespace-recheck-interval", options.namespace_recheck_interval_seconds,
                 "seconds between the namespace controller's passes while content with finalizers remains "
                 "(default 0.2; real 15)")
      ->check(seconds);
  bool no_deployment_controller = false;
  app.add_flag("--no-deployment-controller", no_deployment_controller,
               "do not write Deployments' status and deployment.kubernetes.io/revision annotation");
  app.add_option("--deployment-controller-delay", options.deployment_controller_delay_seconds,
                 "seconds after a Deployment's spec changes before its status is written (default 0: right after "
                 "the change is answered; real: under a second idle, up to 22 s busy)")
      ->check(seconds);
  bool no_job_controller = false;
  app.add_flag("--no-job-controller", no_job_controller, "do not write a new Job's status");
  app.add_option("--job-controller-delay", options.job_controller_delay_seconds,
                 "seconds after a Job is created before its status is written (default 0; real about 1)")
      ->check(seconds);

  app.add_option("--watch-bookmark-interval", options.watch_bookmark_interval_seconds,
                 "seconds between a watch's bookmarks when the revision moved on, besides the one 2 s before its "
                 "timeoutSeconds (default 1; real 60)")
      ->check(CLI::Range(0.001, 3600.0));

  app.add_option("--fault-latency-ms", options.faults.latency_ms, "added latency on every request");
  app.add_option("--fault-fail-fraction", options.faults.fail_fraction, "fraction of requests answered --fault-code");
  app.add_option("--fault-fail-next", options.faults.fail_next, "the next N requests are answered --fault-code");
  app.add_option("--fault-code", options.faults.fail_code, "status code of injected failures (429, 500, 503)");
  app.add_option("--fault-retry-after", options.faults.retry_after_seconds, "Retry-After seconds on 429/503");
  app.add_flag("--openapi-schemas", options.openapi_schemas,
               "publish the built-in field table as OpenAPI v3 schemas (off: documents without schemas, and kubectl "
               "keeps its compiled-in patch rules)");
  bool no_aggregated_discovery = false;
  app.add_flag("--no-aggregated-discovery", no_aggregated_discovery,
               "serve legacy discovery only, as kube-apiserver before 1.26 (406 when Accept allows nothing else)");
  app.add_option("--seed", options.seed, "random seed (uids, generated names, fault rolls)");
  app.add_option("--preload", options.preload,
                 "YAML or JSON file of objects stored at start-up as a running cluster's state, status included "
                 "(e.g. Nodes and Pods with container statuses); repeatable");
  CLI11_PARSE(app, argc, argv);
  if (real_delays) {
    // What the recordings of kube-apiserver 1.32 show (tests/emulator/README.md).
    struct RealDelay {
      const char* flag;
      double* seconds;
      double real;
    };
    const RealDelay delays[] = {
        {"--crd-establish-delay", &options.crd_establish_delay_seconds, 0.025},
        {"--crd-deletion-delay", &options.crd_deletion_delay_seconds, 0.05},
        {"--crd-create-hold", &options.crd_create_hold_seconds, 2},
        {"--namespace-controllers-delay", &options.namespace_controllers_delay_seconds, 0.05},
        {"--namespace-deletion-delay", &options.namespace_deletion_delay_seconds, 5},
        {"--namespace-recheck-interval", &options.namespace_recheck_interval_seconds, 15},
        {"--deployment-controller-delay", &options.deployment_controller_delay_seconds, 0.5},
        {"--job-controller-delay", &options.job_controller_delay_seconds, 1},
        {"--watch-bookmark-interval", &options.watch_bookmark_interval_seconds, 60},
    };
    for (const auto& delay : delays) {
      if (app.count(delay.flag) == 0) {
        *delay.seconds = delay.real;
      }
    }
  }
  options.kubeconfig_out = kubeconfig;
  options.aggregated_discovery = !no_aggregated_discovery;
  options.namespace_controllers = !no_namespace_controllers;
  options.deployment_controller = !no_deployment_controller;
  options.job_controller = !no_job_controller;
  if (!data_dir.empty()) {
    options.data_dir = data_dir;
  }
  return kstate::emulator::run_emulator(options);
}
