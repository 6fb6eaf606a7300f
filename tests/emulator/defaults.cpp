// Decoding, defaulting and create strategies of built-in kinds (see defaults.hpp).
// The defaults are kube-apiserver 1.32's SetDefaults_* for the kinds the emulator
// serves, limited to what a client can observe on the objects it writes.
#include "tests/emulator/defaults.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

#include "core/encoding.hpp"
#include "tests/emulator/quantity.hpp"

namespace kstate::emulator {

namespace {

using json::Allocator;
using json::string_at;
using json::Value;

// The Go zero value's non-omitempty fields per kind (plural, built-in kinds).
const char* zero_text(const ResourceType& type) {
  static const std::map<std::string, const char*> zeros = {
      {"namespaces", R"({"spec":{},"status":{}})"},
      {"services", R"({"spec":{},"status":{"loadBalancer":{}}})"},
      {"pods", R"({"spec":{"containers":null},"status":{}})"},
      {"deployments",
       R"({"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},)"
       R"("strategy":{}},"status":{}})"},
      {"statefulsets",
       R"({"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},)"
       R"("updateStrategy":{}},"status":{"replicas":0,"availableReplicas":0}})"},
      {"daemonsets",
       R"({"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},)"
       R"("updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,)"
       R"("desiredNumberScheduled":0,"numberReady":0}})"},
      {"replicasets",
       R"({"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}},)"
       R"("status":{"replicas":0}})"},
      {"jobs",
       R"({"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}},"status":{}})"},
      {"cronjobs", R"({"spec":{"schedule":"","jobTemplate":{"metadata":{"creationTimestamp":null},"spec":{"template":)"
                   R"({"metadata":{"creationTimestamp":null},"spec":{"containers":null}}}}},"status":{}})"},
      {"persistentvolumeclaims", R"({"spec":{"resources":{}},"status":{}})"},
      {"persistentvolumes", R"({"spec":{},"status":{}})"},
      {"nodes", R"({"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{)"
                R"("machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"",)"
                R"("containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"",)"
                R"("operatingSystem":"","architecture":""}}})"},
      {"resourcequotas", R"({"spec":{},"status":{}})"},
      {"limitranges", R"({"spec":{"limits":null}})"},
      {"customresourcedefinitions",
       R"({"spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},)"
       R"("status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}})"},
      {"leases", R"({"spec":{}})"},
      {"ingresses", R"({"spec":{},"status":{"loadBalancer":{}}})"},
      {"networkpolicies", R"({"spec":{"podSelector":{}}})"},
      {"ingressclasses", R"({"spec":{}})"},
      {"poddisruptionbudgets",
       R"({"spec":{},"status":{"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}})"},
      {"storageclasses", R"({"provisioner":""})"},
      {"priorityclasses", R"({"value":0})"},
      {"roles", R"({"rules":null})"},
      {"clusterroles", R"({"rules":null})"},
      {"rolebindings", R"({"roleRef":{"apiGroup":"","kind":"","name":""}})"},
      {"clusterrolebindings", R"({"roleRef":{"apiGroup":"","kind":"","name":""}})"},
      {"horizontalpodautoscalers",
       R"({"spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"desiredReplicas":0}})"},
      {"events", R"({"involvedObject":{},"source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,)"
                 R"("reportingComponent":"","reportingInstance":""})"},
  };
  auto found = zeros.find(type.plural);
  return found == zeros.end() ? "{}" : found->second;
}

bool is(const ResourceType& type, std::string_view group, std::string_view plural) {
  return !type.custom && type.group == group && type.plural == plural;
}

void set_default(Value& object, std::string_view key, Value value, Allocator& allocator) {
  if (object.IsObject() && json::find(object, key) == nullptr) {
    json::set(object, key, std::move(value), allocator);
  }
}

void set_default_string(Value& object, std::string_view key, std::string_view value, Allocator& allocator) {
  set_default(object, key, json::make_string(value, allocator), allocator);
}

// Copies the members of `zero` that `object` lacks, and recurses into objects both have.
void fill_zero(Value& object, const Value& zero, Allocator& allocator) {
  if (!object.IsObject() || !zero.IsObject()) {
    return;
  }
  for (const auto& member : zero.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    Value* existing = json::find(object, name);
    if (existing == nullptr) {
      json::set(object, name, Value(member.value, allocator), allocator);
    } else if (existing->IsObject() && member.value.IsObject()) {
      fill_zero(*existing, member.value, allocator);
    }
  }
}

// ---- pod templates --------------------------------------------------------------------

std::string default_pull_policy(std::string_view image) {
  if (image.find('@') != std::string_view::npos) {
    return "IfNotPresent";
  }
  auto slash = image.rfind('/');
  auto colon = image.rfind(':');
  bool tagged = colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash);
  if (!tagged || image.substr(colon + 1) == "latest") {
    return "Always";
  }
  return "IfNotPresent";
}

void default_probe(Value* probe, Allocator& allocator) {
  if (probe == nullptr || !probe->IsObject()) {
    return;
  }
  set_default(*probe, "timeoutSeconds", Value(1), allocator);
  set_default(*probe, "periodSeconds", Value(10), allocator);
  set_default(*probe, "successThreshold", Value(1), allocator);
  set_default(*probe, "failureThreshold", Value(3), allocator);
  if (Value* get = json::find(*probe, "httpGet"); get != nullptr && get->IsObject()) {
    set_default_string(*get, "scheme", "HTTP", allocator);
  }
}

void default_container(Value& container, Allocator& allocator) {
  if (!container.IsObject()) {
    return;
  }
  if (Value* ports = json::find(container, "ports"); ports != nullptr && ports->IsArray()) {
    for (auto& port : ports->GetArray()) {
      set_default_string(port, "protocol", "TCP", allocator);
    }
  }
  if (Value* env = json::find(container, "env"); env != nullptr && env->IsArray()) {
    for (auto& variable : env->GetArray()) {
      Value* from = json::find(variable, "valueFrom");
      Value* field_ref = from != nullptr && from->IsObject() ? json::find(*from, "fieldRef") : nullptr;
      if (field_ref != nullptr && field_ref->IsObject()) {
        set_default_string(*field_ref, "apiVersion", "v1", allocator);
      }
    }
  }
  set_default(container, "resources", Value(rapidjson::kObjectType), allocator);
  for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
    default_probe(json::find(container, probe), allocator);
  }
  set_default_string(container, "terminationMessagePath", "/dev/termination-log", allocator);
  set_default_string(container, "terminationMessagePolicy", "File", allocator);
  set_default_string(container, "imagePullPolicy", default_pull_policy(string_at(container, {"image"})), allocator);
}

void default_pod_spec(Value* spec, Allocator& allocator) {
  if (spec == nullptr || !spec->IsObject()) {
    return;
  }
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    if (Value* containers = json::find(*spec, list); containers != nullptr && containers->IsArray()) {
      for (auto& container : containers->GetArray()) {
        default_container(container, allocator);
      }
    }
  }
  if (Value* volumes = json::find(*spec, "volumes"); volumes != nullptr && volumes->IsArray()) {
    for (auto& volume : volumes->GetArray()) {
      for (const char* source : {"secret", "configMap", "projected", "downwardAPI"}) {
        if (Value* found = json::find(volume, source); found != nullptr && found->IsObject()) {
          set_default(*found, "defaultMode", Value(420), allocator);
        }
      }
      if (Value* host = json::find(volume, "hostPath"); host != nullptr && host->IsObject()) {
        set_default_string(*host, "type", "", allocator);
      }
    }
  }
  set_default_string(*spec, "restartPolicy", "Always", allocator);
  set_default(*spec, "terminationGracePeriodSeconds", Value(30), allocator);
  set_default_string(*spec, "dnsPolicy", "ClusterFirst", allocator);
  set_default(*spec, "securityContext", Value(rapidjson::kObjectType), allocator);
  set_default_string(*spec, "schedulerName", "default-scheduler", allocator);
}

Value* template_spec(Value& object, std::initializer_list<std::string_view> to_template) {
  Value* current = &object;
  for (auto key : to_template) {
    current = json::find(*current, key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return json::find(*current, "spec");
}

// ---- per kind ---------------------------------------------------------------------------

void default_deployment(Value& spec, Allocator& allocator) {
  set_default(spec, "replicas", Value(1), allocator);
  Value& strategy = json::ensure_object(spec, "strategy", allocator);
  set_default_string(strategy, "type", "RollingUpdate", allocator);
  if (string_at(strategy, {"type"}) == "RollingUpdate") {
    Value& rolling = json::ensure_object(strategy, "rollingUpdate", allocator);
    set_default_string(rolling, "maxUnavailable", "25%", allocator);
    set_default_string(rolling, "maxSurge", "25%", allocator);
  }
  set_default(spec, "revisionHistoryLimit", Value(10), allocator);
  set_default(spec, "progressDeadlineSeconds", Value(600), allocator);
}

void default_statefulset(Value& spec, Allocator& allocator) {
  set_default(spec, "replicas", Value(1), allocator);
  set_default_string(spec, "podManagementPolicy", "OrderedReady", allocator);
  Value& strategy = json::ensure_object(spec, "updateStrategy", allocator);
  set_default_string(strategy, "type", "RollingUpdate", allocator);
  if (string_at(strategy, {"type"}) == "RollingUpdate") {
    set_default(json::ensure_object(strategy, "rollingUpdate", allocator), "partition", Value(0), allocator);
  }
  set_default(spec, "revisionHistoryLimit", Value(10), allocator);
  Value& retention = json::ensure_object(spec, "persistentVolumeClaimRetentionPolicy", allocator);
  set_default_string(retention, "whenDeleted", "Retain", allocator);
  set_default_string(retention, "whenScaled", "Retain", allocator);
  if (Value* claims = json::find(spec, "volumeClaimTemplates"); claims != nullptr && claims->IsArray()) {
    for (auto& claim : claims->GetArray()) {
      if (Value* claim_spec = json::find(claim, "spec"); claim_spec != nullptr && claim_spec->IsObject()) {
        set_default_string(*claim_spec, "volumeMode", "Filesystem", allocator);
      }
    }
  }
}

void default_daemonset(Value& spec, Allocator& allocator) {
  Value& strategy = json::ensure_object(spec, "updateStrategy", allocator);
  set_default_string(strategy, "type", "RollingUpdate", allocator);
  if (string_at(strategy, {"type"}) == "RollingUpdate") {
    Value& rolling = json::ensure_object(strategy, "rollingUpdate", allocator);
    set_default(rolling, "maxUnavailable", Value(1), allocator);
    set_default(rolling, "maxSurge", Value(0), allocator);
  }
  set_default(spec, "revisionHistoryLimit", Value(10), allocator);
}

void default_job(Value& spec, Allocator& allocator) {
  const bool has_completions = json::find(spec, "completions") != nullptr;
  const bool has_parallelism = json::find(spec, "parallelism") != nullptr;
  if (!has_completions && !has_parallelism) {
    json::set(spec, "parallelism", Value(1), allocator);
    json::set(spec, "completions", Value(1), allocator);
  }
  set_default(spec, "parallelism", Value(1), allocator);
  set_default(spec, "backoffLimit", Value(6), allocator);
  set_default_string(spec, "completionMode", "NonIndexed", allocator);
  set_default(spec, "suspend", Value(false), allocator);
  set_default_string(spec, "podReplacementPolicy",
                     json::find(spec, "podFailurePolicy") != nullptr ? "Failed" : "TerminatingOrFailed", allocator);
  set_default(spec, "manualSelector", Value(false), allocator);
}

void default_cronjob(Value& spec, Allocator& allocator) {
  set_default_string(spec, "concurrencyPolicy", "Allow", allocator);
  set_default(spec, "suspend", Value(false), allocator);
  set_default(spec, "successfulJobsHistoryLimit", Value(3), allocator);
  set_default(spec, "failedJobsHistoryLimit", Value(1), allocator);
}

void default_service(Value& object, Allocator& allocator) {
  Value& spec = json::ensure_object(object, "spec", allocator);
  set_default_string(spec, "type", "ClusterIP", allocator);
  const std::string type = string_at(spec, {"type"});
  set_default_string(spec, "sessionAffinity", "None", allocator);
  if (Value* ports = json::find(spec, "ports"); ports != nullptr && ports->IsArray()) {
    for (auto& port : ports->GetArray()) {
      set_default_string(port, "protocol", "TCP", allocator);
      if (json::find(port, "targetPort") == nullptr) {
        if (const Value* number = json::find(port, "port"); number != nullptr) {
          json::set(port, "targetPort", Value(*number, allocator), allocator);
        }
      }
    }
  }
  if (type == "ClusterIP" || type == "NodePort" || type == "LoadBalancer") {
    set_default_string(spec, "internalTrafficPolicy", "Cluster", allocator);
  }
  if (type == "NodePort" || type == "LoadBalancer") {
    set_default_string(spec, "externalTrafficPolicy", "Cluster", allocator);
  }
  if (type == "LoadBalancer") {
    set_default(spec, "allocateLoadBalancerNodePorts", Value(true), allocator);
  }
}

void default_network_policy(Value& object, Allocator& allocator) {
  Value& spec = json::ensure_object(object, "spec", allocator);
  for (const char* direction : {"ingress", "egress"}) {
    if (Value* rules = json::find(spec, direction); rules != nullptr && rules->IsArray()) {
      for (auto& rule : rules->GetArray()) {
        if (Value* ports = json::find(rule, "ports"); ports != nullptr && ports->IsArray()) {
          for (auto& port : ports->GetArray()) {
            set_default_string(port, "protocol", "TCP", allocator);
          }
        }
      }
    }
  }
  if (json::find(spec, "policyTypes") == nullptr) {
    Value types(rapidjson::kArrayType);
    types.PushBack(json::make_string("Ingress", allocator), allocator);
    if (json::find(spec, "egress") != nullptr) {
      types.PushBack(json::make_string("Egress", allocator), allocator);
    }
    json::set(spec, "policyTypes", std::move(types), allocator);
  }
}

// ---- decoding -------------------------------------------------------------------------

// Moves Secret.stringData into data (base64), as the conversion to the internal type does.
void fold_string_data(Value& secret, Allocator& allocator) {
  Value* string_data = json::find(secret, "stringData");
  if (string_data == nullptr) {
    return;
  }
  if (string_data->IsObject() && !string_data->ObjectEmpty()) {
    Value& data = json::ensure_object(secret, "data", allocator);
    for (const auto& member : string_data->GetObject()) {
      if (member.value.IsString()) {
        json::set_string(
            data, member.name.GetString(),
            encoding::base64_encode(std::string_view(member.value.GetString(), member.value.GetStringLength())),
            allocator);
      }
    }
  }
  secret.RemoveMember("stringData");
}

// Canonicalises one quantity value; false (and the error) when it is not one.
bool canonicalize(Value& value, Allocator& allocator, std::string& error) {
  if (value.IsNull()) {
    return true;
  }
  std::string text = value.IsString()   ? std::string(value.GetString(), value.GetStringLength())
                     : value.IsNumber() ? json::dump(value)
                                        : std::string();
  if (!value.IsString() && !value.IsNumber()) {
    error = quantity_error_message(QuantityError::format);
    return false;
  }
  auto canonical = canonical_quantity(text);
  if (!canonical.text) {
    error = quantity_error_message(canonical.error);
    return false;
  }
  value = json::make_string(*canonical.text, allocator);
  return true;
}

bool canonicalize_map(Value* map, Allocator& allocator, std::string& error) {
  if (map == nullptr || !map->IsObject()) {
    return true;
  }
  for (auto& member : map->GetObject()) {
    if (!canonicalize(member.value, allocator, error)) {
      return false;
    }
  }
  return true;
}

// Walks a built-in object and canonicalises the fields that are resource.Quantity.
bool canonicalize_quantities(const ResourceType& type, std::string_view name, Value& value, Allocator& allocator,
                             std::string& error) {
  if (value.IsArray()) {
    for (auto& item : value.GetArray()) {
      if (!canonicalize_quantities(type, name, item, allocator, error)) {
        return false;
      }
    }
    return true;
  }
  if (!value.IsObject()) {
    return true;
  }
  for (auto& member : value.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    bool ok = true;
    if (name == "resources" && (key == "limits" || key == "requests")) {
      ok = canonicalize_map(&member.value, allocator, error);
    } else if (key == "overhead" ||
               (key == "capacity" && (type.plural == "persistentvolumes" || type.plural == "persistentvolumeclaims" ||
                                      type.plural == "nodes")) ||
               (key == "allocatable" && type.plural == "nodes") ||
               ((key == "hard" || key == "used") && type.plural == "resourcequotas")) {
      ok = canonicalize_map(&member.value, allocator, error);
    } else if (key == "sizeLimit" && name == "emptyDir") {
      ok = canonicalize(member.value, allocator, error);
    } else if (type.plural == "limitranges" && name == "limits" &&
               (key == "max" || key == "min" || key == "default" || key == "defaultRequest" ||
                key == "maxLimitRequestRatio")) {
      ok = canonicalize_map(&member.value, allocator, error);
    } else if (type.plural == "horizontalpodautoscalers" && name == "target" &&
               (key == "value" || key == "averageValue")) {
      ok = canonicalize(member.value, allocator, error);
    } else {
      ok = canonicalize_quantities(type, key, member.value, allocator, error);
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

bool digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> normalize_micro_time(Value* value, Allocator& allocator) {
  if (value == nullptr || value->IsNull()) {
    return std::nullopt;
  }
  if (!value->IsString()) {
    return std::string("json: cannot unmarshal ") + (value->IsNumber() ? "number" : "object") +
           " into Go value of type string";
  }
  auto parsed = parse_micro_time(std::string_view(value->GetString(), value->GetStringLength()));
  if (!parsed.utc) {
    return parsed.error;
  }
  *value = json::make_string(*parsed.utc, allocator);
  return std::nullopt;
}

}  // namespace

const json::Value& zero_object(const ResourceType& type) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<json::Document>> cache;
  std::lock_guard lock(mutex);
  const std::string key = type.custom ? std::string("custom") : type.plural;
  auto& entry = cache[key];
  if (!entry) {
    entry = std::make_unique<json::Document>();
    if (type.custom) {
      entry->SetObject();
    } else {
      entry->Parse(zero_text(type));
      json::Value metadata(rapidjson::kObjectType);
      json::set(metadata, "creationTimestamp", json::Value(), entry->GetAllocator());
      json::set(*entry, "metadata", std::move(metadata), entry->GetAllocator());
    }
  }
  return *entry;
}

MicroTime parse_micro_time(std::string_view text) {
  const std::string layout = "2006-01-02T15:04:05.000000Z07:00";
  auto fail = [&](std::string_view rest, std::string_view element) {
    return MicroTime{std::nullopt, "parsing time \"" + std::string(text) + "\" as \"" + layout + "\": cannot parse \"" +
                                       std::string(rest) + "\" as \"" + std::string(element) + "\""};
  };
  // Go's time.Parse walks the layout element by element: a number of fixed width or a literal.
  struct Element {
    std::string_view layout;
    size_t digits;  // 0: a literal
  };
  static constexpr Element elements[] = {{"2006", 4}, {"-", 0}, {"01", 2}, {"-", 0}, {"02", 2}, {"T", 0},
                                         {"15", 2},   {":", 0}, {"04", 2}, {":", 0}, {"05", 2}};
  int fields[6] = {};
  int field = 0;
  size_t at = 0;
  for (const auto& element : elements) {
    std::string_view rest = text.substr(at);
    if (element.digits == 0) {
      if (!rest.starts_with(element.layout)) {
        return fail(rest, element.layout);
      }
      at += element.layout.size();
      continue;
    }
    if (rest.size() < element.digits || !digits(rest.substr(0, element.digits))) {
      return fail(rest, element.layout);
    }
    fields[field++] = std::stoi(std::string(rest.substr(0, element.digits)));
    at += element.digits;
  }
  std::string_view rest = text.substr(at);
  if (rest.size() < 7 || rest[0] != '.' || !digits(rest.substr(1, 6))) {
    return fail(rest, ".000000");
  }
  std::string fraction(rest.substr(1, 6));
  at += 7;
  rest = text.substr(at);
  int offset_seconds = 0;
  if (rest == "Z") {
    offset_seconds = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && digits(rest.substr(1, 2)) && rest[3] == ':' &&
             digits(rest.substr(4, 2))) {
    offset_seconds =
        (std::stoi(std::string(rest.substr(1, 2))) * 3600 + std::stoi(std::string(rest.substr(4, 2))) * 60) *
        (rest[0] == '-' ? -1 : 1);
  } else {
    return fail(rest, "Z07:00");
  }
  if (fields[1] < 1 || fields[1] > 12) {
    return MicroTime{std::nullopt, "parsing time \"" + std::string(text) + "\": month out of range"};
  }
  if (fields[2] < 1 || fields[2] > 31 || fields[3] > 23 || fields[4] > 59 || fields[5] > 59) {
    return MicroTime{std::nullopt, "parsing time \"" + std::string(text) + "\": day out of range"};
  }
  std::tm tm{};
  tm.tm_year = fields[0] - 1900;
  tm.tm_mon = fields[1] - 1;
  tm.tm_mday = fields[2];
  tm.tm_hour = fields[3];
  tm.tm_min = fields[4];
  tm.tm_sec = fields[5];
  std::time_t utc = timegm(&tm) - offset_seconds;
  std::tm out{};
  gmtime_r(&utc, &out);
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%sZ", out.tm_year + 1900, out.tm_mon + 1,
                out.tm_mday, out.tm_hour, out.tm_min, out.tm_sec, fraction.c_str());
  return MicroTime{std::string(buffer), ""};
}

std::optional<std::string> normalize_decoded(const ResourceType& type, json::Value& object,
                                             json::Allocator& allocator) {
  if (type.custom || !object.IsObject()) {
    return std::nullopt;
  }
  std::string error;
  // (A CRD's schema may name properties like the quantity fields: it holds none.)
  if (type.group != "apiextensions.k8s.io" && !canonicalize_quantities(type, "", object, allocator, error)) {
    return error;
  }
  if (is(type, "coordination.k8s.io", "leases")) {
    if (Value* spec = json::find(object, "spec"); spec != nullptr && spec->IsObject()) {
      for (const char* field : {"acquireTime", "renewTime"}) {
        if (auto failed = normalize_micro_time(json::find(*spec, field), allocator)) {
          return failed;
        }
      }
    }
  }
  if (is(type, "", "events")) {
    if (auto failed = normalize_micro_time(json::find(object, "eventTime"), allocator)) {
      return failed;
    }
  }
  if (is(type, "", "secrets")) {
    fold_string_data(object, allocator);
  }
  return std::nullopt;
}

std::string decode_error_message(const ResourceType& type, const std::string& reason) {
  return type.kind + " in version \"" + type.version + "\" cannot be handled as a " + type.kind + ": " + reason;
}

void apply_defaults(const ResourceType& type, json::Value& object, json::Allocator& allocator) {
  if (type.custom || !object.IsObject()) {
    return;
  }
  if (is(type, "", "namespaces")) {
    std::string name = string_at(object, {"metadata", "name"});
    if (!name.empty()) {
      Value& labels = json::ensure_object(json::ensure_object(object, "metadata", allocator), "labels", allocator);
      json::set_string(labels, "kubernetes.io/metadata.name", name, allocator);
    }
    Value& status = json::ensure_object(object, "status", allocator);
    set_default_string(status, "phase", "Active", allocator);
  } else if (is(type, "", "secrets")) {
    set_default_string(object, "type", "Opaque", allocator);
  } else if (is(type, "", "services")) {
    default_service(object, allocator);
  } else if (is(type, "", "persistentvolumeclaims")) {
    set_default_string(json::ensure_object(object, "spec", allocator), "volumeMode", "Filesystem", allocator);
    set_default_string(json::ensure_object(object, "status", allocator), "phase", "Pending", allocator);
  } else if (is(type, "", "pods")) {
    default_pod_spec(json::find(object, "spec"), allocator);
    if (Value* spec = json::find(object, "spec"); spec != nullptr && spec->IsObject()) {
      set_default(*spec, "enableServiceLinks", Value(true), allocator);
    }
  } else if (is(type, "apiextensions.k8s.io", "customresourcedefinitions")) {
    Value& spec = json::ensure_object(object, "spec", allocator);
    if (Value* names = json::find(spec, "names"); names != nullptr && names->IsObject()) {
      std::string kind = string_at(*names, {"kind"});
      if (!kind.empty()) {
        std::string singular = kind;
        std::transform(singular.begin(), singular.end(), singular.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        set_default_string(*names, "singular", singular, allocator);
        set_default_string(*names, "listKind", kind + "List", allocator);
      }
    }
    set_default_string(json::ensure_object(spec, "conversion", allocator), "strategy", "None", allocator);
  } else if (is(type, "networking.k8s.io", "networkpolicies")) {
    default_network_policy(object, allocator);
  } else if (type.group == "apps" || type.group == "batch") {
    Value* spec = json::find(object, "spec");
    if (spec != nullptr && spec->IsObject()) {
      if (type.plural == "deployments") {
        default_deployment(*spec, allocator);
      } else if (type.plural == "statefulsets") {
        default_statefulset(*spec, allocator);
      } else if (type.plural == "daemonsets") {
        default_daemonset(*spec, allocator);
      } else if (type.plural == "replicasets") {
        set_default(*spec, "replicas", Value(1), allocator);
      } else if (type.plural == "jobs") {
        default_job(*spec, allocator);
      } else if (type.plural == "cronjobs") {
        default_cronjob(*spec, allocator);
      }
      default_pod_spec(type.plural == "cronjobs" ? template_spec(*spec, {"jobTemplate", "spec", "template"})
                                                 : template_spec(*spec, {"template"}),
                       allocator);
    }
  }
  fill_zero(object, zero_object(type), allocator);
}

void prepare_for_create(const ResourceType& type, json::Value& object, json::Allocator& allocator) {
  if (type.custom || !object.IsObject()) {
    return;
  }
  if (type.has_status && !is(type, "", "namespaces") &&
      !is(type, "apiextensions.k8s.io", "customresourcedefinitions")) {
    // Status is written through the status subresource only.
    object.RemoveMember("status");
  }
  if (is(type, "", "namespaces")) {
    Value finalizers(rapidjson::kArrayType);
    finalizers.PushBack(json::make_string("kubernetes", allocator), allocator);
    json::set(json::ensure_object(object, "spec", allocator), "finalizers", std::move(finalizers), allocator);
    Value status(rapidjson::kObjectType);
    json::set_string(status, "phase", "Active", allocator);
    json::set(object, "status", std::move(status), allocator);
  }
  if (is(type, "apiextensions.k8s.io", "customresourcedefinitions")) {
    // Names are accepted and the CRD established later (controllers); storedVersions
    // starts with the storage version.
    Value status(rapidjson::kObjectType);
    json::set(status, "conditions", Value(), allocator);
    Value accepted(rapidjson::kObjectType);
    json::set_string(accepted, "plural", "", allocator);
    json::set_string(accepted, "kind", "", allocator);
    json::set(status, "acceptedNames", std::move(accepted), allocator);
    Value stored(rapidjson::kArrayType);
    if (const Value* versions = json::find_path(object, {"spec", "versions"});
        versions != nullptr && versions->IsArray()) {
      for (const auto& version : versions->GetArray()) {
        const Value* storage = json::find(version, "storage");
        if (storage != nullptr && storage->IsBool() && storage->GetBool()) {
          stored.PushBack(json::make_string(string_at(version, {"name"}), allocator), allocator);
        }
      }
    }
    json::set(status, "storedVersions", std::move(stored), allocator);
    json::set(object, "status", std::move(status), allocator);
  }
  if (is(type, "batch", "jobs")) {
    // The Job controller finds its Pods by this generated selector.
    const std::string uid = string_at(object, {"metadata", "uid"});
    const std::string name = string_at(object, {"metadata", "name"});
    Value* spec = json::find(object, "spec");
    const Value* manual = spec != nullptr ? json::find(*spec, "manualSelector") : nullptr;
    if (spec != nullptr && spec->IsObject() && !(manual != nullptr && manual->IsBool() && manual->GetBool())) {
      Value selector(rapidjson::kObjectType);
      Value match(rapidjson::kObjectType);
      json::set_string(match, "batch.kubernetes.io/controller-uid", uid, allocator);
      json::set(selector, "matchLabels", std::move(match), allocator);
      json::set(*spec, "selector", std::move(selector), allocator);
      Value& template_metadata =
          json::ensure_object(json::ensure_object(*spec, "template", allocator), "metadata", allocator);
      Value& labels = json::ensure_object(template_metadata, "labels", allocator);
      json::set_string(labels, "batch.kubernetes.io/controller-uid", uid, allocator);
      json::set_string(labels, "batch.kubernetes.io/job-name", name, allocator);
      json::set_string(labels, "controller-uid", uid, allocator);
      json::set_string(labels, "job-name", name, allocator);
      Value& metadata = json::ensure_object(object, "metadata", allocator);
      const Value* own = json::find(metadata, "labels");
      if (own == nullptr || !own->IsObject() || own->ObjectEmpty()) {
        json::set(metadata, "labels", Value(labels, allocator), allocator);
      }
    }
  }
  fill_zero(object, zero_object(type), allocator);
}

}  // namespace kstate::emulator
