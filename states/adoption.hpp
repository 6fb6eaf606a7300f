// Adoption: whether an object_present may take over an existing object kstate did not
// create (label it as a member of the ApplySet, and so prune it once no manifest
// declares it), and who else owns it. An object another tool manages is never taken
// over silently: Helm (`app.kubernetes.io/managed-by: Helm` with
// `meta.helm.sh/release-name`), another ApplySet (`applyset.kubernetes.io/part-of`),
// Flux (`kustomize.toolkit.fluxcd.io/name` and `/namespace` labels) and Argo CD (the
// `argocd.argoproj.io/instance` label or the `argocd.argoproj.io/tracking-id`
// annotation) keep theirs unless the manifest (annotation `kstate.io/adopt: "true"`)
// or the configuration (`adopt-objects`) names that object; the state then fails
// naming the owner. An object no tool claims is adopted when `adopt` is on (the
// default), and reported "adopted", never "updated". Pure logic with table tests.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kstate::states {

inline constexpr std::string_view adopt_annotation = "kstate.io/adopt";

// Another tool that manages an object, as its marks say.
struct ForeignOwner {
  std::string tool;         // Helm | ApplySet | Flux | Argo CD
  std::string description;  // "Helm release team/web (label app.kubernetes.io/managed-by: Helm)"
};
// The owner an object's labels and annotations name, other than kstate's own set
// (`applyset_id`); nullopt when no other tool claims it.
std::optional<ForeignOwner> foreign_owner(const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, std::string>& annotations,
                                          std::string_view applyset_id);

enum class AdoptionVerdict {
  ours,            // it carries this set's labels: kstate's already
  adopt,           // taken over now, reported "adopted"
  refuse_foreign,  // another tool owns it and nothing names it for adoption
  refuse_not_ours  // no tool claims it, but adoption is off (--no-adopt, adopt: false)
};
const char* to_string(AdoptionVerdict verdict);

struct AdoptionInput {
  std::map<std::string, std::string> labels;       // of the live object
  std::map<std::string, std::string> annotations;  // of the live object
  std::string applyset_id;                         // this set's ID (its part-of label value)
  bool adopt = true;                               // --adopt / `adopt:` in the config
  bool named = false;  // the manifest says kstate.io/adopt: "true", or adopt-objects lists it
};
struct AdoptionDecision {
  AdoptionVerdict verdict = AdoptionVerdict::ours;
  std::optional<ForeignOwner> owner;
};
AdoptionDecision decide_adoption(const AdoptionInput& input);

// The objects `adopt-objects` names: "Kind/namespace/name" or "Kind/name" (cluster-
// scoped), comma-separated, spaces ignored. An entry of another shape is an error
// naming it.
Result<std::set<std::string>> parse_adopt_objects(std::string_view text);

}  // namespace kstate::states
