// The one kind that defines other kinds: CustomResourceDefinition. Ordering puts
// CRDs before what they define, readiness waits for them to be Established, prune and
// the engine treat them apart; all ask this one question.
#pragma once

#include <string_view>

#include "core/gvk.hpp"

namespace kstate {

inline bool is_crd(std::string_view group, std::string_view kind) {
  return group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition";
}
inline bool is_crd(const GroupVersionKind& gvk) {
  return is_crd(gvk.group, gvk.kind);
}

}  // namespace kstate
