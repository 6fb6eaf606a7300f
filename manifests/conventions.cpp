// Implementation of other tools' conventions (conventions.hpp): one table of marks.
#include "manifests/conventions.hpp"

#include <string_view>

#include "core/strings.hpp"

namespace kstate::manifests {
namespace {

enum class Where { labels_and_annotations, annotations };

// What one value of a mark asks for.
struct Effect {
  std::string_view value;
  Management management = Management::apply;
  bool prune_protected = false;
  bool keep_others_fields = false;
};

struct Mark {
  std::string_view key;
  Where where;
  std::vector<Effect> effects;
};

const std::vector<Mark>& marks() {
  static const std::vector<Mark> table = {
      {"addonmanager.kubernetes.io/mode",
       Where::labels_and_annotations,
       {{"Reconcile"}, {"EnsureExists", Management::create_only, true}, {"Ignore", Management::leave_alone, true}}},
      {"kustomize.toolkit.fluxcd.io/ssa",
       Where::labels_and_annotations,
       {{"Override"},
        {"Merge", Management::apply, false, true},
        {"IfNotPresent", Management::create_only},
        {"Ignore", Management::leave_alone, true}}},
      {"kustomize.toolkit.fluxcd.io/reconcile",
       Where::labels_and_annotations,
       {{"enabled"}, {"disabled", Management::leave_alone, true}}},
      {"kustomize.toolkit.fluxcd.io/prune",
       Where::labels_and_annotations,
       {{"enabled"}, {"disabled", Management::apply, true}}},
      {"kstate.io/prune", Where::labels_and_annotations, {{"enabled"}, {"disabled", Management::apply, true}}},
      {"helm.sh/resource-policy", Where::annotations, {{"keep", Management::apply, true}}},
  };
  return table;
}

int care(Management management) {
  return management == Management::leave_alone ? 2 : management == Management::create_only ? 1 : 0;
}

void apply_effect(Conventions& conventions, const Effect& effect, const std::string& mark) {
  if (care(effect.management) > care(conventions.management)) {
    conventions.management = effect.management;
    conventions.management_mark = mark;
  }
  if (effect.prune_protected && !conventions.prune_protected) {
    conventions.prune_protected = true;
    conventions.prune_mark = mark;
  }
  conventions.keep_others_fields = conventions.keep_others_fields || effect.keep_others_fields;
}

// Argo CD's comma-separated sync options: Prune=false and Delete=false (or =confirm,
// which asks a person first: kstate never asks, so it keeps the object) protect it;
// the other options are Argo CD's own.
void read_argo_sync_options(Conventions& conventions, const std::string& value) {
  std::string_view rest = value;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string option = std::string(strings::trim(rest.substr(0, comma)));
    for (std::string_view protecting : {"Prune=false", "Prune=confirm", "Delete=false", "Delete=confirm"}) {
      if (option == protecting && !conventions.prune_protected) {
        conventions.prune_protected = true;
        conventions.prune_mark = "argocd.argoproj.io/sync-options: " + option;
      }
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
}

}  // namespace

std::string ConventionProblem::message() const {
  std::string text =
      std::string(label ? "label " : "annotation ") + key + ": unknown value \"" + value + "\", expected ";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == expected.size() ? " or " : ", ") + expected[i];
  }
  return text;
}

const char* to_string(Management management) {
  switch (management) {
    case Management::apply:
      return "apply";
    case Management::create_only:
      return "create-only";
    case Management::leave_alone:
      return "leave alone";
  }
  return "?";
}

Conventions read_conventions(const StringMap& labels, const StringMap& annotations) {
  Conventions conventions;
  for (const Mark& mark : marks()) {
    for (const StringMap* map : {&annotations, &labels}) {
      if (map == &labels && mark.where == Where::annotations) {
        continue;
      }
      auto found = map->find(std::string(mark.key));
      if (found == map->end()) {
        continue;
      }
      const std::string value = std::string(strings::trim(found->second));
      const Effect* matched = nullptr;
      std::vector<std::string> expected;
      for (const Effect& effect : mark.effects) {
        matched = effect.value == value ? &effect : matched;
        expected.emplace_back(effect.value);
      }
      if (matched == nullptr) {
        conventions.problems.push_back({std::string(mark.key), map == &labels, value, std::move(expected)});
        continue;
      }
      apply_effect(conventions, *matched, std::string(mark.key) + ": " + value);
    }
  }
  if (auto argo = annotations.find("argocd.argoproj.io/sync-options"); argo != annotations.end()) {
    read_argo_sync_options(conventions, argo->second);
  }
  return conventions;
}

}  // namespace kstate::manifests
