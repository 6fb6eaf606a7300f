// Adoption is explicit: who owns an existing object, and whether kstate takes it over,
// as tables of labels and annotations -> verdict (states/adoption.hpp).
#include "states/adoption.hpp"

#include <catch2/catch.hpp>

#include "states/applyset.hpp"

namespace adoption_test {

using kstate::states::AdoptionInput;
using kstate::states::AdoptionVerdict;
using kstate::states::decide_adoption;
using Map = std::map<std::string, std::string>;

namespace {

const std::string ours = kstate::states::applyset_id("kstate", "kube-system");
const Map our_labels{{"applyset.kubernetes.io/part-of", ours}, {"app.kubernetes.io/managed-by", "kstate"}};
const Map helm_labels{{"app.kubernetes.io/managed-by", "Helm"}};
const Map helm_annotations{{"meta.helm.sh/release-name", "web"}, {"meta.helm.sh/release-namespace", "team"}};

}  // namespace

TEST_CASE("decide_adoption: an existing object is kstate's, taken over, or refused naming its owner", "[adoption]") {
  struct Row {
    const char* name;
    Map labels;
    Map annotations;
    bool adopt;
    bool named;
    AdoptionVerdict verdict;
    const char* owner_part;  // "" when no other tool owns it
  };
  const std::vector<Row> rows = {
      {"this set's labels", our_labels, {}, true, false, AdoptionVerdict::ours, ""},
      {"this set's labels, adoption off", our_labels, {}, false, false, AdoptionVerdict::ours, ""},
      {"no marks: adopted", {}, {}, true, false, AdoptionVerdict::adopt, ""},
      {"no marks, adoption off", {}, {}, false, false, AdoptionVerdict::refuse_not_ours, ""},
      {"no marks, adoption off, named", {}, {}, false, true, AdoptionVerdict::adopt, ""},
      {"Helm", helm_labels, helm_annotations, true, false, AdoptionVerdict::refuse_foreign,
       "Helm release team/web (label app.kubernetes.io/managed-by: Helm)"},
      {"Helm, named", helm_labels, helm_annotations, true, true, AdoptionVerdict::adopt, "Helm release team/web"},
      {"Helm, named, adoption off", helm_labels, helm_annotations, false, true, AdoptionVerdict::adopt, "Helm"},
      {"managed-by Helm without a release: no release to name",
       helm_labels,
       {},
       true,
       false,
       AdoptionVerdict::adopt,
       ""},
      {"another ApplySet",
       {{"applyset.kubernetes.io/part-of", "applyset-other-v1"}},
       {},
       true,
       false,
       AdoptionVerdict::refuse_foreign,
       "another ApplySet, applyset-other-v1"},
      {"another kstate ApplySet",
       {{"applyset.kubernetes.io/part-of", "applyset-x-v1"}, {"app.kubernetes.io/managed-by", "kstate"}},
       {},
       true,
       false,
       AdoptionVerdict::refuse_foreign,
       "another ApplySet"},
      {"ours by part-of, but managed-by removed: not ours, no other tool",
       {{"applyset.kubernetes.io/part-of", ours}},
       {},
       true,
       false,
       AdoptionVerdict::adopt,
       ""},
      {"Flux",
       {{"kustomize.toolkit.fluxcd.io/name", "apps"}, {"kustomize.toolkit.fluxcd.io/namespace", "flux-system"}},
       {},
       true,
       false,
       AdoptionVerdict::refuse_foreign,
       "Flux Kustomization flux-system/apps"},
      {"Flux name alone: not Flux's tracking",
       {{"kustomize.toolkit.fluxcd.io/name", "apps"}},
       {},
       true,
       false,
       AdoptionVerdict::adopt,
       ""},
      {"Argo CD instance label",
       {{"argocd.argoproj.io/instance", "guestbook"}},
       {},
       true,
       false,
       AdoptionVerdict::refuse_foreign,
       "Argo CD application guestbook (label argocd.argoproj.io/instance)"},
      {"Argo CD tracking id",
       {},
       {{"argocd.argoproj.io/tracking-id", "guestbook:apps/Deployment:team/web"}},
       true,
       false,
       AdoptionVerdict::refuse_foreign,
       "Argo CD application guestbook (annotation argocd.argoproj.io/tracking-id)"},
      {"Argo CD, named",
       {{"argocd.argoproj.io/instance", "guestbook"}},
       {},
       true,
       true,
       AdoptionVerdict::adopt,
       "Argo CD"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    AdoptionInput input;
    input.labels = row.labels;
    input.annotations = row.annotations;
    input.applyset_id = ours;
    input.adopt = row.adopt;
    input.named = row.named;
    const auto decision = decide_adoption(input);
    CHECK(kstate::states::to_string(decision.verdict) == std::string(kstate::states::to_string(row.verdict)));
    if (std::string(row.owner_part).empty()) {
      CHECK_FALSE(decision.owner);
    } else {
      REQUIRE(decision.owner);
      CHECK_THAT(decision.owner->description, Catch::Contains(row.owner_part));
    }
  }
}

TEST_CASE("adopt-objects names objects as Kind/namespace/name or Kind/name", "[adoption]") {
  auto parsed = kstate::states::parse_adopt_objects(" ConfigMap/team/web, ClusterRole/view,,Deployment/a/b ");
  REQUIRE(parsed.ok());
  CHECK(*parsed == std::set<std::string>{"ClusterRole/view", "ConfigMap/team/web", "Deployment/a/b"});
  CHECK(kstate::states::parse_adopt_objects("").ok());
  for (const char* bad : {"ConfigMap", "a/b/c/d", "ConfigMap//web", "/web", "ConfigMap/"}) {
    INFO(bad);
    auto refused = kstate::states::parse_adopt_objects(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("is not Kind/namespace/name"));
  }
}

}  // namespace adoption_test
