// A cluster-scoped object has no namespace: kubectl drops a stray `metadata.namespace`
// from one (the API server ignores it), and so does kstate, before state IDs and
// duplicates are computed. Without it, a ClusterRole declared once with a stray
// `namespace:` and once without was two states for one object, applied twice with
// different content at every run. Which kinds are cluster-scoped comes from the
// server's discovery when the caller has it, from the CustomResourceDefinitions among
// the states (spec.scope: Cluster), and from the built-in kinds every API server
// serves. Pure logic: the caller supplies discovery's answer.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "manifests/loader.hpp"
#include "manifests/state.hpp"

namespace kstate::manifests {

// Whether a kind (API group, Kind) is namespaced; nullopt: not known.
using NamespacedLookup = std::function<std::optional<bool>(std::string_view group, std::string_view kind)>;

// The scope of the kinds built into kube-apiserver 1.32 that are cluster-scoped
// (false), nullopt for any other kind (namespaced built-ins included: not needed).
std::optional<bool> builtin_namespaced(std::string_view group, std::string_view kind);

// Removes metadata.namespace from every state whose kind is cluster-scoped, as
// `discovery` (nullable), the CRDs among `states`, or builtin_namespaced say, and gives
// a state whose ID was derived from the object ("Kind/namespace/name") the ID without
// it. Returns one warning per state changed (file:line, state ID, what was dropped).
std::vector<LoadError> drop_cluster_scoped_namespaces(std::vector<State>& states,
                                                      const NamespacedLookup& discovery = {});

}  // namespace kstate::manifests
