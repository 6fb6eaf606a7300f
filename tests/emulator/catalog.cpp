// The built-in kinds of kube-apiserver 1.32, with scope, short names, categories,
// verbs and subresources as its discovery documents list them (recordings 04, 06, 07).
// autoscaling/v1 is not served (it would need conversion from autoscaling/v2).
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
  std::vector<std::string> categories;
  std::vector<std::string> verbs;  // empty: the standard eight
  std::vector<Subresource> subresources;
  std::vector<std::string> top_level_fields;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Subresource status(const char* kind) {
  return {"status", "", "", kind, {"get", "patch", "update"}};
}

Subresource scale() {
  return {"scale", "autoscaling", "v1", "Scale", {"get", "patch", "update"}};
}

// Groups in kube-apiserver's discovery order, resources by name within a group.
std::vector<Builtin> builtin_table() {
  const std::vector<std::string> spec_status = {"spec", "status"};
  const std::vector<std::string> all = {"all"};
  const std::vector<std::string> extensions = {"api-extensions"};
  const std::vector<std::string> create_only = {"create"};
  const std::vector<std::string> proxy_verbs = {"create", "delete", "get", "patch", "update"};
  return {
      // core (/api/v1)
      {"", "v1", "Binding", "bindings", true, {}, {}, create_only, {}, {"target"}},
      {"", "v1", "ComponentStatus", "componentstatuses", false, {"cs"}, {}, {"get", "list"}, {}, {"conditions"}},
      {"", "v1", "ConfigMap", "configmaps", true, {"cm"}, {}, {}, {}, {"data", "binaryData", "immutable"}},
      {"", "v1", "Endpoints", "endpoints", true, {"ep"}, {}, {}, {}, {"subsets"}},
      {"",
       "v1",
       "Event",
       "events",
       true,
       {"ev"},
       {},
       {},
       {},
       {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
        "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"}},
      {"", "v1", "LimitRange", "limitranges", true, {"limits"}, {}, {}, {}, {"spec"}},
      {"",
       "v1",
       "Namespace",
       "namespaces",
       false,
       {"ns"},
       {},
       {"create", "delete", "get", "list", "patch", "update", "watch"},
       {{"finalize", "", "", "Namespace", {"update"}}, status("Namespace")},
       spec_status},
      {"",
       "v1",
       "Node",
       "nodes",
       false,
       {"no"},
       {},
       {},
       {{"proxy", "", "", "NodeProxyOptions", proxy_verbs}, status("Node")},
       spec_status},
      {"",
       "v1",
       "PersistentVolumeClaim",
       "persistentvolumeclaims",
       true,
       {"pvc"},
       {},
       {},
       {status("PersistentVolumeClaim")},
       spec_status},
      {"",
       "v1",
       "PersistentVolume",
       "persistentvolumes",
       false,
       {"pv"},
       {},
       {},
       {status("PersistentVolume")},
       spec_status},
      {"",
       "v1",
       "Pod",
       "pods",
       true,
       {"po"},
       all,
       {},
       {{"attach", "", "", "PodAttachOptions", {"create", "get"}},
        {"binding", "", "", "Binding", create_only},
        {"ephemeralcontainers", "", "", "Pod", {"get", "patch", "update"}},
        {"eviction", "policy", "v1", "Eviction", create_only},
        {"exec", "", "", "PodExecOptions", {"create", "get"}},
        {"log", "", "", "Pod", {"get"}},
        {"portforward", "", "", "PodPortForwardOptions", {"create", "get"}},
        {"proxy", "", "", "PodProxyOptions", proxy_verbs},
        {"resize", "", "", "Pod", {"get", "patch", "update"}},
        status("Pod")},
       spec_status},
      {"", "v1", "PodTemplate", "podtemplates", true, {}, {}, {}, {}, {"template"}},
      {"",
       "v1",
       "ReplicationController",
       "replicationcontrollers",
       true,
       {"rc"},
       all,
       {},
       {scale(), status("ReplicationController")},
       spec_status},
      {"", "v1", "ResourceQuota", "resourcequotas", true, {"quota"}, {}, {}, {status("ResourceQuota")}, spec_status},
      {"", "v1", "Secret", "secrets", true, {}, {}, {}, {}, {"data", "stringData", "type", "immutable"}},
      {"",
       "v1",
       "ServiceAccount",
       "serviceaccounts",
       true,
       {"sa"},
       {},
       {},
       {{"token", "authentication.k8s.io", "v1", "TokenRequest", create_only}},
       {"secrets", "imagePullSecrets", "automountServiceAccountToken"}},
      {"",
       "v1",
       "Service",
       "services",
       true,
       {"svc"},
       all,
       {},
       {{"proxy", "", "", "ServiceProxyOptions", proxy_verbs}, status("Service")},
       spec_status},
      // /apis, groups in kube-apiserver's order
      {"apiregistration.k8s.io",
       "v1",
       "APIService",
       "apiservices",
       false,
       {},
       extensions,
       {},
       {status("APIService")},
       spec_status},
      {"apps", "v1", "ControllerRevision", "controllerrevisions", true, {}, {}, {}, {}, {"data", "revision"}},
      {"apps", "v1", "DaemonSet", "daemonsets", true, {"ds"}, all, {}, {status("DaemonSet")}, spec_status},
      {"apps",
       "v1",
       "Deployment",
       "deployments",
       true,
       {"deploy"},
       all,
       {},
       {scale(), status("Deployment")},
       spec_status},
      {"apps", "v1", "ReplicaSet", "replicasets", true, {"rs"}, all, {}, {scale(), status("ReplicaSet")}, spec_status},
      {"apps",
       "v1",
       "StatefulSet",
       "statefulsets",
       true,
       {"sts"},
       all,
       {},
       {scale(), status("StatefulSet")},
       spec_status},
      {"events.k8s.io",
       "v1",
       "Event",
       "events",
       true,
       {"ev"},
       {},
       {},
       {},
       {"eventTime", "series", "reportingController", "reportingInstance", "action", "reason", "regarding", "related",
        "note", "type", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"}},
      {"authentication.k8s.io",
       "v1",
       "SelfSubjectReview",
       "selfsubjectreviews",
       false,
       {},
       {},
       create_only,
       {},
       {"status"}},
      {"authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false, {}, {}, create_only, {}, spec_status},
      {"authorization.k8s.io",
       "v1",
       "LocalSubjectAccessReview",
       "localsubjectaccessreviews",
       true,
       {},
       {},
       create_only,
       {},
       spec_status},
      {"authorization.k8s.io",
       "v1",
       "SelfSubjectAccessReview",
       "selfsubjectaccessreviews",
       false,
       {},
       {},
       create_only,
       {},
       spec_status},
      {"authorization.k8s.io",
       "v1",
       "SelfSubjectRulesReview",
       "selfsubjectrulesreviews",
       false,
       {},
       {},
       create_only,
       {},
       spec_status},
      {"authorization.k8s.io",
       "v1",
       "SubjectAccessReview",
       "subjectaccessreviews",
       false,
       {},
       {},
       create_only,
       {},
       spec_status},
      {"autoscaling",
       "v2",
       "HorizontalPodAutoscaler",
       "horizontalpodautoscalers",
       true,
       {"hpa"},
       all,
       {},
       {status("HorizontalPodAutoscaler")},
       spec_status},
      {"batch", "v1", "CronJob", "cronjobs", true, {"cj"}, all, {}, {status("CronJob")}, spec_status},
      {"batch", "v1", "Job", "jobs", true, {}, all, {}, {status("Job")}, spec_status},
      {"certificates.k8s.io",
       "v1",
       "CertificateSigningRequest",
       "certificatesigningrequests",
       false,
       {"csr"},
       {},
       {},
       {{"approval", "", "", "CertificateSigningRequest", {"get", "patch", "update"}},
        status("CertificateSigningRequest")},
       spec_status},
      {"networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, {}, {}, {}, {}, {"spec"}},
      {"networking.k8s.io", "v1", "Ingress", "ingresses", true, {"ing"}, {}, {}, {status("Ingress")}, spec_status},
      {"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, {"netpol"}, {}, {}, {}, spec_status},
      {"policy",
       "v1",
       "PodDisruptionBudget",
       "poddisruptionbudgets",
       true,
       {"pdb"},
       {},
       {},
       {status("PodDisruptionBudget")},
       spec_status},
      {"rbac.authorization.k8s.io",
       "v1",
       "ClusterRoleBinding",
       "clusterrolebindings",
       false,
       {},
       {},
       {},
       {},
       {"subjects", "roleRef"}},
      {"rbac.authorization.k8s.io",
       "v1",
       "ClusterRole",
       "clusterroles",
       false,
       {},
       {},
       {},
       {},
       {"rules", "aggregationRule"}},
      {"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, {}, {}, {}, {}, {"subjects", "roleRef"}},
      {"rbac.authorization.k8s.io", "v1", "Role", "roles", true, {}, {}, {}, {}, {"rules"}},
      {"storage.k8s.io", "v1", "CSIDriver", "csidrivers", false, {}, {}, {}, {}, {"spec"}},
      {"storage.k8s.io", "v1", "CSINode", "csinodes", false, {}, {}, {}, {}, {"spec"}},
      {"storage.k8s.io",
       "v1",
       "CSIStorageCapacity",
       "csistoragecapacities",
       true,
       {},
       {},
       {},
       {},
       {"nodeTopology", "storageClassName", "capacity", "maximumVolumeSize"}},
      {"storage.k8s.io",
       "v1",
       "StorageClass",
       "storageclasses",
       false,
       {"sc"},
       {},
       {},
       {},
       {"provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion", "volumeBindingMode",
        "allowedTopologies"}},
      {"storage.k8s.io",
       "v1",
       "VolumeAttachment",
       "volumeattachments",
       false,
       {},
       {},
       {},
       {status("VolumeAttachment")},
       spec_status},
      {"admissionregistration.k8s.io",
       "v1",
       "MutatingWebhookConfiguration",
       "mutatingwebhookconfigurations",
       false,
       {},
       extensions,
       {},
       {},
       {"webhooks"}},
      {"admissionregistration.k8s.io",
       "v1",
       "ValidatingAdmissionPolicy",
       "validatingadmissionpolicies",
       false,
       {},
       extensions,
       {},
       {status("ValidatingAdmissionPolicy")},
       spec_status},
      {"admissionregistration.k8s.io",
       "v1",
       "ValidatingAdmissionPolicyBinding",
       "validatingadmissionpolicybindings",
       false,
       {},
       extensions,
       {},
       {},
       {"spec"}},
      {"admissionregistration.k8s.io",
       "v1",
       "ValidatingWebhookConfiguration",
       "validatingwebhookconfigurations",
       false,
       {},
       extensions,
       {},
       {},
       {"webhooks"}},
      {"apiextensions.k8s.io",
       "v1",
       "CustomResourceDefinition",
       "customresourcedefinitions",
       false,
       {"crd", "crds"},
       extensions,
       {},
       {status("CustomResourceDefinition")},
       spec_status},
      {"scheduling.k8s.io",
       "v1",
       "PriorityClass",
       "priorityclasses",
       false,
       {"pc"},
       {},
       {},
       {},
       {"value", "globalDefault", "description", "preemptionPolicy"}},
      {"coordination.k8s.io", "v1", "Lease", "leases", true, {}, {}, {}, {}, {"spec"}},
      {"node.k8s.io",
       "v1",
       "RuntimeClass",
       "runtimeclasses",
       false,
       {},
       {},
       {},
       {},
       {"handler", "overhead", "scheduling"}},
      {"discovery.k8s.io",
       "v1",
       "EndpointSlice",
       "endpointslices",
       true,
       {},
       {},
       {},
       {},
       {"addressType", "endpoints", "ports"}},
      {"flowcontrol.apiserver.k8s.io",
       "v1",
       "FlowSchema",
       "flowschemas",
       false,
       {},
       {},
       {},
       {status("FlowSchema")},
       spec_status},
      {"flowcontrol.apiserver.k8s.io",
       "v1",
       "PriorityLevelConfiguration",
       "prioritylevelconfigurations",
       false,
       {},
       {},
       {},
       {status("PriorityLevelConfiguration")},
       spec_status},
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
    type.categories = entry.categories;
    type.verbs = entry.verbs.empty() ? standard_verbs() : entry.verbs;
    type.subresources = entry.subresources;
    for (const auto& subresource : type.subresources) {
      type.has_status = type.has_status || subresource.name == "status";
      type.has_scale = type.has_scale || subresource.name == "scale";
    }
    type.stored = std::find(type.verbs.begin(), type.verbs.end(), "create") != type.verbs.end() &&
                  std::find(type.verbs.begin(), type.verbs.end(), "list") != type.verbs.end();
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
