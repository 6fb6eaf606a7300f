// The built-in kinds' field table (see builtin_schema.hpp). Types are written in a
// small notation, parsed once: `name type` pairs separated by ';', where a type is
// string, int32, int64, bool, number, quantity, intorstring, any, map (of strings),
// map<T> (of T), []T (a list; keyed by its items' merge key when the field is one of
// the keyed lists), or the name of another entry. `*` admits any other field.
#include "tests/emulator/builtin_schema.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "tests/emulator/patch.hpp"

namespace kstate::emulator {

namespace {

using json::Value;

// Struct name -> its fields. The names are the Go types', as decoding errors print them.
const char* const kTypes = R"(
ObjectMeta: name string; generateName string; namespace string; selfLink string; uid string; resourceVersion string; generation int64; creationTimestamp any; deletionTimestamp any; deletionGracePeriodSeconds int64; labels map; annotations map; ownerReferences []OwnerReference; finalizers []string; managedFields []any; clusterName string
OwnerReference: apiVersion string; kind string; name string; uid string; controller bool; blockOwnerDeletion bool
LabelSelector: matchLabels map; matchExpressions []LabelSelectorRequirement
LabelSelectorRequirement: key string; operator string; values []string
PodTemplateSpec: metadata ObjectMeta; spec PodSpec
PodSpec: volumes []Volume; initContainers []Container; containers []Container; ephemeralContainers []any; restartPolicy string; terminationGracePeriodSeconds int64; activeDeadlineSeconds int64; dnsPolicy string; nodeSelector map; serviceAccountName string; serviceAccount string; automountServiceAccountToken bool; nodeName string; hostNetwork bool; hostPID bool; hostIPC bool; shareProcessNamespace bool; securityContext any; imagePullSecrets []LocalObjectReference; hostname string; subdomain string; affinity any; schedulerName string; tolerations []any; hostAliases []any; priorityClassName string; priority int32; dnsConfig any; readinessGates []any; runtimeClassName string; enableServiceLinks bool; preemptionPolicy string; overhead map<quantity>; topologySpreadConstraints []any; setHostnameAsFQDN bool; os any; hostUsers bool; schedulingGates []any; resourceClaims []any; resources any
Container: name string; image string; command []string; args []string; workingDir string; ports []ContainerPort; envFrom []any; env []EnvVar; resources ResourceRequirements; resizePolicy []any; restartPolicy string; volumeMounts []VolumeMount; volumeDevices []any; livenessProbe any; readinessProbe any; startupProbe any; lifecycle any; terminationMessagePath string; terminationMessagePolicy string; imagePullPolicy string; securityContext any; stdin bool; stdinOnce bool; tty bool
ContainerPort: name string; hostPort int32; containerPort int32; protocol string; hostIP string
EnvVar: name string; value string; valueFrom any
ResourceRequirements: limits map<quantity>; requests map<quantity>; claims []any
VolumeMount: name string; readOnly bool; recursiveReadOnly string; mountPath string; subPath string; mountPropagation string; subPathExpr string
Volume: name string; *
LocalObjectReference: name string
DeploymentSpec: replicas int32; selector LabelSelector; template PodTemplateSpec; strategy DeploymentStrategy; minReadySeconds int32; revisionHistoryLimit int32; paused bool; progressDeadlineSeconds int32
DeploymentStrategy: type string; rollingUpdate RollingUpdateDeployment
RollingUpdateDeployment: maxUnavailable intorstring; maxSurge intorstring
StatefulSetSpec: replicas int32; selector LabelSelector; template PodTemplateSpec; volumeClaimTemplates []any; serviceName string; podManagementPolicy string; updateStrategy any; revisionHistoryLimit int32; minReadySeconds int32; persistentVolumeClaimRetentionPolicy any; ordinals any
DaemonSetSpec: selector LabelSelector; template PodTemplateSpec; updateStrategy any; minReadySeconds int32; revisionHistoryLimit int32
ReplicaSetSpec: replicas int32; minReadySeconds int32; selector LabelSelector; template PodTemplateSpec
JobSpec: parallelism int32; completions int32; activeDeadlineSeconds int64; podFailurePolicy any; successPolicy any; backoffLimit int32; backoffLimitPerIndex int32; maxFailedIndexes int32; selector LabelSelector; manualSelector bool; template PodTemplateSpec; ttlSecondsAfterFinished int32; completionMode string; suspend bool; podReplacementPolicy string; managedBy string
CronJobSpec: schedule string; timeZone string; startingDeadlineSeconds int64; concurrencyPolicy string; suspend bool; jobTemplate JobTemplateSpec; successfulJobsHistoryLimit int32; failedJobsHistoryLimit int32
JobTemplateSpec: metadata ObjectMeta; spec JobSpec
ServiceSpec: ports []ServicePort; selector map; clusterIP string; clusterIPs []string; type string; externalIPs []string; sessionAffinity string; loadBalancerIP string; loadBalancerSourceRanges []string; externalName string; externalTrafficPolicy string; healthCheckNodePort int32; publishNotReadyAddresses bool; sessionAffinityConfig any; ipFamilies []string; ipFamilyPolicy string; allocateLoadBalancerNodePorts bool; loadBalancerClass string; internalTrafficPolicy string; trafficDistribution string
ServicePort: name string; protocol string; appProtocol string; port int32; targetPort intorstring; nodePort int32
NamespaceSpec: finalizers []string
PolicyRule: verbs []string; apiGroups []string; resources []string; resourceNames []string; nonResourceURLs []string
Subject: kind string; apiGroup string; name string; namespace string
RoleRef: apiGroup string; kind string; name string
LeaseSpec: holderIdentity string; leaseDurationSeconds int32; acquireTime any; renewTime any; leaseTransitions int32; strategy string; preferredHolder string
PodDisruptionBudgetSpec: minAvailable intorstring; selector LabelSelector; maxUnavailable intorstring; unhealthyPodEvictionPolicy string
IngressSpec: ingressClassName string; defaultBackend any; tls []any; rules []any
)";

// Kind (plural, group) -> the fields of its top level; kinds not listed are not checked below the top level.
const char* const kKinds = R"(
/configmaps: data map; binaryData map; immutable bool
/secrets: data map; stringData map; type string; immutable bool
/services: spec ServiceSpec; status any
/serviceaccounts: secrets []any; imagePullSecrets []LocalObjectReference; automountServiceAccountToken bool
/namespaces: spec NamespaceSpec; status any
/pods: spec PodSpec; status any
apps/deployments: spec DeploymentSpec; status any
apps/statefulsets: spec StatefulSetSpec; status any
apps/daemonsets: spec DaemonSetSpec; status any
apps/replicasets: spec ReplicaSetSpec; status any
batch/jobs: spec JobSpec; status any
batch/cronjobs: spec CronJobSpec; status any
rbac.authorization.k8s.io/roles: rules []PolicyRule
rbac.authorization.k8s.io/clusterroles: rules []PolicyRule; aggregationRule any
rbac.authorization.k8s.io/rolebindings: subjects []Subject; roleRef RoleRef
rbac.authorization.k8s.io/clusterrolebindings: subjects []Subject; roleRef RoleRef
coordination.k8s.io/leases: spec LeaseSpec
policy/poddisruptionbudgets: spec PodDisruptionBudgetSpec; status any
networking.k8s.io/ingresses: spec IngressSpec; status any
)";

struct Field {
  std::string name;
  std::string type;
};

struct Struct {
  std::string name;
  std::vector<Field> fields;
  bool open = false;  // `*`: other fields admitted
};

std::vector<Field> parse_fields(const std::string& text, bool& open) {
  std::vector<Field> fields;
  std::stringstream parts(text);
  for (std::string part; std::getline(parts, part, ';');) {
    std::stringstream words(part);
    std::string name;
    std::string type;
    words >> name >> type;
    if (name == "*") {
      open = true;
    } else if (!name.empty()) {
      fields.push_back({name, type});
    }
  }
  return fields;
}

std::map<std::string, Struct> parse_table(const char* text) {
  std::map<std::string, Struct> table;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    Struct entry;
    entry.name = line.substr(0, colon);
    entry.fields = parse_fields(line.substr(colon + 1), entry.open);
    table[entry.name] = std::move(entry);
  }
  return table;
}

const std::map<std::string, Struct>& types() {
  static const std::map<std::string, Struct> table = parse_table(kTypes);
  return table;
}

const std::map<std::string, Struct>& kinds() {
  static const std::map<std::string, Struct> table = parse_table(kKinds);
  return table;
}

const char* json_type(const Value& value) {
  if (value.IsString()) {
    return "string";
  }
  if (value.IsNumber()) {
    return "number";
  }
  if (value.IsBool()) {
    return "bool";
  }
  if (value.IsArray()) {
    return "array";
  }
  return "object";
}

// What server-side apply's scalar check prints for a value (structured-merge-diff's %T of the unstructured value).
const char* go_unstructured_type(const Value& value) {
  if (value.IsString()) {
    return "string";
  }
  if (value.IsInt64()) {
    return "int64";
  }
  if (value.IsNumber()) {
    return "float64";
  }
  if (value.IsBool()) {
    return "bool";
  }
  if (value.IsArray()) {
    return "[]interface {}";
  }
  return "map[string]interface {}";
}

std::string go_type_name(const std::string& type) {
  if (type == "int32" || type == "int64" || type == "string" || type == "bool") {
    return type;
  }
  if (type == "number") {
    return "float64";
  }
  if (type == "map") {
    return "map[string]string";
  }
  if (type.starts_with("[]")) {
    return "[]" + go_type_name(type.substr(2));
  }
  if (type == "intorstring") {
    return "intstr.IntOrString";
  }
  if (type == "quantity") {
    return "resource.Quantity";
  }
  return "v1." + type;
}

struct Walker {
  bool drop_unknown;
  std::vector<FieldProblem> problems;

  void wrong_type(const std::string& path, const std::string& apply_path, const std::string& owner,
                  const std::string& type, const Value& value, const std::string& apply_expectation) {
    FieldProblem problem;
    problem.kind = FieldProblemKind::wrong_type;
    problem.path = path;
    problem.apply_path = apply_path;
    problem.decode_message = std::string("json: cannot unmarshal ") + json_type(value) + " into Go struct field " +
                             owner + "." + path + " of type " + go_type_name(type);
    problem.apply_message = apply_expectation + ", got " + go_unstructured_type(value);
    problems.push_back(std::move(problem));
  }

  // `owner`: the Go struct holding the field (for decoding messages).
  void check(const std::string& type, Value& value, const std::string& path, const std::string& apply_path,
             const std::string& owner) {
    if (type == "any" || value.IsNull()) {
      return;
    }
    if (type == "string") {
      if (!value.IsString()) {
        wrong_type(path, apply_path, owner, type, value, "expected string");
      }
      return;
    }
    if (type == "int32" || type == "int64" || type == "number") {
      if (!value.IsNumber()) {
        wrong_type(path, apply_path, owner, type, value, "expected numeric (int or float)");
      }
      return;
    }
    if (type == "bool") {
      if (!value.IsBool()) {
        wrong_type(path, apply_path, owner, type, value, "expected boolean");
      }
      return;
    }
    if (type == "intorstring" || type == "quantity") {
      if (!value.IsString() && !value.IsNumber()) {
        wrong_type(path, apply_path, owner, type, value, "expected string or number");
      }
      return;
    }
    if (type == "map" || type.starts_with("map<")) {
      if (!value.IsObject()) {
        wrong_type(path, apply_path, owner, type, value, "expected map");
        return;
      }
      const std::string item = type == "map" ? "string" : type.substr(4, type.size() - 5);
      for (auto& member : value.GetObject()) {
        std::string key = member.name.GetString();
        check(item, member.value, path + "." + key, apply_path + "." + key, owner);
      }
      return;
    }
    if (type.starts_with("[]")) {
      if (!value.IsArray()) {
        wrong_type(path, apply_path, owner, type, value, "expected list");
        return;
      }
      const std::string item = type.substr(2);
      const std::string field = path.substr(path.rfind('.') + 1);
      auto keys = value.Empty() ? std::vector<std::string>{} : list_map_keys(field, value[0]);
      for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
        std::string element = "[" + std::to_string(i) + "]";
        if (!keys.empty() && value[i].IsObject()) {
          element = "[";
          bool first = true;
          for (const auto& key : keys) {
            const Value* key_value = json::find(value[i], key);
            std::string shown =
                key_value != nullptr ? json::dump(*key_value) : "\"" + std::string(list_key_default(key)) + "\"";
            element += (first ? "" : ",") + key + "=" + shown;
            first = false;
          }
          element += "]";
        }
        check(item, value[i], path + "[" + std::to_string(i) + "]", apply_path + element, owner);
      }
      return;
    }
    auto found = types().find(type);
    if (found == types().end()) {
      return;
    }
    check_struct(found->second, value, path, apply_path);
  }

  void check_struct(const Struct& shape, Value& value, const std::string& path, const std::string& apply_path) {
    if (!value.IsObject()) {
      wrong_type(path, apply_path, shape.name, shape.name, value, "expected map");
      return;
    }
    std::vector<std::string> doomed;
    for (auto& member : value.GetObject()) {
      std::string name = member.name.GetString();
      std::string child = path.empty() ? name : path + "." + name;
      auto field =
          std::find_if(shape.fields.begin(), shape.fields.end(), [&](const Field& f) { return f.name == name; });
      if (field == shape.fields.end()) {
        if (!shape.open) {
          problems.push_back({FieldProblemKind::unknown, child, apply_path + "." + name, "", ""});
          doomed.push_back(name);
        }
        continue;
      }
      check(field->type, member.value, child, apply_path + "." + name, shape.name);
    }
    if (drop_unknown) {
      for (const auto& name : doomed) {
        value.RemoveMember(name.c_str());
      }
    }
  }
};

}  // namespace

std::vector<FieldProblem> check_builtin_fields(const ResourceType& type, json::Value& object, bool drop_unknown) {
  Walker walker{drop_unknown, {}};
  if (type.custom || !object.IsObject()) {
    return walker.problems;
  }
  // The top level: the kind's own fields when the table has them, else its top-level names.
  Struct top;
  top.name = type.kind;
  auto kind = kinds().find(type.group + "/" + type.plural);
  if (kind != kinds().end()) {
    top.fields = kind->second.fields;
  } else if (type.top_level_fields.empty()) {
    top.open = true;
  } else {
    for (const auto& name : type.top_level_fields) {
      top.fields.push_back({name, "any"});
    }
  }
  top.fields.push_back({"apiVersion", "string"});
  top.fields.push_back({"kind", "string"});
  top.fields.push_back({"metadata", "ObjectMeta"});
  walker.check_struct(top, object, "", "");
  return walker.problems;
}

namespace {

// The fields kube-apiserver's schemas list as required, for those the table has.
const std::map<std::string, std::vector<std::string>>& required_fields() {
  static const std::map<std::string, std::vector<std::string>> required{
      {"DeploymentSpec", {"selector", "template"}},
      {"StatefulSetSpec", {"selector", "template"}},
      {"DaemonSetSpec", {"selector", "template"}},
      {"ReplicaSetSpec", {"selector"}},
      {"JobSpec", {"template"}},
      {"CronJobSpec", {"schedule", "jobTemplate"}},
      {"PodSpec", {"containers"}},
      {"Container", {"name"}},
      {"ContainerPort", {"containerPort"}},
      {"EnvVar", {"name"}},
      {"VolumeMount", {"name", "mountPath"}},
      {"Volume", {"name"}},
      {"LabelSelectorRequirement", {"key", "operator"}},
      {"OwnerReference", {"apiVersion", "kind", "name", "uid"}},
      {"ServicePort", {"port"}},
      {"PolicyRule", {"verbs"}},
      {"Subject", {"kind", "name"}},
      {"RoleRef", {"apiGroup", "kind", "name"}},
  };
  return required;
}

constexpr std::string_view schema_reference_prefix = "#/components/schemas/";
constexpr std::string_view quantity_schema = "io.k8s.apimachinery.pkg.api.resource.Quantity";
constexpr std::string_view int_or_string_schema = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

// kube-apiserver's name of a struct's schema: its Go package and type.
std::string schema_name(const std::string& type) {
  static const std::map<std::string, std::string> packages{
      {"ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1"},
      {"OwnerReference", "io.k8s.apimachinery.pkg.apis.meta.v1"},
      {"LabelSelector", "io.k8s.apimachinery.pkg.apis.meta.v1"},
      {"LabelSelectorRequirement", "io.k8s.apimachinery.pkg.apis.meta.v1"},
      {"DeploymentSpec", "io.k8s.api.apps.v1"},
      {"DeploymentStrategy", "io.k8s.api.apps.v1"},
      {"RollingUpdateDeployment", "io.k8s.api.apps.v1"},
      {"StatefulSetSpec", "io.k8s.api.apps.v1"},
      {"DaemonSetSpec", "io.k8s.api.apps.v1"},
      {"ReplicaSetSpec", "io.k8s.api.apps.v1"},
      {"JobSpec", "io.k8s.api.batch.v1"},
      {"CronJobSpec", "io.k8s.api.batch.v1"},
      {"JobTemplateSpec", "io.k8s.api.batch.v1"},
      {"PolicyRule", "io.k8s.api.rbac.v1"},
      {"Subject", "io.k8s.api.rbac.v1"},
      {"RoleRef", "io.k8s.api.rbac.v1"},
      {"LeaseSpec", "io.k8s.api.coordination.v1"},
      {"PodDisruptionBudgetSpec", "io.k8s.api.policy.v1"},
      {"IngressSpec", "io.k8s.api.networking.v1"},
  };
  auto found = packages.find(type);
  return (found != packages.end() ? found->second : std::string("io.k8s.api.core.v1")) + "." + type;
}

// A kind's schema name: io.k8s.api.<package>.<version>.<Kind> (package: the group's first label).
std::string kind_schema_name(const ResourceType& type) {
  std::string package = type.group.empty() ? "core" : type.group.substr(0, type.group.find('.'));
  return "io.k8s.api." + package + "." + type.version + "." + type.kind;
}

Value reference_to(std::string_view name, json::Allocator& allocator) {
  Value reference(rapidjson::kObjectType);
  json::set_string(reference, "$ref", std::string(schema_reference_prefix) + std::string(name), allocator);
  Value all(rapidjson::kArrayType);
  all.PushBack(std::move(reference), allocator);
  Value wrapped(rapidjson::kObjectType);
  json::set(wrapped, "allOf", std::move(all), allocator);
  return wrapped;
}

struct SchemaWriter {
  Value& schemas;
  json::Allocator& allocator;

  // The schema of a table type; the structs it names are added to `schemas`.
  Value of(const std::string& type) {
    Value schema(rapidjson::kObjectType);
    auto plain = [&](const char* json_type, const char* format) {
      json::set_string(schema, "type", json_type, allocator);
      if (format != nullptr) {
        json::set_string(schema, "format", format, allocator);
      }
      return std::move(schema);
    };
    if (type == "string") {
      return plain("string", nullptr);
    }
    if (type == "int32" || type == "int64") {
      return plain("integer", type.c_str());
    }
    if (type == "number") {
      return plain("number", "double");
    }
    if (type == "bool") {
      return plain("boolean", nullptr);
    }
    if (type == "quantity") {
      return reference_to(quantity_schema, allocator);
    }
    if (type == "intorstring") {
      return reference_to(int_or_string_schema, allocator);
    }
    if (type == "map" || type.starts_with("map<")) {
      json::set_string(schema, "type", "object", allocator);
      json::set(schema, "additionalProperties", of(type == "map" ? "string" : type.substr(4, type.size() - 5)),
                allocator);
      return schema;
    }
    if (type.starts_with("[]")) {
      json::set_string(schema, "type", "array", allocator);
      json::set(schema, "items", of(type.substr(2)), allocator);
      return schema;
    }
    auto found = types().find(type);
    if (found == types().end()) {
      return schema;  // "any": anything
    }
    add_struct(found->second);
    return reference_to(schema_name(type), allocator);
  }

  // An object schema of `fields` (with `required`, and open to others when `open`).
  Value object(const std::string& struct_name, const std::vector<Field>& fields, bool open) {
    Value properties(rapidjson::kObjectType);
    for (const auto& field : fields) {
      json::set(properties, field.name, of(field.type), allocator);
    }
    Value schema(rapidjson::kObjectType);
    json::set(schema, "properties", std::move(properties), allocator);
    if (auto required = required_fields().find(struct_name); required != required_fields().end()) {
      Value names(rapidjson::kArrayType);
      for (const auto& name : required->second) {
        names.PushBack(json::make_string(name, allocator), allocator);
      }
      json::set(schema, "required", std::move(names), allocator);
    }
    json::set_string(schema, "type", "object", allocator);
    if (open) {
      json::set(schema, "x-kubernetes-preserve-unknown-fields", Value(true), allocator);
    }
    return schema;
  }

  void add_struct(const Struct& shape) {
    const std::string name = schema_name(shape.name);
    if (json::find(schemas, name) != nullptr) {
      return;
    }
    json::set(schemas, name, Value(rapidjson::kObjectType), allocator);  // (a placeholder against cycles)
    Value schema = object(shape.name, shape.fields, shape.open);
    *json::find(schemas, name) = std::move(schema);
  }

  void add_one_of(std::string_view name, std::initializer_list<const char*> alternatives, const char* format) {
    Value one_of(rapidjson::kArrayType);
    for (const char* type : alternatives) {
      Value alternative(rapidjson::kObjectType);
      json::set_string(alternative, "type", type, allocator);
      one_of.PushBack(std::move(alternative), allocator);
    }
    Value schema(rapidjson::kObjectType);
    if (format != nullptr) {
      json::set_string(schema, "format", format, allocator);
    }
    json::set(schema, "oneOf", std::move(one_of), allocator);
    json::set(schemas, name, std::move(schema), allocator);
  }
};

}  // namespace

void add_openapi_schemas(const std::vector<const ResourceType*>& resource_types, json::Value& schemas,
                         json::Allocator& allocator) {
  SchemaWriter writer{schemas, allocator};
  bool any_kind = false;
  for (const ResourceType* type : resource_types) {
    auto kind = kinds().find(type->group + "/" + type->plural);
    if (type->custom || kind == kinds().end()) {
      continue;
    }
    std::vector<Field> fields{{"apiVersion", "string"}, {"kind", "string"}, {"metadata", "ObjectMeta"}};
    fields.insert(fields.end(), kind->second.fields.begin(), kind->second.fields.end());
    Value schema = writer.object(type->kind, fields, kind->second.open);
    Value listed(rapidjson::kObjectType);
    json::set_string(listed, "group", type->group, allocator);
    json::set_string(listed, "kind", type->kind, allocator);
    json::set_string(listed, "version", type->version, allocator);
    Value gvks(rapidjson::kArrayType);
    gvks.PushBack(std::move(listed), allocator);
    json::set(schema, "x-kubernetes-group-version-kind", std::move(gvks), allocator);
    json::set(schemas, kind_schema_name(*type), std::move(schema), allocator);
    any_kind = true;
  }
  if (any_kind) {
    writer.add_one_of(quantity_schema, {"string", "number"}, nullptr);
    writer.add_one_of(int_or_string_schema, {"integer", "string"}, "int-or-string");
  }
}

}  // namespace kstate::emulator
