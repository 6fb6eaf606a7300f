// The built-in kinds of kube-apiserver 1.31 that kstate and its tests touch, with
// scope, short names, verbs and subresources as `kubectl api-resources` shows them.
#include "tests/emulator/catalog.hpp"

#include <algorithm>

namespace kstate::emulator {

std::vector<std::string> standard_verbs() {
  return {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
}

namespace {

struct Builtin {
  const char* group;
  const char* version;
  const char* kind;
  const char* plural;
  bool namespaced;
  std::vector<std::string> short_names;
  bool has_status;
  bool has_scale;
  std::vector<std::string> top_level_fields;
  bool in_all_category = false;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::vector<Builtin> builtin_table() {
  const std::vector<std::string> spec_status = {"spec", "status"};
  return {
      {"", "v1", "Namespace", "namespaces", false, {"ns"}, true, false, spec_status},
      {"", "v1", "ConfigMap", "configmaps", true, {"cm"}, false, false, {"data", "binaryData", "immutable"}},
      {"", "v1", "Secret", "secrets", true, {}, false, false, {"data", "stringData", "type", "immutable"}},
      {"", "v1", "Service", "services", true, {"svc"}, true, false, spec_status, true},
      {"",
       "v1",
       "ServiceAccount",
       "serviceaccounts",
       true,
       {"sa"},
       false,
       false,
       {"secrets", "imagePullSecrets", "automountServiceAccountToken"}},
      {"", "v1", "Pod", "pods", true, {"po"}, true, false, spec_status, true},
      {"", "v1", "Endpoints", "endpoints", true, {"ep"}, false, false, {"subsets"}},
      {"",
       "v1",
       "Event",
       "events",
       true,
       {"ev"},
       false,
       false,
       {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
        "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"}},
      {"", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, {"pvc"}, true, false, spec_status},
      {"", "v1", "PersistentVolume", "persistentvolumes", false, {"pv"}, true, false, spec_status},
      {"", "v1", "LimitRange", "limitranges", true, {"limits"}, false, false, {"spec"}},
      {"", "v1", "ResourceQuota", "resourcequotas", true, {"quota"}, true, false, spec_status},
      {"", "v1", "Node", "nodes", false, {"no"}, true, false, spec_status},
      {"apps", "v1", "Deployment", "deployments", true, {"deploy"}, true, true, spec_status, true},
      {"apps", "v1", "StatefulSet", "statefulsets", true, {"sts"}, true, true, spec_status, true},
      {"apps", "v1", "DaemonSet", "daemonsets", true, {"ds"}, true, false, spec_status, true},
      {"apps", "v1", "ReplicaSet", "replicasets", true, {"rs"}, true, true, spec_status, true},
      {"batch", "v1", "Job", "jobs", true, {}, true, false, spec_status, true},
      {"batch", "v1", "CronJob", "cronjobs", true, {"cj"}, true, false, spec_status, true},
      {"rbac.authorization.k8s.io", "v1", "Role", "roles", true, {}, false, false, {"rules"}},
      {"rbac.authorization.k8s.io",
       "v1",
       "RoleBinding",
       "rolebindings",
       true,
       {},
       false,
       false,
       {"subjects", "roleRef"}},
      {"rbac.authorization.k8s.io",
       "v1",
       "ClusterRole",
       "clusterroles",
       false,
       {},
       false,
       false,
       {"rules", "aggregationRule"}},
      {"rbac.authorization.k8s.io",
       "v1",
       "ClusterRoleBinding",
       "clusterrolebindings",
       false,
       {},
       false,
       false,
       {"subjects", "roleRef"}},
      {"apiextensions.k8s.io",
       "v1",
       "CustomResourceDefinition",
       "customresourcedefinitions",
       false,
       {"crd", "crds"},
       true,
       false,
       spec_status},
      {"coordination.k8s.io", "v1", "Lease", "leases", true, {}, false, false, {"spec"}},
      {"networking.k8s.io", "v1", "Ingress", "ingresses", true, {"ing"}, true, false, spec_status},
      {"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, {"netpol"}, false, false, spec_status},
      {"networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, {}, false, false, {"spec"}},
      {"policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, {"pdb"}, true, false, spec_status},
      {"storage.k8s.io",
       "v1",
       "StorageClass",
       "storageclasses",
       false,
       {"sc"},
       false,
       false,
       {"provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion", "volumeBindingMode",
        "allowedTopologies"}},
      {"scheduling.k8s.io",
       "v1",
       "PriorityClass",
       "priorityclasses",
       false,
       {"pc"},
       false,
       false,
       {"value", "globalDefault", "description", "preemptionPolicy"}},
      {"admissionregistration.k8s.io",
       "v1",
       "MutatingWebhookConfiguration",
       "mutatingwebhookconfigurations",
       false,
       {},
       false,
       false,
       {"webhooks"}},
      {"admissionregistration.k8s.io",
       "v1",
       "ValidatingWebhookConfiguration",
       "validatingwebhookconfigurations",
       false,
       {},
       false,
       false,
       {"webhooks"}},
      {"autoscaling",
       "v2",
       "HorizontalPodAutoscaler",
       "horizontalpodautoscalers",
       true,
       {"hpa"},
       true,
       false,
       spec_status,
       true},
  };
}

}  // namespace

Catalog::Catalog() {
  for (auto& entry : builtin_table()) {
    ResourceType type;
    type.group = entry.group;
    type.version = entry.version;
    type.kind = entry.kind;
    type.plural = entry.plural;
    type.singular = lower(entry.kind);
    type.namespaced = entry.namespaced;
    type.short_names = entry.short_names;
    type.verbs = standard_verbs();
    if (type.plural == "namespaces") {
      // kube-apiserver does not offer deletecollection on namespaces.
      type.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    }
    if (entry.in_all_category) {
      type.categories = {"all"};
    }
    type.has_status = entry.has_status;
    type.has_scale = entry.has_scale;
    type.top_level_fields = entry.top_level_fields;
    builtin_.push_back(std::move(type));
  }
}

const ResourceType* Catalog::find(std::string_view group, std::string_view version, std::string_view plural) const {
  // Hot path (every request): no allocation.
  for (const auto& type : builtin_) {
    if (type.plural == plural && type.group == group && type.version == version) {
      return &type;
    }
  }
  for (const auto& [name, types] : custom_) {
    for (const auto& type : types) {
      if (type.plural == plural && type.group == group && type.version == version) {
        return &type;
      }
    }
  }
  return nullptr;
}

const ResourceType* Catalog::find_kind(std::string_view group, std::string_view version, std::string_view kind) const {
  for (const auto* type : all()) {
    if (type->group == group && type->version == version && type->kind == kind) {
      return type;
    }
  }
  return nullptr;
}

std::vector<const ResourceType*> Catalog::all() const {
  std::vector<const ResourceType*> result;
  result.reserve(builtin_.size() + custom_.size());
  for (const auto& type : builtin_) {
    result.push_back(&type);
  }
  for (const auto& [name, types] : custom_) {
    for (const auto& type : types) {
      result.push_back(&type);
    }
  }
  return result;
}

std::vector<std::string> Catalog::groups() const {
  std::vector<std::string> result;
  for (const auto* type : all()) {
    if (std::find(result.begin(), result.end(), type->group) == result.end()) {
      result.push_back(type->group);
    }
  }
  return result;
}

std::vector<std::string> Catalog::versions_of(std::string_view group) const {
  std::vector<std::string> result;
  for (const auto* type : all()) {
    if (type->group == group && std::find(result.begin(), result.end(), type->version) == result.end()) {
      result.push_back(type->version);
    }
  }
  return result;
}

void Catalog::set_custom(const std::string& crd_name, std::vector<ResourceType> types) {
  custom_[crd_name] = std::move(types);
  ++generation_;
}

void Catalog::remove_custom(const std::string& crd_name) {
  if (custom_.erase(crd_name) > 0) {
    ++generation_;
  }
}

}  // namespace kstate::emulator
