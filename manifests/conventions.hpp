// Other tools' conventions, read from an object's labels and annotations: what the
// marks that the kube-addon-manager, Flux, Helm and Argo CD put on objects ask kstate
// to do, so that manifests taken over from those tools keep meaning what they meant.
// One table (conventions.cpp, documented in docs/conventions.md):
//   addonmanager.kubernetes.io/mode (label or annotation)   Reconcile | EnsureExists | Ignore
//   kustomize.toolkit.fluxcd.io/ssa (label or annotation)   Override | Merge | IfNotPresent | Ignore
//   kustomize.toolkit.fluxcd.io/reconcile                   enabled | disabled
//   kustomize.toolkit.fluxcd.io/prune, kstate.io/prune      enabled | disabled
//   helm.sh/resource-policy                                 keep
//   argocd.argoproj.io/sync-options                         Prune=false|confirm, Delete=false|confirm
// When marks disagree the most careful wins: leaving an object alone over creating it
// only, over applying it. The loader reads them on manifests (a value it does not
// know is an error, like any annotation of kstate's); prune reads them on live objects
// (an unknown value there protects nothing). Pure logic with table tests.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kstate::manifests {

enum class Management {
  apply,        // kstate applies the manifest and corrects drift (the default)
  create_only,  // created when missing, never changed afterwards
  leave_alone   // neither created nor changed nor deleted
};
const char* to_string(Management management);  // "apply", "create-only", "leave alone"

struct ConventionProblem {
  std::string key;  // the label or annotation
  bool label = false;
  std::string value;
  std::vector<std::string> expected;  // the values the table knows
  // "annotation KEY: unknown value \"VALUE\", expected A, B or C"
  std::string message() const;
};

struct Conventions {
  Management management = Management::apply;
  std::string management_mark;  // "key: value" that decided management; empty for apply
  bool prune_protected = false;
  std::string prune_mark;  // "key: value" that protects it
  // Flux's ssa: Merge: fields other managers set are theirs (kstate.io/takeover: disabled).
  bool keep_others_fields = false;
  std::vector<ConventionProblem> problems;  // values not understood, in table order
};

using StringMap = std::map<std::string, std::string>;
Conventions read_conventions(const StringMap& labels, const StringMap& annotations);

}  // namespace kstate::manifests
