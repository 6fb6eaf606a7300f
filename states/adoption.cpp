// Who owns an existing object, and whether kstate takes it over (see adoption.hpp).
#include "states/adoption.hpp"

#include "states/applyset.hpp"

namespace kstate::states {

namespace {

std::string value_of(const std::map<std::string, std::string>& map, std::string_view key) {
  auto found = map.find(std::string(key));
  return found == map.end() ? std::string() : found->second;
}

}  // namespace

std::optional<ForeignOwner> foreign_owner(const std::map<std::string, std::string>& labels,
                                          const std::map<std::string, std::string>& annotations,
                                          std::string_view applyset_id) {
  const std::string managed_by = value_of(labels, managed_by_label);
  const std::string release = value_of(annotations, "meta.helm.sh/release-name");
  if (managed_by == "Helm" && !release.empty()) {
    const std::string release_namespace = value_of(annotations, "meta.helm.sh/release-namespace");
    return ForeignOwner{"Helm", "Helm release " + (release_namespace.empty() ? "" : release_namespace + "/") + release +
                                    " (label app.kubernetes.io/managed-by: Helm)"};
  }
  const std::string part_of = value_of(labels, applyset_part_of_label);
  if (!part_of.empty() && part_of != applyset_id) {
    return ForeignOwner{"ApplySet", "another ApplySet, " + part_of + " (label applyset.kubernetes.io/part-of)"};
  }
  const std::string flux_name = value_of(labels, "kustomize.toolkit.fluxcd.io/name");
  const std::string flux_namespace = value_of(labels, "kustomize.toolkit.fluxcd.io/namespace");
  if (!flux_name.empty() && !flux_namespace.empty()) {
    return ForeignOwner{"Flux", "Flux Kustomization " + flux_namespace + "/" + flux_name +
                                    " (labels kustomize.toolkit.fluxcd.io/name and /namespace)"};
  }
  const std::string argo_instance = value_of(labels, "argocd.argoproj.io/instance");
  if (!argo_instance.empty()) {
    return ForeignOwner{"Argo CD", "Argo CD application " + argo_instance + " (label argocd.argoproj.io/instance)"};
  }
  const std::string tracking_id = value_of(annotations, "argocd.argoproj.io/tracking-id");
  if (!tracking_id.empty()) {
    // "<application>:<group>/<kind>:<namespace>/<name>"
    return ForeignOwner{"Argo CD", "Argo CD application " + tracking_id.substr(0, tracking_id.find(':')) +
                                       " (annotation argocd.argoproj.io/tracking-id)"};
  }
  return std::nullopt;
}

const char* to_string(AdoptionVerdict verdict) {
  switch (verdict) {
    case AdoptionVerdict::ours:
      return "ours";
    case AdoptionVerdict::adopt:
      return "adopt";
    case AdoptionVerdict::refuse_foreign:
      return "refused: another tool owns it";
    case AdoptionVerdict::refuse_not_ours:
      return "refused: adoption is off";
  }
  return "unknown";
}

AdoptionDecision decide_adoption(const AdoptionInput& input) {
  AdoptionDecision decision;
  if (value_of(input.labels, applyset_part_of_label) == input.applyset_id &&
      value_of(input.labels, managed_by_label) == managed_by_value) {
    decision.verdict = AdoptionVerdict::ours;
    return decision;
  }
  decision.owner = foreign_owner(input.labels, input.annotations, input.applyset_id);
  if (decision.owner) {
    decision.verdict = input.named ? AdoptionVerdict::adopt : AdoptionVerdict::refuse_foreign;
  } else {
    decision.verdict = input.adopt || input.named ? AdoptionVerdict::adopt : AdoptionVerdict::refuse_not_ours;
  }
  return decision;
}

Result<std::set<std::string>> parse_adopt_objects(std::string_view text) {
  std::set<std::string> objects;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) {
      comma = text.size();
    }
    std::string entry;
    for (char c : text.substr(start, comma - start)) {
      if (c != ' ' && c != '\t') {
        entry += c;
      }
    }
    start = comma + 1;
    if (entry.empty()) {
      continue;
    }
    std::size_t parts = 1;
    bool empty_part = entry.front() == '/' || entry.back() == '/';
    for (std::size_t i = 0; i < entry.size(); ++i) {
      if (entry[i] == '/') {
        ++parts;
        empty_part = empty_part || (i + 1 < entry.size() && entry[i + 1] == '/');
      }
    }
    if (parts < 2 || parts > 3 || empty_part) {
      return Error(ErrorKind::invalid_input,
                   "\"" + entry + "\" is not Kind/namespace/name (or Kind/name for a cluster-scoped object)");
    }
    objects.insert(std::move(entry));
  }
  return objects;
}

}  // namespace kstate::states
