// Other tools' conventions (manifests/conventions.hpp): what each mark of the
// addon-manager, Flux, Helm and Argo CD asks of kstate, which wins when several
// disagree, and the errors for values none of them knows.
#include "manifests/conventions.hpp"

#include <catch2/catch.hpp>

namespace conventions_test {

using namespace kstate::manifests;

TEST_CASE("read_conventions: each tool's marks, as labels or annotations", "[conventions]") {
  struct Case {
    const char* what;
    StringMap labels;
    StringMap annotations;
    Management management;
    std::string management_mark;
    std::string prune_mark;  // "" when not protected
    bool keep_others_fields;
  };
  const std::vector<Case> cases = {
      {"no marks", {}, {}, Management::apply, "", "", false},
      {"addon-manager Reconcile (label)",
       {{"addonmanager.kubernetes.io/mode", "Reconcile"}},
       {},
       Management::apply,
       "",
       "",
       false},
      {"addon-manager EnsureExists (label)",
       {{"addonmanager.kubernetes.io/mode", "EnsureExists"}},
       {},
       Management::create_only,
       "addonmanager.kubernetes.io/mode: EnsureExists",
       "addonmanager.kubernetes.io/mode: EnsureExists",
       false},
      {"addon-manager EnsureExists (annotation)",
       {},
       {{"addonmanager.kubernetes.io/mode", "EnsureExists"}},
       Management::create_only,
       "addonmanager.kubernetes.io/mode: EnsureExists",
       "addonmanager.kubernetes.io/mode: EnsureExists",
       false},
      {"addon-manager Ignore",
       {{"addonmanager.kubernetes.io/mode", "Ignore"}},
       {},
       Management::leave_alone,
       "addonmanager.kubernetes.io/mode: Ignore",
       "addonmanager.kubernetes.io/mode: Ignore",
       false},
      {"Flux ssa Override", {}, {{"kustomize.toolkit.fluxcd.io/ssa", "Override"}}, Management::apply, "", "", false},
      {"Flux ssa Merge", {}, {{"kustomize.toolkit.fluxcd.io/ssa", "Merge"}}, Management::apply, "", "", true},
      {"Flux ssa IfNotPresent",
       {},
       {{"kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent"}},
       Management::create_only,
       "kustomize.toolkit.fluxcd.io/ssa: IfNotPresent",
       "",
       false},
      {"Flux ssa Ignore (label)",
       {{"kustomize.toolkit.fluxcd.io/ssa", "Ignore"}},
       {},
       Management::leave_alone,
       "kustomize.toolkit.fluxcd.io/ssa: Ignore",
       "kustomize.toolkit.fluxcd.io/ssa: Ignore",
       false},
      {"Flux reconcile disabled",
       {},
       {{"kustomize.toolkit.fluxcd.io/reconcile", "disabled"}},
       Management::leave_alone,
       "kustomize.toolkit.fluxcd.io/reconcile: disabled",
       "kustomize.toolkit.fluxcd.io/reconcile: disabled",
       false},
      {"Flux prune disabled",
       {},
       {{"kustomize.toolkit.fluxcd.io/prune", "disabled"}},
       Management::apply,
       "",
       "kustomize.toolkit.fluxcd.io/prune: disabled",
       false},
      {"kstate prune disabled",
       {},
       {{"kstate.io/prune", "disabled"}},
       Management::apply,
       "",
       "kstate.io/prune: disabled",
       false},
      {"Helm keep",
       {},
       {{"helm.sh/resource-policy", "keep"}},
       Management::apply,
       "",
       "helm.sh/resource-policy: keep",
       false},
      {"Helm keep as a label is not Helm's",
       {{"helm.sh/resource-policy", "keep"}},
       {},
       Management::apply,
       "",
       "",
       false},
      {"Argo CD Prune=false",
       {},
       {{"argocd.argoproj.io/sync-options", "Prune=false"}},
       Management::apply,
       "",
       "argocd.argoproj.io/sync-options: Prune=false",
       false},
      {"Argo CD Delete=false among others",
       {},
       {{"argocd.argoproj.io/sync-options", "ServerSideApply=true,Delete=false"}},
       Management::apply,
       "",
       "argocd.argoproj.io/sync-options: Delete=false",
       false},
      {"Argo CD options that do not protect",
       {},
       {{"argocd.argoproj.io/sync-options", "Prune=true,Replace=true"}},
       Management::apply,
       "",
       "",
       false},
      {"the most careful wins: create-only over apply, leave alone over create-only",
       {{"addonmanager.kubernetes.io/mode", "EnsureExists"}},
       {{"kustomize.toolkit.fluxcd.io/ssa", "Ignore"}},
       Management::leave_alone,
       "kustomize.toolkit.fluxcd.io/ssa: Ignore",
       "addonmanager.kubernetes.io/mode: EnsureExists",
       false},
      {"values are trimmed",
       {},
       {{"helm.sh/resource-policy", " keep "}},
       Management::apply,
       "",
       "helm.sh/resource-policy: keep",
       false},
  };
  for (const auto& test : cases) {
    INFO(test.what);
    Conventions conventions = read_conventions(test.labels, test.annotations);
    CHECK(conventions.problems.empty());
    CHECK(to_string(conventions.management) == std::string(to_string(test.management)));
    CHECK(conventions.management_mark == test.management_mark);
    CHECK(conventions.prune_protected == !test.prune_mark.empty());
    CHECK(conventions.prune_mark == test.prune_mark);
    CHECK(conventions.keep_others_fields == test.keep_others_fields);
  }
}

TEST_CASE("read_conventions: unknown values are problems naming the mark and the values known", "[conventions]") {
  Conventions conventions =
      read_conventions({{"addonmanager.kubernetes.io/mode", "EnsureExist"}}, {{"helm.sh/resource-policy", "delete"}});
  REQUIRE(conventions.problems.size() == 2);
  CHECK(conventions.problems[0].message() ==
        "label addonmanager.kubernetes.io/mode: unknown value \"EnsureExist\", expected Reconcile, EnsureExists or "
        "Ignore");
  CHECK(conventions.problems[1].message() ==
        "annotation helm.sh/resource-policy: unknown value \"delete\", expected keep");
  // An unknown value asks nothing: the object is applied and not protected.
  CHECK(conventions.management == Management::apply);
  CHECK_FALSE(conventions.prune_protected);
}

}  // namespace conventions_test
