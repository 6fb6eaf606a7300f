// kstate-bench-corpus: writes a deterministic benchmark corpus of N Kubernetes objects
// over M namespaces with the mix a real cluster directory holds (Namespaces,
// ConfigMaps, Secrets, Services, ServiceAccounts, Deployments, Roles, RoleBindings,
// one CRD and its custom resources), so that kstate and kubectl are timed on the
// same files. `--change P` rewrites the same corpus with P% of the objects changed
// (spread evenly), which is how the "10% changed" scenarios are produced. The
// Deployments' quantities are written as a real server does not store them (cpu: 0.1
// is stored "100m", 0.125Gi "128Mi"), as people write them: a re-apply that compared
// them as written would write every Deployment, and the benchmark fails on any write.
//
//   kstate-bench-corpus --out DIR --objects 1000 --namespaces 10 [--layout namespace|object] [--change 10]
#include <openssl/evp.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr int kindCount = 8;  // the namespaced kinds cycled through below

std::string base64(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                               reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(length));
  return out;
}

// The labels every object carries; the revision label is what `--change` alters, so a
// changed object differs by one field, as an edited manifest usually does.
std::string labels(const std::string& app, bool changed, const std::string& indent) {
  return indent + "labels:\n" + indent + "  app.kubernetes.io/name: " + app + "\n" + indent +
         "  bench.kstate.io/revision: \"" + (changed ? "2" : "1") + "\"\n";
}

std::string crd_document() {
  return "apiVersion: apiextensions.k8s.io/v1\n"
         "kind: CustomResourceDefinition\n"
         "metadata:\n  name: widgets.bench.kstate.io\n"
         "spec:\n  group: bench.kstate.io\n  scope: Namespaced\n"
         "  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n"
         "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
         "    schema:\n      openAPIV3Schema:\n        type: object\n"
         "        x-kubernetes-preserve-unknown-fields: true\n";
}

std::string namespace_document(const std::string& ns, bool changed) {
  return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n" + labels(ns, changed, "  ");
}

// The index-th namespaced object of a namespace; the kind cycles so every kind is
// represented in the same proportion whatever N is.
std::string object_document(const std::string& ns, int index, bool changed) {
  std::string app = "app-" + std::to_string(index / kindCount);
  std::string name = app + "-" + std::to_string(index % kindCount);
  std::string meta = "metadata:\n  name: " + name + "\n  namespace: " + ns + "\n" + labels(app, changed, "  ");
  switch (index % kindCount) {
    case 0:
      return "apiVersion: v1\nkind: ConfigMap\n" + meta + "data:\n  LOG_LEVEL: info\n  LISTEN: \":8080\"\n" +
             "  config.yaml: |\n    server:\n      port: 8080\n      workers: 4\n    feature: " + name + "\n";
    case 1:
      return "apiVersion: v1\nkind: Secret\n" + meta + "type: Opaque\ndata:\n  username: " + base64(app) +
             "\n  password: " + base64("bench-password-" + name) + "\n";
    case 2:
      return "apiVersion: v1\nkind: Service\n" + meta + "spec:\n  selector: {app.kubernetes.io/name: " + app +
             "}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n    protocol: TCP\n";
    case 3:
      return "apiVersion: v1\nkind: ServiceAccount\n" + meta;
    case 4:
      return "apiVersion: apps/v1\nkind: Deployment\n" + meta + "spec:\n  replicas: 2\n  selector:\n" +
             "    matchLabels: {app.kubernetes.io/name: " + app + "}\n  template:\n    metadata:\n" +
             "      labels: {app.kubernetes.io/name: " + app + "}\n    spec:\n      serviceAccountName: " + app +
             "-3\n      containers:\n      - name: main\n        image: registry.example/" + app + ":1.2.3\n" +
             "        args: [--port=8080]\n        ports:\n        - containerPort: 8080\n" +
             "        resources:\n          requests: {cpu: 0.1, memory: 64Mi}\n" +
             "          limits: {memory: 0.125Gi}\n        envFrom:\n        - configMapRef: {name: " + app + "-0}\n";
    case 5:
      return "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n" + meta +
             "rules:\n- apiGroups: [\"\"]\n  resources: [configmaps, secrets]\n  verbs: [get, list, watch]\n";
    case 6:
      return "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n" + meta +
             "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: " + app +
             "-5\nsubjects:\n- kind: ServiceAccount\n  name: " + app + "-3\n  namespace: " + ns + "\n";
    default:
      return "apiVersion: bench.kstate.io/v1\nkind: Widget\n" + meta +
             "spec:\n  size: " + std::to_string(index % 7 + 1) + "\n  color: blue\n";
  }
}

bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes a benchmark corpus of Kubernetes manifests"};
  std::string out_dir;
  int objects = 1000;
  int namespaces = 10;
  std::string layout = "namespace";
  double change_percent = 0;
  app.add_option("--out", out_dir, "directory to write (created; existing corpus files are overwritten)")->required();
  app.add_option("--objects", objects, "total objects, Namespaces and the CRD included")
      ->check(CLI::Range(2, 10000000));
  app.add_option("--namespaces", namespaces, "namespaces to spread the objects over")->check(CLI::Range(1, 100000));
  app.add_option("--layout", layout, "one file per namespace or per object")
      ->check(CLI::IsMember({"namespace", "object"}));
  app.add_option("--change", change_percent, "percent of the objects written changed")->check(CLI::Range(0.0, 100.0));
  CLI11_PARSE(app, argc, argv);

  // One CRD, then M Namespaces, then the rest spread as evenly as possible.
  int remaining = objects - 1 - namespaces;
  if (remaining < 0) {
    std::cerr << "kstate-bench-corpus: --objects must be at least --namespaces + 1\n";
    return 2;
  }
  std::filesystem::path root(out_dir);
  std::error_code error;
  std::filesystem::create_directories(root, error);
  if (error) {
    std::cerr << "kstate-bench-corpus: cannot create " << out_dir << ": " << error.message() << "\n";
    return 2;
  }
  // Object k (0-based, over the whole corpus) is changed when the running count of
  // changed objects steps at k: that spreads exactly round(N * P / 100) changes evenly.
  long long object_number = 0;
  int changed_total = 0;
  auto next_changed = [&]() {
    long long before = static_cast<long long>(static_cast<double>(object_number) * change_percent / 100.0);
    ++object_number;
    long long after = static_cast<long long>(static_cast<double>(object_number) * change_percent / 100.0);
    bool changed = after > before;
    changed_total += changed ? 1 : 0;
    return changed;
  };

  bool ok = write_text(root / "00-crd.yaml", crd_document());
  ++object_number;  // the CRD is counted but never changed (its schema is the contract)
  for (int n = 0; n < namespaces && ok; ++n) {
    std::string ns = "bench-" + std::to_string(n);
    int in_namespace = remaining / namespaces + (n < remaining % namespaces ? 1 : 0);
    if (layout == "namespace") {
      std::string text = namespace_document(ns, next_changed());
      for (int i = 0; i < in_namespace; ++i) {
        text += "---\n" + object_document(ns, i, next_changed());
      }
      ok = write_text(root / (ns + ".yaml"), text);
    } else {
      std::filesystem::path dir = root / ns;
      std::filesystem::create_directories(dir, error);
      ok = !error && write_text(dir / "00-namespace.yaml", namespace_document(ns, next_changed()));
      for (int i = 0; i < in_namespace && ok; ++i) {
        ok = write_text(dir / ("object-" + std::to_string(i) + ".yaml"), object_document(ns, i, next_changed()));
      }
    }
  }
  if (!ok) {
    std::cerr << "kstate-bench-corpus: cannot write under " << out_dir << "\n";
    return 2;
  }
  std::cout << "wrote " << object_number << " objects in " << namespaces << " namespaces to " << out_dir << " ("
            << changed_total << " changed)\n";
  return 0;
}
