// Dropping the namespace of cluster-scoped objects (see cluster_scope.hpp).
#include "manifests/cluster_scope.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/crd.hpp"
#include "core/gvk.hpp"

namespace kstate::manifests {

std::optional<bool> builtin_namespaced(std::string_view group, std::string_view kind) {
  // kube-apiserver 1.32's cluster-scoped kinds (`kubectl api-resources --namespaced=false`).
  static const std::set<std::pair<std::string_view, std::string_view>> cluster_scoped{
      {"", "Namespace"},
      {"", "Node"},
      {"", "PersistentVolume"},
      {"", "ComponentStatus"},
      {"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
      {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"},
      {"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"},
      {"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"},
      {"admissionregistration.k8s.io", "MutatingAdmissionPolicy"},
      {"admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"},
      {"apiextensions.k8s.io", "CustomResourceDefinition"},
      {"apiregistration.k8s.io", "APIService"},
      {"authentication.k8s.io", "TokenReview"},
      {"authentication.k8s.io", "SelfSubjectReview"},
      {"authorization.k8s.io", "SubjectAccessReview"},
      {"authorization.k8s.io", "SelfSubjectAccessReview"},
      {"authorization.k8s.io", "SelfSubjectRulesReview"},
      {"certificates.k8s.io", "CertificateSigningRequest"},
      {"certificates.k8s.io", "ClusterTrustBundle"},
      {"flowcontrol.apiserver.k8s.io", "FlowSchema"},
      {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"},
      {"internal.apiserver.k8s.io", "StorageVersion"},
      {"networking.k8s.io", "IngressClass"},
      {"networking.k8s.io", "IPAddress"},
      {"networking.k8s.io", "ServiceCIDR"},
      {"node.k8s.io", "RuntimeClass"},
      {"rbac.authorization.k8s.io", "ClusterRole"},
      {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
      {"resource.k8s.io", "DeviceClass"},
      {"resource.k8s.io", "ResourceSlice"},
      {"scheduling.k8s.io", "PriorityClass"},
      {"storage.k8s.io", "CSIDriver"},
      {"storage.k8s.io", "CSINode"},
      {"storage.k8s.io", "StorageClass"},
      {"storage.k8s.io", "VolumeAttachment"},
      {"storage.k8s.io", "VolumeAttributesClass"},
      {"storagemigration.k8s.io", "StorageVersionMigration"},
  };
  if (cluster_scoped.count({group, kind}) != 0) {
    return false;
  }
  return std::nullopt;
}

std::vector<LoadError> drop_cluster_scoped_namespaces(std::vector<State>& states, const NamespacedLookup& discovery) {
  // The CRDs among the states: group/Kind -> namespaced.
  std::map<std::pair<std::string, std::string>, bool> declared_kinds;
  for (const State& state : states) {
    if (!is_crd(make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                         json::string_or(json::find(state.object, "kind"), "")))) {
      continue;
    }
    std::string group(json::string_or(json::find_path(state.object, {"spec", "group"}), ""));
    std::string kind(json::string_or(json::find_path(state.object, {"spec", "names", "kind"}), ""));
    std::string scope(json::string_or(json::find_path(state.object, {"spec", "scope"}), ""));
    if (!kind.empty() && !scope.empty()) {
      declared_kinds[{std::move(group), std::move(kind)}] = scope != "Cluster";
    }
  }
  std::vector<LoadError> warnings;
  for (State& state : states) {
    json::Value* metadata = json::find(state.object, "metadata");
    if (metadata == nullptr || !metadata->IsObject()) {
      continue;
    }
    const std::string_view ns = json::string_or(json::find(*metadata, "namespace"), "");
    if (ns.empty()) {
      continue;
    }
    const GroupVersionKind gvk = make_gvk(json::string_or(json::find(state.object, "apiVersion"), ""),
                                          json::string_or(json::find(state.object, "kind"), ""));
    const std::string_view kind = gvk.kind;
    const std::string_view group = gvk.group;
    std::optional<bool> namespaced = discovery ? discovery(group, kind) : std::nullopt;
    if (!namespaced) {
      if (auto declared = declared_kinds.find({std::string(group), std::string(kind)});
          declared != declared_kinds.end()) {
        namespaced = declared->second;
      }
    }
    if (!namespaced) {
      namespaced = builtin_namespaced(group, kind);
    }
    if (!namespaced || *namespaced) {
      continue;
    }
    std::string name(json::string_or(json::find(*metadata, "name"), ""));
    if (name.empty()) {
      name = std::string(json::string_or(json::find(*metadata, "generateName"), ""));
    }
    const std::string dropped(ns);
    const std::string derived_id = std::string(kind) + "/" + dropped + "/" + name;
    std::string message = std::string(kind) + " is cluster-scoped: its metadata.namespace \"" + dropped +
                          "\" is ignored (as kubectl and the API server do)";
    metadata->RemoveMember("namespace");
    if (!state.from_state_document && state.id == derived_id) {
      state.id = std::string(kind) + "/" + name;
      message += "; its state ID is " + state.id;
    }
    warnings.push_back({state.source, state.id, std::move(message)});
  }
  return warnings;
}

}  // namespace kstate::manifests
