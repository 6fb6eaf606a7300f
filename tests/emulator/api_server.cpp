// kube-apiserver semantics over the store (see api_server.hpp). Messages, reasons
// and codes follow kube-apiserver's so clients (kstate, kubectl) see what they
// would see against a real cluster.
#include "tests/emulator/api_server.hpp"

#include <openssl/sha.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <ctime>

#include "core/encoding.hpp"
#include "tests/emulator/builtin_schema.hpp"
#include "tests/emulator/defaults.hpp"
#include "tests/emulator/field_set.hpp"
#include "tests/emulator/patch.hpp"
#include "tests/emulator/tables.hpp"
#include "tests/emulator/validation.hpp"
#include "tests/emulator/yaml_json.hpp"

namespace kstate::emulator {

struct ApiServer::Target {
  const ResourceType* type = nullptr;
  std::string namespace_name;
  std::string name;
  std::string subresource;
  std::string key() const {
    return object_key(type->group, type->plural, type->namespaced ? namespace_name : "", name);
  }
};

namespace {

using json::Allocator;
using json::Document;
using json::string_at;
using json::Value;

Response json_response(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

Response failure(int code, const std::string& reason, const std::string& message, const Value* details = nullptr) {
  return json_response(code, status_body(code, reason, message, details));
}

Document details_for(const ResourceType* type, std::string_view name, bool kind_not_plural = false) {
  Document details(rapidjson::kObjectType);
  auto& allocator = details.GetAllocator();
  if (!name.empty()) {
    json::set_string(details, "name", name, allocator);
  }
  if (type != nullptr) {
    if (!type->group.empty()) {
      json::set_string(details, "group", type->group, allocator);
    }
    json::set_string(details, "kind", kind_not_plural ? type->kind : type->plural, allocator);
  }
  return details;
}

Response not_found(const ResourceType& type, std::string_view name) {
  auto details = details_for(&type, name);
  return failure(404, "NotFound", type.qualified_plural() + " \"" + std::string(name) + "\" not found", &details);
}

Response namespace_not_found(std::string_view name) {
  Document details(rapidjson::kObjectType);
  json::set_string(details, "name", name, details.GetAllocator());
  json::set_string(details, "kind", "namespaces", details.GetAllocator());
  return failure(404, "NotFound", "namespaces \"" + std::string(name) + "\" not found", &details);
}

// An unknown resource under a served group version: a JSON Status (recording 08's notes).
Response resource_not_found() {
  Document details(rapidjson::kObjectType);
  return failure(404, "NotFound", "the server could not find the requested resource", &details);
}

// A path no handler serves (an unknown group or version, a custom resource before its
// CRD is served): Go's default 404, not a Status (recordings 08 and 60).
Response page_not_found() {
  Response response;
  response.status = 404;
  response.content_type = "text/plain; charset=utf-8";
  response.body = "404 page not found\n";
  return response;
}

// 405 and 415 carry empty details (recordings 46 and 47).
Response method_not_allowed() {
  Document details(rapidjson::kObjectType);
  return failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", &details);
}

Response unsupported_media_type() {
  Document details(rapidjson::kObjectType);
  return failure(415, "UnsupportedMediaType", "415: Unsupported Media Type", &details);
}

Response bad_request(const std::string& message) {
  return failure(400, "BadRequest", message);
}

Response invalid(const ResourceType& type, std::string_view name, const std::vector<FieldCause>& causes) {
  auto details = details_for(&type, name, true);
  auto& allocator = details.GetAllocator();
  Value list(rapidjson::kArrayType);
  std::string summary;
  for (const auto& cause : causes) {
    Value item(rapidjson::kObjectType);
    json::set_string(item, "reason", cause.reason, allocator);
    json::set_string(item, "message", cause.message, allocator);
    json::set_string(item, "field", cause.field, allocator);
    list.PushBack(std::move(item), allocator);
    summary += (summary.empty() ? "" : ", ") + cause.field + ": " + cause.message;
  }
  json::set(details, "causes", std::move(list), allocator);
  if (causes.size() > 1) {
    summary = "[" + summary + "]";
  }
  return failure(422, "Invalid", type.qualified_kind() + " \"" + std::string(name) + "\" is invalid: " + summary,
                 &details);
}

Response conflict(const ResourceType& type, std::string_view name) {
  auto details = details_for(&type, name);
  return failure(409, "Conflict",
                 "Operation cannot be fulfilled on " + type.qualified_plural() + " \"" + std::string(name) +
                     "\": the object has been modified; please apply your changes to the latest version and try again",
                 &details);
}

std::string query(const Request& request, const std::string& key) {
  auto it = request.query.find(key);
  return it == request.query.end() ? std::string() : it->second;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    auto end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) {
      segments.emplace_back(path.substr(start, end - start));
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return segments;
}

// What kube-apiserver's ETags and OpenAPI hashes look like: SHA-512, upper-case hex.
std::string sha512_hex(std::string_view data) {
  unsigned char digest[SHA512_DIGEST_LENGTH];
  SHA512(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char byte : digest) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

Value* find_mutable(Value& object, std::initializer_list<std::string_view> path) {
  Value* current = &object;
  for (auto key : path) {
    current = json::find(*current, key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

// Everything but metadata and status: a change here bumps metadata.generation.
bool spec_changed(const Value& old_object, const Value& new_object) {
  auto strip = [](const Value& object) {
    Document copy = json::copy(object);
    copy.RemoveMember("metadata");
    copy.RemoveMember("status");
    return copy;
  };
  return strip(old_object) != strip(new_object);
}

bool tracks_generation(const ResourceType& type) {
  if (type.custom) {
    return true;
  }
  if (type.group.empty() || type.group == "coordination.k8s.io") {
    return false;
  }
  return std::find(type.top_level_fields.begin(), type.top_level_fields.end(), "spec") != type.top_level_fields.end();
}

bool is_write(std::string_view verb) {
  return verb != "get" && verb != "list" && verb != "watch";
}

bool accepts(std::string_view accept, std::string_view needle) {
  return accept.find(needle) != std::string_view::npos;
}

}  // namespace

std::string status_body(int code, const std::string& reason, const std::string& message, const Value* details) {
  Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set_string(doc, "kind", "Status", allocator);
  json::set_string(doc, "apiVersion", "v1", allocator);
  json::set(doc, "metadata", Value(rapidjson::kObjectType), allocator);
  json::set_string(doc, "status", code < 400 ? "Success" : "Failure", allocator);
  json::set_string(doc, "message", message, allocator);
  if (!reason.empty()) {
    json::set_string(doc, "reason", reason, allocator);
  }
  if (details != nullptr && details->IsObject()) {
    json::set(doc, "details", Value(*details, allocator), allocator);
  }
  json::set(doc, "code", Value(code), allocator);
  return json::dump(doc);
}

ApiServer::ApiServer(Options options, Clock clock, std::uint64_t seed)
    : options_(std::move(options)), clock_(std::move(clock)), random_(seed), controllers_(*this, options_.controllers) {
  // The namespaces every cluster starts with.
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    Document ns(rapidjson::kObjectType);
    auto& allocator = ns.GetAllocator();
    json::set_string(ns, "apiVersion", "v1", allocator);
    json::set_string(ns, "kind", "Namespace", allocator);
    Value& metadata = json::ensure_object(ns, "metadata", allocator);
    json::set_string(metadata, "name", name, allocator);
    json::set_string(metadata, "uid", new_uid(), allocator);
    json::set_string(metadata, "creationTimestamp", now_rfc3339(), allocator);
    json::set_string(json::ensure_object(metadata, "labels", allocator), "kubernetes.io/metadata.name", name,
                     allocator);
    Value finalizers(rapidjson::kArrayType);
    finalizers.PushBack(json::make_string("kubernetes", allocator), allocator);
    json::set(json::ensure_object(ns, "spec", allocator), "finalizers", std::move(finalizers), allocator);
    json::set_string(json::ensure_object(ns, "status", allocator), "phase", "Active", allocator);
    json::set_string(metadata, "resourceVersion", std::to_string(store_.next_version()), allocator);
    store_.put(object_key("", "namespaces", "", name), std::make_shared<const Document>(std::move(ns)), "ADDED");
  }
  controllers_.run(clock_());
}

Response ApiServer::controller_request(const std::string& method, const std::string& target, const std::string& body,
                                       const std::string& component) {
  Request request;
  request.method = method;
  auto question = target.find('?');
  request.path = target.substr(0, question);
  if (question != std::string::npos) {
    std::string_view rest = std::string_view(target).substr(question + 1);
    while (!rest.empty()) {
      auto amp = rest.find('&');
      auto part = rest.substr(0, amp);
      auto eq = part.find('=');
      request.query[std::string(part.substr(0, eq))] =
          eq == std::string_view::npos ? "" : std::string(part.substr(eq + 1));
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
  }
  request.accept = "application/json";
  request.content_type = "application/json";
  request.user_agent = component + "/v" + options_.version + ".0 (linux/amd64) kubernetes/0000000";
  request.identity = Identity{true, "system:" + component, {"system:authenticated"}, true};
  request.body = body;
  return route(request);
}

void ApiServer::serve_crd(const Value& crd) {
  catalog_.set_custom(string_at(crd, {"metadata", "name"}), types_of_crd(crd));
}

void ApiServer::stop_serving_crd(const std::string& crd_name) {
  catalog_.remove_custom(crd_name);
  crd_established_at_.erase(crd_name);
}

const ResourceType* ApiServer::type_of_key(const std::string& key) const {
  auto first = key.find('/');
  auto second = key.find('/', first + 1);
  std::string_view group(key.data(), first);
  std::string_view plural(key.data() + first + 1, second - first - 1);
  for (const auto* type : catalog_.all()) {
    if (type->group == group && type->plural == plural) {
      return type;
    }
  }
  return nullptr;
}

std::string ApiServer::now_rfc3339() const {
  std::time_t seconds = std::chrono::system_clock::to_time_t(clock_());
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string ApiServer::new_uid() {
  std::uniform_int_distribution<int> digit(0, 15);
  static const char* hex = "0123456789abcdef";
  std::string uid = "xxxxxxxx-xxxx-4xxx-axxx-xxxxxxxxxxxx";
  for (auto& c : uid) {
    if (c == 'x') {
      c = hex[digit(random_)];
    }
  }
  return uid;
}

std::string ApiServer::random_suffix() {
  // The alphabet kube-apiserver's name generator uses (no vowels, no look-alikes).
  static const std::string alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string suffix;
  for (int i = 0; i < 5; ++i) {
    suffix += alphabet[pick(random_)];
  }
  return suffix;
}

std::string ApiServer::allocate_cluster_ip() {
  // 10.96.0.0/12 like kubeadm's default service range; .1 is the kubernetes Service.
  while (true) {
    std::uint32_t n = next_cluster_ip_++;
    std::string ip = "10.96." + std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255);
    if ((n & 255) == 0 || (n & 255) == 255) {
      continue;
    }
    bool used = false;
    for (const auto& [key, object] : store_.range(collection_prefix("", "services"))) {
      used = used || string_at(*object, {"spec", "clusterIP"}) == ip;
    }
    if (!used) {
      return ip;
    }
  }
}

void ApiServer::allocate_service_addresses(Value& service, Allocator& allocator, bool dry_run) {
  Value& spec = json::ensure_object(service, "spec", allocator);
  const std::string type = string_at(spec, {"type"});
  if (type == "ExternalName") {
    return;
  }
  std::string ip = string_at(spec, {"clusterIP"});
  if (ip.empty()) {
    const auto reserved = next_cluster_ip_;
    ip = allocate_cluster_ip();
    if (dry_run) {
      next_cluster_ip_ = reserved;  // a dry run must not consume the address
    }
    json::set_string(spec, "clusterIP", ip, allocator);
  }
  if (json::find(spec, "clusterIPs") == nullptr) {
    Value ips(rapidjson::kArrayType);
    ips.PushBack(json::make_string(ip, allocator), allocator);
    json::set(spec, "clusterIPs", std::move(ips), allocator);
  }
  if (json::find(spec, "ipFamilies") == nullptr) {
    Value families(rapidjson::kArrayType);
    families.PushBack(json::make_string("IPv4", allocator), allocator);
    json::set(spec, "ipFamilies", std::move(families), allocator);
  }
  if (json::find(spec, "ipFamilyPolicy") == nullptr) {
    json::set_string(spec, "ipFamilyPolicy", "SingleStack", allocator);
  }
  if (type == "NodePort" || type == "LoadBalancer") {
    if (Value* ports = json::find(spec, "ports"); ports != nullptr && ports->IsArray()) {
      for (auto& port : ports->GetArray()) {
        if (json::find(port, "nodePort") == nullptr) {
          json::set(port, "nodePort", Value(static_cast<int>(dry_run ? next_node_port_ : next_node_port_++)),
                    allocator);
        }
      }
    }
  }
}

// ---- entry point ------------------------------------------------------------------

Response ApiServer::handle(const Request& request) {
  Response response = route(request);
  controllers_.run(clock_());
  return response;
}

Response ApiServer::route(const Request& request) {
  const std::string& path = request.path;
  if (path == "/healthz" || path == "/livez" || path == "/readyz") {
    Response response = json_response(200, "ok");
    response.content_type = "text/plain; charset=utf-8";
    response.verb = "health";
    return response;
  }
  if (path == "/version" || path == "/version/") {
    auto dot = options_.version.find('.');
    std::string major = options_.version.substr(0, dot);
    std::string minor = dot == std::string::npos ? "0" : options_.version.substr(dot + 1);
    Document doc(rapidjson::kObjectType);
    auto& allocator = doc.GetAllocator();
    json::set_string(doc, "major", major, allocator);
    json::set_string(doc, "minor", minor, allocator);
    json::set_string(doc, "gitVersion", "v" + options_.version + ".0", allocator);
    json::set_string(doc, "gitCommit", "0000000000000000000000000000000000000000", allocator);
    json::set_string(doc, "gitTreeState", "clean", allocator);
    json::set_string(doc, "buildDate", "2024-08-13T07:28:49Z", allocator);
    json::set_string(doc, "goVersion", "go1.22.5", allocator);
    json::set_string(doc, "compiler", "gc", allocator);
    json::set_string(doc, "platform", "linux/amd64", allocator);
    Response response = json_response(200, json::dump(doc));
    response.verb = "discovery";
    return response;
  }
  if (!request.identity.authenticated) {
    Response response = failure(401, "Unauthorized", "Unauthorized");
    response.verb = "unauthenticated";
    return response;
  }
  auto segments = split_path(path);
  if (segments.empty()) {
    Response response = json_response(
        200, R"({"paths":["/api","/api/v1","/apis","/healthz","/livez","/openapi/v3","/readyz","/version"]})");
    response.verb = "discovery";
    return response;
  }
  if (segments[0] == "openapi") {
    Response response = openapi(segments);
    response.verb = "discovery";
    return response;
  }
  bool core = segments[0] == "api";
  if (!core && segments[0] != "apis") {
    return page_not_found();
  }
  size_t prefix_length = core ? 2 : 3;
  if (segments.size() < prefix_length) {
    Response response = discovery(request, segments);
    response.verb = "discovery";
    return response;
  }
  std::string group = core ? "" : segments[1];
  std::string version = core ? segments[1] : segments[2];
  {
    auto served = catalog_.versions_of(group);
    if (std::find(served.begin(), served.end(), version) == served.end()) {
      return page_not_found();
    }
  }
  std::vector<std::string> rest(segments.begin() + static_cast<long>(prefix_length), segments.end());
  if (rest.empty()) {
    Response response = discovery(request, segments);
    response.verb = "discovery";
    return response;
  }
  Target target;
  std::string plural;
  if (rest[0] == "namespaces" && rest.size() >= 3 &&
      !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
    target.namespace_name = rest[1];
    plural = rest[2];
    if (rest.size() >= 4) {
      target.name = rest[3];
    }
    if (rest.size() >= 5) {
      target.subresource = rest[4];
    }
    if (rest.size() > 5) {
      return resource_not_found();
    }
  } else {
    plural = rest[0];
    if (rest.size() >= 2) {
      target.name = rest[1];
    }
    if (rest.size() >= 3) {
      target.subresource = rest[2];
    }
    if (rest.size() > 3) {
      return resource_not_found();
    }
  }
  target.type = catalog_.find(group, version, plural);
  if (target.type == nullptr) {
    return resource_not_found();
  }
  if (!target.type->namespaced && !target.namespace_name.empty()) {
    return resource_not_found();
  }
  if (target.type->namespaced && target.namespace_name.empty() && !target.name.empty()) {
    return resource_not_found();
  }
  if (!target.subresource.empty() && !(target.subresource == "status" && target.type->has_status) &&
      !(target.subresource == "scale" && target.type->has_scale) &&
      !(target.subresource == "finalize" && target.type->plural == "namespaces" && target.type->group.empty())) {
    return resource_not_found();
  }
  return serve_resource(request, target);
}

Response ApiServer::serve_resource(const Request& request, Target& target) {
  const ResourceType& type = *target.type;
  std::string verb;
  bool collection = target.name.empty();
  std::string watch_param = query(request, "watch");
  if (request.method == "GET") {
    verb = collection ? (watch_param == "true" || watch_param == "1" ? "watch" : "list") : "get";
  } else if (request.method == "POST" && collection) {
    verb = "create";
  } else if (request.method == "PUT" && !collection) {
    verb = "update";
  } else if (request.method == "PATCH" && !collection) {
    verb = "patch";
  } else if (request.method == "DELETE") {
    verb = collection ? "deletecollection" : "delete";
  } else {
    Response response = method_not_allowed();
    response.verb = "unknown";
    return response;
  }
  auto respond = [&](Response response) {
    response.verb = verb;
    return response;
  };
  // A user without any grant may do nothing; one with read grants (access.hpp) reads only those.
  const bool allowed =
      request.identity.may_read && (verb != "watch" || request.identity.may_watch) &&
      (is_write(verb) ? request.identity.may_write : may_read(options_.read_grants, request.identity.user, type));
  if (!allowed) {
    auto details = details_for(&type, target.name);
    std::string subject = type.qualified_plural() + (target.name.empty() ? "" : " \"" + target.name + "\"");
    std::string scope = type.namespaced && !target.namespace_name.empty()
                            ? " in the namespace \"" + target.namespace_name + "\""
                            : " at the cluster scope";
    std::string resource = type.plural + (target.subresource.empty() ? "" : "/" + target.subresource);
    return respond(failure(403, "Forbidden",
                           subject + " is forbidden: User \"" + request.identity.user + "\" cannot " + verb +
                               " resource \"" + resource + "\" in API group \"" + type.group + "\"" + scope,
                           &details));
  }
  if (std::find(type.verbs.begin(), type.verbs.end(), verb) == type.verbs.end()) {
    return respond(method_not_allowed());
  }
  if (type.namespaced && target.namespace_name.empty() && (verb == "create" || verb == "deletecollection")) {
    return respond(resource_not_found());
  }
  std::string dry_run = query(request, "dryRun");
  if (!dry_run.empty() && dry_run != "All") {
    return respond(bad_request("dryRun: Unsupported value: \"" + dry_run + "\": supported values: \"All\""));
  }
  std::string validation = query(request, "fieldValidation");
  if (!validation.empty() && validation != "Strict" && validation != "Warn" && validation != "Ignore") {
    return respond(bad_request("fieldValidation: Unsupported value: \"" + validation +
                               "\": supported values: \"Ignore\", \"Strict\", \"Warn\""));
  }
  if (target.subresource == "scale") {
    return respond(scale_subresource(request, target));
  }
  if (verb == "get") {
    return respond(get_object(request, target));
  }
  if (verb == "list") {
    return respond(list_objects(request, target));
  }
  if (verb == "watch") {
    return respond(start_watch(request, target));
  }
  if (verb == "delete") {
    return respond(delete_object(request, target));
  }
  if (verb == "deletecollection") {
    return respond(delete_collection(request, target));
  }
  if (verb == "patch") {
    return respond(patch_object(request, target));
  }
  auto body = parse_json_or_yaml(request.body);
  if (!body || !body->IsObject()) {
    return respond(bad_request(body ? "the request body must be a JSON object" : body.error().message));
  }
  if (verb == "create") {
    return respond(create_object(request, target, std::move(*body), false));
  }
  return respond(update_object(request, target, std::move(*body)));
}

// ---- discovery ------------------------------------------------------------------

namespace {

Value string_array(const std::vector<std::string>& items, Allocator& allocator) {
  Value array(rapidjson::kArrayType);
  for (const auto& item : items) {
    array.PushBack(json::make_string(item, allocator), allocator);
  }
  return array;
}

// kube-apiserver's StorageVersionHash: base64 of the first 8 bytes of sha256("<group>/<version>/<kind>").
std::string storage_version_hash(const ResourceType& type) {
  const std::string text = type.group + "/" + type.version + "/" + type.kind;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return encoding::base64_encode(std::string_view(reinterpret_cast<const char*>(digest), 8));
}

// A legacy APIResourceList's entries: the resource, then its subresources side by side (recording 07).
void add_resource_entries(Value& resources, const ResourceType& type, Allocator& allocator) {
  Value entry(rapidjson::kObjectType);
  json::set_string(entry, "name", type.plural, allocator);
  json::set_string(entry, "singularName", type.singular, allocator);
  json::set(entry, "namespaced", Value(type.namespaced), allocator);
  json::set_string(entry, "kind", type.kind, allocator);
  json::set(entry, "verbs", string_array(type.verbs, allocator), allocator);
  if (!type.short_names.empty()) {
    json::set(entry, "shortNames", string_array(type.short_names, allocator), allocator);
  }
  if (!type.categories.empty()) {
    json::set(entry, "categories", string_array(type.categories, allocator), allocator);
  }
  if (type.stored) {
    json::set_string(entry, "storageVersionHash", storage_version_hash(type), allocator);
  }
  resources.PushBack(std::move(entry), allocator);
  for (const auto& subresource : type.subresources) {
    Value sub(rapidjson::kObjectType);
    json::set_string(sub, "name", type.plural + "/" + subresource.name, allocator);
    json::set_string(sub, "singularName", "", allocator);
    json::set(sub, "namespaced", Value(type.namespaced), allocator);
    if (!subresource.group.empty()) {
      json::set_string(sub, "group", subresource.group, allocator);
      json::set_string(sub, "version", subresource.version, allocator);
    }
    json::set_string(sub, "kind", subresource.kind, allocator);
    json::set(sub, "verbs", string_array(subresource.verbs, allocator), allocator);
    resources.PushBack(std::move(sub), allocator);
  }
}

// An aggregated discovery entry. Built-in kinds answer with their own group version,
// which the document leaves empty; custom resources name theirs (recordings 04, 63).
Value aggregated_resource(const ResourceType& type, Allocator& allocator) {
  auto response_kind = [&](const std::string& group, const std::string& version, const std::string& kind) {
    Value value(rapidjson::kObjectType);
    json::set_string(value, "group", group, allocator);
    json::set_string(value, "version", version, allocator);
    json::set_string(value, "kind", kind, allocator);
    return value;
  };
  Value entry(rapidjson::kObjectType);
  json::set_string(entry, "resource", type.plural, allocator);
  json::set(entry, "responseKind",
            type.custom ? response_kind(type.group, type.version, type.kind) : response_kind("", "", type.kind),
            allocator);
  json::set_string(entry, "scope", type.namespaced ? "Namespaced" : "Cluster", allocator);
  json::set_string(entry, "singularResource", type.singular, allocator);
  json::set(entry, "verbs", string_array(type.verbs, allocator), allocator);
  if (!type.short_names.empty()) {
    json::set(entry, "shortNames", string_array(type.short_names, allocator), allocator);
  }
  if (!type.categories.empty()) {
    json::set(entry, "categories", string_array(type.categories, allocator), allocator);
  }
  Value subresources(rapidjson::kArrayType);
  for (const auto& subresource : type.subresources) {
    Value sub(rapidjson::kObjectType);
    json::set_string(sub, "subresource", subresource.name, allocator);
    json::set(sub, "responseKind", response_kind(subresource.group, subresource.version, subresource.kind), allocator);
    json::set(sub, "verbs", string_array(subresource.verbs, allocator), allocator);
    subresources.PushBack(std::move(sub), allocator);
  }
  if (!subresources.Empty()) {
    json::set(entry, "subresources", std::move(subresources), allocator);
  }
  return entry;
}

// Which discovery document the Accept header asks for: "v2", "v2beta1" or "" (legacy).
std::string aggregated_version(std::string_view accept) {
  size_t start = 0;
  while (start < accept.size()) {
    auto comma = accept.find(',', start);
    auto part = accept.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool aggregated = part.find("as=APIGroupDiscoveryList") != std::string_view::npos &&
                      part.find("g=apidiscovery.k8s.io") != std::string_view::npos;
    if (aggregated && part.find("v=v2beta1") != std::string_view::npos) {
      return "v2beta1";
    }
    if (aggregated && part.find("v=v2") != std::string_view::npos) {
      return "v2";
    }
    if (!aggregated &&
        (part.find("application/json") != std::string_view::npos || part.find("*/*") != std::string_view::npos)) {
      return "";
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return "";
}

// Whether an Accept header allows a plain JSON answer (a media range without the
// aggregated discovery parameters, or none at all).
bool accepts_legacy_json(std::string_view accept) {
  if (accept.empty()) {
    return true;
  }
  size_t start = 0;
  while (start < accept.size()) {
    auto comma = accept.find(',', start);
    auto part = accept.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool plain = part.find("g=apidiscovery.k8s.io") == std::string_view::npos;
    if (plain && (part.find("application/json") != std::string_view::npos ||
                  part.find("*/*") != std::string_view::npos || part.find("application/*") != std::string_view::npos)) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return false;
}

}  // namespace

// OpenAPI v3: per group-version documents listing each resource's PATCH
// operation with its query parameters, which is how kubectl decides that the
// server supports fieldValidation (and then leaves validation to the server).
// No schemas: kubectl falls back to its compiled-in types for patches.
Response ApiServer::openapi(const std::vector<std::string>& segments) const {
  auto group_versions = [&] {
    std::vector<std::pair<std::string, std::string>> result;
    for (const auto* type : catalog_.all()) {
      std::pair<std::string, std::string> gv{type->group, type->version};
      if (std::find(result.begin(), result.end(), gv) == result.end()) {
        result.push_back(gv);
      }
    }
    return result;
  };
  auto gv_path = [](const std::string& group, const std::string& version) {
    return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
  };
  // Every document starts with the OpenAPI version and the server's.
  auto new_document = [&] {
    Document doc(rapidjson::kObjectType);
    auto& allocator = doc.GetAllocator();
    json::set_string(doc, "openapi", "3.0.0", allocator);
    Value info(rapidjson::kObjectType);
    json::set_string(info, "title", "Kubernetes", allocator);
    json::set_string(info, "version", "v" + options_.version + ".0", allocator);
    json::set(doc, "info", std::move(info), allocator);
    return doc;
  };
  auto gv_document = [&](const std::string& group, const std::string& version) {
    Document doc = new_document();
    auto& allocator = doc.GetAllocator();
    Value paths(rapidjson::kObjectType);
    for (const auto* type : catalog_.all()) {
      if (type->group != group || type->version != version) {
        continue;
      }
      std::string path = "/" + gv_path(group, version) + (type->namespaced ? "/namespaces/{namespace}/" : "/") +
                         type->plural + "/{name}";
      Value operation(rapidjson::kObjectType);
      json::set_string(operation, "operationId", "patch" + type->kind, allocator);
      Value parameters(rapidjson::kArrayType);
      for (const char* name : {"dryRun", "fieldManager", "fieldValidation", "force"}) {
        Value parameter(rapidjson::kObjectType);
        json::set_string(parameter, "name", name, allocator);
        json::set_string(parameter, "in", "query", allocator);
        Value schema(rapidjson::kObjectType);
        json::set_string(schema, "type", std::string_view(name) == "force" ? "boolean" : "string", allocator);
        json::set(parameter, "schema", std::move(schema), allocator);
        parameters.PushBack(std::move(parameter), allocator);
      }
      json::set(operation, "parameters", std::move(parameters), allocator);
      Value responses(rapidjson::kObjectType);
      Value ok(rapidjson::kObjectType);
      json::set_string(ok, "description", "OK", allocator);
      json::set(responses, "200", std::move(ok), allocator);
      json::set(operation, "responses", std::move(responses), allocator);
      json::set_string(operation, "x-kubernetes-action", "patch", allocator);
      Value gvk(rapidjson::kObjectType);
      json::set_string(gvk, "group", type->group, allocator);
      json::set_string(gvk, "version", type->version, allocator);
      json::set_string(gvk, "kind", type->kind, allocator);
      json::set(operation, "x-kubernetes-group-version-kind", std::move(gvk), allocator);
      Value item(rapidjson::kObjectType);
      json::set(item, "patch", std::move(operation), allocator);
      json::set(paths, path, std::move(item), allocator);
    }
    json::set(doc, "paths", std::move(paths), allocator);
    Value components(rapidjson::kObjectType);
    Value schemas(rapidjson::kObjectType);
    if (options_.openapi_schemas) {
      std::vector<const ResourceType*> served;
      for (const auto* type : catalog_.all()) {
        if (type->group == group && type->version == version) {
          served.push_back(type);
        }
      }
      add_openapi_schemas(served, schemas, allocator);
    }
    json::set(components, "schemas", std::move(schemas), allocator);
    json::set(doc, "components", std::move(components), allocator);
    return json::dump(doc);
  };
  // The discovery paths ("api", "apis", "apis/<group>") have documents too, without
  // operations here.
  auto discovery_document_for = [&](const std::string& path) {
    Document doc = new_document();
    auto& allocator = doc.GetAllocator();
    Value paths(rapidjson::kObjectType);
    json::set(paths, "/" + path + "/", Value(rapidjson::kObjectType), allocator);
    json::set(doc, "paths", std::move(paths), allocator);
    return json::dump(doc);
  };
  std::vector<std::string> discovery_paths = {"api", "apis"};
  for (const auto& group : catalog_.groups()) {
    if (!group.empty()) {
      discovery_paths.push_back("apis/" + group);
    }
  }
  if (segments.size() == 2 && segments[1] == "v3") {
    Document doc(rapidjson::kObjectType);
    auto& allocator = doc.GetAllocator();
    Value paths(rapidjson::kObjectType);
    for (const auto& path : discovery_paths) {
      Value entry(rapidjson::kObjectType);
      json::set_string(entry, "serverRelativeURL",
                       "/openapi/v3/" + path + "?hash=" + sha512_hex(discovery_document_for(path)), allocator);
      json::set(paths, path, std::move(entry), allocator);
    }
    for (const auto& [group, version] : group_versions()) {
      Value entry(rapidjson::kObjectType);
      std::string hash = sha512_hex(gv_document(group, version));
      json::set_string(entry, "serverRelativeURL", "/openapi/v3/" + gv_path(group, version) + "?hash=" + hash,
                       allocator);
      json::set(paths, gv_path(group, version), std::move(entry), allocator);
    }
    json::set(doc, "paths", std::move(paths), allocator);
    // The index is JSON, but kube-apiserver labels it text/plain (recording 09).
    Response response = json_response(200, json::dump(doc));
    response.content_type = "text/plain; charset=utf-8";
    return response;
  }
  if (segments.size() >= 3 && segments[1] == "v3") {
    std::string path = segments[2] + (segments.size() == 4 && segments[2] == "apis" ? "/" + segments[3] : "");
    if ((segments.size() == 3 || (segments.size() == 4 && segments[2] == "apis")) &&
        std::find(discovery_paths.begin(), discovery_paths.end(), path) != discovery_paths.end()) {
      return json_response(200, discovery_document_for(path));
    }
  }
  if (segments.size() >= 4 && segments[1] == "v3") {
    bool core = segments[2] == "api";
    std::string group = core ? "" : segments[3];
    std::string version = core ? segments[3] : (segments.size() >= 5 ? segments[4] : "");
    for (const auto& [known_group, known_version] : group_versions()) {
      if (known_group == group && known_version == version) {
        return json_response(200, gv_document(group, version));
      }
    }
  }
  return page_not_found();
}

std::string ApiServer::discovery_document(bool aggregated_core, const std::string& version) const {
  Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set_string(doc, "kind", "APIGroupDiscoveryList", allocator);
  json::set_string(doc, "apiVersion", "apidiscovery.k8s.io/" + version, allocator);
  json::set(doc, "metadata", Value(rapidjson::kObjectType), allocator);
  Value items(rapidjson::kArrayType);
  for (const auto& group : catalog_.groups()) {
    if (group.empty() != aggregated_core) {
      continue;
    }
    Value item(rapidjson::kObjectType);
    Value metadata(rapidjson::kObjectType);
    if (!group.empty()) {
      json::set_string(metadata, "name", group, allocator);
    }
    json::set(metadata, "creationTimestamp", Value(), allocator);
    json::set(item, "metadata", std::move(metadata), allocator);
    Value versions(rapidjson::kArrayType);
    for (const auto& group_version : catalog_.versions_of(group)) {
      Value entry(rapidjson::kObjectType);
      json::set_string(entry, "version", group_version, allocator);
      Value resources(rapidjson::kArrayType);
      for (const auto* type : catalog_.all()) {
        if (type->group == group && type->version == group_version) {
          resources.PushBack(aggregated_resource(*type, allocator), allocator);
        }
      }
      json::set(entry, "resources", std::move(resources), allocator);
      json::set_string(entry, "freshness", "Current", allocator);
      versions.PushBack(std::move(entry), allocator);
    }
    json::set(item, "versions", std::move(versions), allocator);
    items.PushBack(std::move(item), allocator);
  }
  json::set(doc, "items", std::move(items), allocator);
  return json::dump(doc);
}

Response ApiServer::discovery(const Request& request, const std::vector<std::string>& segments) {
  bool core = segments[0] == "api";
  if (segments.size() == 1) {
    std::string aggregated = aggregated_version(request.accept);
    if (!options_.aggregated_discovery && !aggregated.empty()) {
      // An old server does not know the aggregated media types: it serves legacy JSON
      // when the Accept header also allows that, and 406 when it does not.
      aggregated.clear();
      if (!accepts_legacy_json(request.accept)) {
        return json_response(406, status_body(406, "NotAcceptable",
                                              "only the following media types are accepted: application/json, "
                                              "application/yaml, application/vnd.kubernetes.protobuf"));
      }
    }
    if (!aggregated.empty()) {
      Response response = json_response(200, discovery_document(core, aggregated));
      response.content_type = "application/json;g=apidiscovery.k8s.io;v=" + aggregated + ";as=APIGroupDiscoveryList";
      std::string etag = "\"" + sha512_hex(response.body) + "\"";
      response.headers.emplace_back("Etag", etag);  // (Go spells it so)
      response.headers.emplace_back("Vary", "Accept");
      response.cache_control = "public";
      if (!request.if_none_match.empty() && request.if_none_match == etag) {
        response.status = 304;
        response.body.clear();
      }
      return response;
    }
    Document doc(rapidjson::kObjectType);
    auto& allocator = doc.GetAllocator();
    if (core) {
      json::set_string(doc, "kind", "APIVersions", allocator);
      Value versions(rapidjson::kArrayType);
      versions.PushBack(Value("v1"), allocator);
      json::set(doc, "versions", std::move(versions), allocator);
      Value addresses(rapidjson::kArrayType);
      Value address(rapidjson::kObjectType);
      json::set_string(address, "clientCIDR", "0.0.0.0/0", allocator);
      json::set_string(address, "serverAddress", options_.server_address, allocator);
      addresses.PushBack(std::move(address), allocator);
      json::set(doc, "serverAddressByClientCIDRs", std::move(addresses), allocator);
      return json_response(200, json::dump(doc));
    }
    json::set_string(doc, "kind", "APIGroupList", allocator);
    json::set_string(doc, "apiVersion", "v1", allocator);
    Value groups(rapidjson::kArrayType);
    for (const auto& group : catalog_.groups()) {
      if (group.empty()) {
        continue;
      }
      Value item(rapidjson::kObjectType);
      json::set_string(item, "name", group, allocator);
      Value versions(rapidjson::kArrayType);
      auto group_versions = catalog_.versions_of(group);
      for (const auto& version : group_versions) {
        Value entry(rapidjson::kObjectType);
        json::set_string(entry, "groupVersion", group + "/" + version, allocator);
        json::set_string(entry, "version", version, allocator);
        versions.PushBack(std::move(entry), allocator);
      }
      json::set(item, "versions", std::move(versions), allocator);
      Value preferred(rapidjson::kObjectType);
      json::set_string(preferred, "groupVersion", group + "/" + group_versions.front(), allocator);
      json::set_string(preferred, "version", group_versions.front(), allocator);
      json::set(item, "preferredVersion", std::move(preferred), allocator);
      groups.PushBack(std::move(item), allocator);
    }
    json::set(doc, "groups", std::move(groups), allocator);
    return json_response(200, json::dump(doc));
  }
  std::string group = core ? "" : segments[1];
  auto group_versions = catalog_.versions_of(group);
  if (group_versions.empty()) {
    return page_not_found();
  }
  Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  if (!core && segments.size() == 2) {
    json::set_string(doc, "kind", "APIGroup", allocator);
    json::set_string(doc, "apiVersion", "v1", allocator);
    json::set_string(doc, "name", group, allocator);
    Value versions(rapidjson::kArrayType);
    for (const auto& version : group_versions) {
      Value entry(rapidjson::kObjectType);
      json::set_string(entry, "groupVersion", group + "/" + version, allocator);
      json::set_string(entry, "version", version, allocator);
      versions.PushBack(std::move(entry), allocator);
    }
    json::set(doc, "versions", std::move(versions), allocator);
    Value preferred(rapidjson::kObjectType);
    json::set_string(preferred, "groupVersion", group + "/" + group_versions.front(), allocator);
    json::set_string(preferred, "version", group_versions.front(), allocator);
    json::set(doc, "preferredVersion", std::move(preferred), allocator);
    return json_response(200, json::dump(doc));
  }
  std::string version = core ? segments[1] : segments[2];
  if (std::find(group_versions.begin(), group_versions.end(), version) == group_versions.end()) {
    return page_not_found();
  }
  json::set_string(doc, "kind", "APIResourceList", allocator);
  json::set_string(doc, "apiVersion", "v1", allocator);
  json::set_string(doc, "groupVersion", group.empty() ? version : group + "/" + version, allocator);
  Value resources(rapidjson::kArrayType);
  for (const auto* type : catalog_.all()) {
    if (type->group == group && type->version == version) {
      add_resource_entries(resources, *type, allocator);
    }
  }
  json::set(doc, "resources", std::move(resources), allocator);
  return json_response(200, json::dump(doc));
}

// ---- reads --------------------------------------------------------------------------

namespace {

Value partial_metadata(const Value& object, Allocator& allocator) {
  Value partial(rapidjson::kObjectType);
  json::set_string(partial, "kind", "PartialObjectMetadata", allocator);
  json::set_string(partial, "apiVersion", "meta.k8s.io/v1", allocator);
  if (const Value* metadata = json::find(object, "metadata"); metadata != nullptr) {
    json::set(partial, "metadata", Value(*metadata, allocator), allocator);
  }
  return partial;
}

}  // namespace

Response ApiServer::get_object(const Request& request, const Target& target) {
  auto object = store_.get(target.key());
  if (!object) {
    return not_found(*target.type, target.name);
  }
  // kubectl prints a single object without a Table: it is served as itself, or as its
  // PartialObjectMetadata when asked (the Content-Type stays application/json, as for Tables).
  if (accepts(request.accept, "as=PartialObjectMetadata")) {
    Document partial;
    partial.CopyFrom(partial_metadata(*object, partial.GetAllocator()), partial.GetAllocator());
    return json_response(200, json::dump(partial));
  }
  return json_response(200, serialized(object));
}

const std::string& ApiServer::serialized(const ObjectPtr& object) {
  auto found = serialized_.find(object.get());
  if (found != serialized_.end() && found->second.object.lock() == object) {
    return found->second.json;
  }
  if (serialized_.size() > 2 * store_.all().size() + 1024) {
    std::erase_if(serialized_, [](const auto& entry) { return entry.second.object.expired(); });
  }
  auto& entry = serialized_[object.get()];
  entry.object = object;
  entry.json = json::dump(*object);
  return entry.json;
}

namespace {

// The object without its kind and apiVersion, written member by member (no copy).
std::string without_type_meta(const Value& object) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  for (const auto& member : object.GetObject()) {
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    if (name == "kind" || name == "apiVersion") {
      continue;
    }
    writer.Key(member.name.GetString(), member.name.GetStringLength());
    member.value.Accept(writer);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

const std::string& ApiServer::serialized_item(const ObjectPtr& object, const ResourceType& type) {
  const std::string& full = serialized(object);
  if (type.custom) {
    return full;
  }
  auto& entry = serialized_[object.get()];
  if (entry.item_json.empty()) {
    entry.item_json = without_type_meta(*object);
  }
  return entry.item_json;
}

Response ApiServer::list_objects(const Request& request, const Target& target) {
  const ResourceType& type = *target.type;
  auto labels = parse_label_selector(query(request, "labelSelector"));
  if (!labels) {
    return bad_request(labels.error().message);
  }
  auto fields = parse_field_selector(query(request, "fieldSelector"));
  if (!fields) {
    return bad_request(fields.error().message);
  }
  long limit = 0;
  if (auto text = query(request, "limit"); !text.empty()) {
    limit = std::strtol(text.c_str(), nullptr, 10);
  }
  std::string after;
  if (auto token = query(request, "continue"); !token.empty()) {
    auto decoded = encoding::base64_decode(token);
    auto parsed = decoded ? json::parse(*decoded) : Result<Document>(Error(ErrorKind::invalid, "bad token"));
    if (!parsed || json::find(*parsed, "start") == nullptr) {
      return bad_request("continue key is not valid: invalid continue token");
    }
    after = string_at(*parsed, {"start"});
  }
  std::string prefix = collection_prefix(type.group, type.plural);
  if (type.namespaced && !target.namespace_name.empty()) {
    prefix += target.namespace_name + "/";
  }
  std::string version = std::to_string(store_.current_version());
  std::vector<ObjectPtr> items;
  std::string last_key;
  long remaining = 0;
  for (const auto& [key, object] : store_.range(prefix, after)) {
    if (!labels->empty() && !labels->matches(*object)) {
      continue;
    }
    if (!fields->empty() &&
        !fields->matches(string_at(*object, {"metadata", "name"}), string_at(*object, {"metadata", "namespace"}))) {
      continue;
    }
    if (limit > 0 && static_cast<long>(items.size()) >= limit) {
      ++remaining;
      continue;
    }
    items.push_back(object);
    last_key = key;
  }
  std::string metadata = "{\"resourceVersion\":\"" + version + "\"";
  if (remaining > 0) {
    Document token(rapidjson::kObjectType);
    json::set_string(token, "start", last_key, token.GetAllocator());
    json::set_string(token, "rv", version, token.GetAllocator());
    metadata += ",\"continue\":\"" + encoding::base64_encode(json::dump(token)) +
                "\",\"remainingItemCount\":" + std::to_string(remaining);
  }
  if (remaining == 0 && type.custom) {
    metadata += ",\"continue\":\"\"";  // custom resource lists always carry it
  }
  metadata += "}";
  if (accepts(request.accept, "as=Table")) {
    Document table(rapidjson::kObjectType);
    auto& allocator = table.GetAllocator();
    json::set_string(table, "kind", "Table", allocator);
    json::set_string(table, "apiVersion", "meta.k8s.io/v1", allocator);
    auto meta = json::parse(metadata);
    json::set(table, "metadata", Value(*meta, allocator), allocator);
    Value columns(rapidjson::kArrayType);
    for (const auto& definition : table_columns(type)) {
      Value column(rapidjson::kObjectType);
      json::set_string(column, "name", definition.name, allocator);
      json::set_string(column, "type", definition.type, allocator);
      json::set_string(column, "format", definition.format, allocator);
      json::set_string(column, "description", definition.description, allocator);
      json::set(column, "priority", Value(definition.priority), allocator);
      columns.PushBack(std::move(column), allocator);
    }
    json::set(table, "columnDefinitions", std::move(columns), allocator);
    Value rows(rapidjson::kArrayType);
    bool include_full = query(request, "includeObject") == "Object";
    auto now = clock_();
    for (const auto& object : items) {
      Value row(rapidjson::kObjectType);
      json::set(row, "cells", table_cells(type, *object, now, allocator), allocator);
      if (query(request, "includeObject") != "None") {
        json::set(row, "object", include_full ? Value(*object, allocator) : partial_metadata(*object, allocator),
                  allocator);
      }
      rows.PushBack(std::move(row), allocator);
    }
    json::set(table, "rows", std::move(rows), allocator);
    // kind Table, but the Content-Type says only application/json (recording 54).
    return json_response(200, json::dump(table));
  }
  if (accepts(request.accept, "as=PartialObjectMetadata")) {
    // PartialObjectMetadataList: each item a PartialObjectMetadata with its kind and
    // apiVersion (handlers/response.go asPartialObjectMetadataList sets them on every item).
    std::string body =
        "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":" + metadata +
        ",\"items\":[";
    for (size_t i = 0; i < items.size(); ++i) {
      Document partial;
      partial.CopyFrom(partial_metadata(*items[i], partial.GetAllocator()), partial.GetAllocator());
      body += (i > 0 ? "," : "") + json::dump(partial);
    }
    body += "]}";
    return json_response(200, std::move(body));
  }
  std::string body = "{\"kind\":\"" + type.kind + "List\",\"apiVersion\":\"" + type.api_version() +
                     "\",\"metadata\":" + metadata + ",\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      body += ',';
    }
    body += serialized_item(items[i], type);
  }
  body += "]}";
  return json_response(200, std::move(body));
}

Response ApiServer::start_watch(const Request& request, const Target& target) {
  WatchSpec spec;
  spec.prefix = collection_prefix(target.type->group, target.type->plural);
  spec.kind = target.type->kind;
  spec.api_version = target.type->api_version();
  spec.namespace_name = target.type->namespaced ? target.namespace_name : "";
  auto labels = parse_label_selector(query(request, "labelSelector"));
  if (!labels) {
    return bad_request(labels.error().message);
  }
  auto fields = parse_field_selector(query(request, "fieldSelector"));
  if (!fields) {
    return bad_request(fields.error().message);
  }
  spec.labels = std::move(*labels);
  spec.fields = std::move(*fields);
  std::string version = query(request, "resourceVersion");
  bool send_initial = query(request, "sendInitialEvents") == "true";
  if (version.empty() || version == "0" || send_initial) {
    spec.initial_listing = true;
    spec.start_after = store_.current_version();
    spec.initial_events_end_bookmark = send_initial;
  } else {
    char* end = nullptr;
    spec.start_after = std::strtoull(version.c_str(), &end, 10);
    if (end == version.c_str() || *end != '\0') {
      return bad_request("invalid resource version \"" + version + "\"");
    }
  }
  spec.bookmarks = query(request, "allowWatchBookmarks") == "true";
  spec.metadata_only = accepts(request.accept, "as=PartialObjectMetadata");
  if (auto timeout = query(request, "timeoutSeconds"); !timeout.empty()) {
    spec.timeout_seconds = std::atoi(timeout.c_str());
  }
  Response response = json_response(200, "");
  response.watch = std::move(spec);
  return response;
}

namespace {

bool selectors_match(const WatchSpec& spec, const Value& object, const std::string& namespace_name) {
  if (!spec.labels.empty() && !spec.labels.matches(object)) {
    return false;
  }
  return spec.fields.empty() || spec.fields.matches(string_at(object, {"metadata", "name"}), namespace_name);
}

bool watch_matches(const WatchSpec& spec, const WatchEvent& event) {
  if (event.prefix != spec.prefix) {
    return false;
  }
  if (!spec.namespace_name.empty() && event.namespace_name != spec.namespace_name) {
    return false;
  }
  return selectors_match(spec, *event.object, event.namespace_name);
}

std::string watch_line(std::string_view type, const Value& object) {
  return "{\"type\":\"" + std::string(type) + "\",\"object\":" + json::dump(object) + "}\n";
}

// The line a watch sends for `event`, as kube-apiserver's watch cache decides it
// (cacher.go, convertToWatchEvent): with selectors, a change that makes an object
// match is ADDED, one that makes it stop matching is DELETED with the object as it was
// before, carrying the event's resourceVersion; nothing when it matches neither before
// nor after. Metadata-only watches send PartialObjectMetadata objects.
std::optional<std::string> watch_line_for(const WatchSpec& spec, const WatchEvent& event) {
  if (event.prefix != spec.prefix || (!spec.namespace_name.empty() && event.namespace_name != spec.namespace_name)) {
    return std::nullopt;
  }
  const bool now_matches = selectors_match(spec, *event.object, event.namespace_name);
  const bool matched_before = event.previous != nullptr && selectors_match(spec, *event.previous, event.namespace_name);
  std::string type = event.type;
  const Value* object = event.object.get();
  Document left;
  if (!now_matches) {
    if (!matched_before || event.type == "DELETED") {
      return std::nullopt;
    }
    left.CopyFrom(*event.previous, left.GetAllocator());
    if (Value* metadata = json::find(left, "metadata"); metadata != nullptr && metadata->IsObject()) {
      json::set_string(*metadata, "resourceVersion", std::to_string(event.resource_version), left.GetAllocator());
    }
    type = "DELETED";
    object = &left;
  } else if (event.type == "MODIFIED" && event.previous != nullptr && !matched_before) {
    type = "ADDED";
  }
  if (!spec.metadata_only) {
    return watch_line(type, *object);
  }
  Document partial;
  partial.CopyFrom(partial_metadata(*object, partial.GetAllocator()), partial.GetAllocator());
  return watch_line(type, partial);
}

}  // namespace

std::optional<ApiServer::WatchLines> ApiServer::watch_events(const WatchSpec& spec, std::uint64_t after) const {
  if (after < store_.oldest_watchable()) {
    return std::nullopt;
  }
  WatchLines result;
  result.last = after;
  for (const WatchEvent* event : store_.events_after(after)) {
    result.last = event->resource_version;
    if (auto line = watch_line_for(spec, *event)) {
      result.lines.push_back(std::move(*line));
    }
  }
  return result;
}

std::vector<std::string> ApiServer::initial_watch_events(const WatchSpec& spec) const {
  std::vector<std::string> lines;
  std::string prefix = spec.prefix + (spec.namespace_name.empty() ? "" : spec.namespace_name + "/");
  for (const auto& [key, object] : store_.range(prefix)) {
    WatchEvent event{0, "ADDED", spec.prefix, string_at(*object, {"metadata", "namespace"}), object, nullptr};
    if (watch_matches(spec, event)) {
      if (spec.metadata_only) {
        Document partial;
        partial.CopyFrom(partial_metadata(*object, partial.GetAllocator()), partial.GetAllocator());
        lines.push_back(watch_line("ADDED", partial));
      } else {
        lines.push_back(watch_line("ADDED", *object));
      }
    }
  }
  return lines;
}

std::string ApiServer::bookmark_line(const WatchSpec& spec, std::uint64_t version, bool initial_events_end) const {
  // An empty object of the watched kind: only the revision (and a null creationTimestamp,
  // as Go serialises an empty ObjectMeta; recording 56). The end of the initial events
  // also carries the list's "blueprint" (recording 58).
  std::string annotations;
  if (initial_events_end) {
    const std::string blueprint = "{\"kind\":\"" + spec.kind + "List\",\"apiVersion\":\"" + spec.api_version +
                                  "\",\"metadata\":{},\"items\":null}\n";
    annotations =
        ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\","
        "\"kubernetes.io/initial-events-list-blueprint\":\"" +
        encoding::base64_encode(blueprint) + "\"}";
  }
  const std::string kind = spec.metadata_only ? "PartialObjectMetadata" : spec.kind;
  const std::string api_version = spec.metadata_only ? "meta.k8s.io/v1" : spec.api_version;
  return "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"" + kind + "\",\"apiVersion\":\"" + api_version +
         "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(version) + "\",\"creationTimestamp\":null" +
         annotations + "}}}\n";
}

std::string ApiServer::expired_line(std::uint64_t requested) const {
  Document object;
  object.Parse(status_body(410, "Expired",
                           "too old resource version: " + std::to_string(requested) + " (" +
                               std::to_string(store_.oldest_watchable()) + ")"));
  return watch_line("ERROR", object);
}

// ---- writes ---------------------------------------------------------------------------

namespace {

std::string manager_of(const Request& request) {
  std::string manager = query(request, "fieldManager");
  if (!manager.empty()) {
    return manager;
  }
  auto slash = request.user_agent.find('/');
  manager = request.user_agent.substr(0, slash);
  return manager.empty() ? "unknown" : manager;
}

std::string field_validation(const Request& request) {
  std::string mode = query(request, "fieldValidation");
  return mode.empty() ? "Warn" : mode;
}

// Who a write's managedFields entry names, and how its fields are told apart.
ApplyRequest ownership_of(const ApiServer& api, const ResourceType& type, const std::string& manager,
                          const std::string& subresource, bool force = false) {
  ApplyRequest ownership;
  ownership.manager = manager;
  ownership.api_version = type.api_version();
  ownership.time = api.now_rfc3339();
  ownership.force = force;
  ownership.skip_status = type.has_status && subresource.empty();
  ownership.subresource = subresource;
  ownership.rules.custom = type.custom;
  ownership.zero_object = &zero_object(type);
  return ownership;
}

// Checks apiVersion/kind of a body against the endpoint; empty when they match.
std::optional<Response> check_type(const ResourceType& type, const Value& body) {
  auto api_version = string_at(body, {"apiVersion"});
  auto kind = string_at(body, {"kind"});
  if (kind.empty()) {
    return bad_request("Object 'Kind' is missing in '" + json::dump(body).substr(0, 200) + "'");
  }
  if (api_version.empty()) {
    return bad_request("Object 'apiVersion' is missing in '" + json::dump(body).substr(0, 200) + "'");
  }
  if (api_version != type.api_version()) {
    return bad_request("the API version in the data (" + api_version + ") does not match the expected API version (" +
                       type.api_version() + ")");
  }
  if (kind != type.kind) {
    return bad_request("the kind in the data (" + kind + ") does not match the expected kind (" + type.kind + ")");
  }
  return std::nullopt;
}

// Unknown fields per fieldValidation: Strict fails, Warn adds Warning headers, Ignore drops silently.
std::optional<Response> handle_unknown_fields(const ResourceType& type, Value& object, const std::string& mode,
                                              std::vector<std::string>& warnings,
                                              std::vector<FieldCause>& schema_causes) {
  std::vector<std::string> unknown;
  if (type.custom) {
    if (type.schema) {
      schema_causes = validate_and_prune(*type.schema, object, unknown);
    }
  } else {
    for (const auto& problem : check_builtin_fields(type, object, true)) {
      if (problem.kind == FieldProblemKind::wrong_type) {
        return bad_request(decode_error_message(type, problem.decode_message));  // whatever fieldValidation says
      }
      unknown.push_back(problem.path);
    }
  }
  if (unknown.empty() || mode == "Ignore") {
    return std::nullopt;
  }
  if (mode == "Strict") {
    std::string message = "strict decoding error: ";
    for (size_t i = 0; i < unknown.size(); ++i) {
      message += (i > 0 ? ", " : "") + std::string("unknown field \"") + unknown[i] + "\"";
    }
    return bad_request(decode_error_message(type, message));
  }
  for (const auto& field : unknown) {
    warnings.push_back("unknown field \"" + field + "\"");
  }
  return std::nullopt;
}

// What decoding a written object into the kind's Go type does: unknown fields per
// fieldValidation (for what a client wrote; a server-side apply had its schema check
// already) or a custom resource's schema, quantities and times normalised, the scheme's
// defaults. A non-empty answer refuses the write.
std::optional<Response> decode_object(const Request& request, const ResourceType& type, Value& object,
                                      Allocator& allocator, bool client_fields, std::vector<std::string>& warnings,
                                      std::vector<FieldCause>& causes) {
  if (client_fields) {
    if (auto rejected = handle_unknown_fields(type, object, field_validation(request), warnings, causes)) {
      return rejected;
    }
  } else if (type.custom && type.schema) {
    std::vector<std::string> none;
    causes = validate_and_prune(*type.schema, object, none);
  }
  if (auto undecodable = normalize_decoded(type, object, allocator)) {
    return bad_request(decode_error_message(type, *undecodable));
  }
  apply_defaults(type, object, allocator);
  return std::nullopt;
}

// What server-side apply refuses before anything else, as its errors word it:
// ".metadata.annotation: field not declared in schema", ".spec.replicas: expected
// numeric (int or float), got string".
std::vector<std::string> fields_not_in_schema(const ResourceType& type, const Value& object) {
  Document copy = json::copy(object);
  std::vector<std::string> errors;
  if (type.custom) {
    std::vector<std::string> unknown;
    if (type.schema) {
      validate_and_prune(*type.schema, copy, unknown);
    }
    for (const auto& path : unknown) {
      errors.push_back("." + path + ": field not declared in schema");
    }
    return errors;
  }
  for (const auto& problem : check_builtin_fields(type, copy, false)) {
    errors.push_back(
        problem.apply_path + ": " +
        (problem.kind == FieldProblemKind::unknown ? "field not declared in schema" : problem.apply_message));
  }
  return errors;
}

// 409 Conflict as kube-apiserver words it: causes only, no name or kind in the details;
// several conflicts are grouped by manager (managers in order).
Response apply_conflict(const std::vector<ApplyConflict>& conflicts) {
  Document details(rapidjson::kObjectType);
  Value causes(rapidjson::kArrayType);
  for (const auto& item : conflicts) {
    Value cause(rapidjson::kObjectType);
    json::set_string(cause, "reason", "FieldManagerConflict", details.GetAllocator());
    json::set_string(cause, "message", "conflict with " + item.manager, details.GetAllocator());
    json::set_string(cause, "field", item.path, details.GetAllocator());
    causes.PushBack(std::move(cause), details.GetAllocator());
  }
  json::set(details, "causes", std::move(causes), details.GetAllocator());
  std::string message;
  if (conflicts.size() == 1) {
    message = "Apply failed with 1 conflict: conflict with " + conflicts[0].manager + ": " + conflicts[0].path;
  } else {
    std::map<std::string, std::vector<std::string>> by_manager;
    for (const auto& item : conflicts) {
      by_manager[item.manager].push_back(item.path);
    }
    message = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: ";
    bool first = true;
    for (const auto& [manager, paths] : by_manager) {
      message += std::string(first ? "" : "\n") + "conflicts with " + manager + ":";
      first = false;
      for (const auto& path : paths) {
        message += "\n- " + path;
      }
    }
  }
  return failure(409, "Conflict", message, &details);
}

void strip_server_metadata(Value& object) {
  if (Value* metadata = json::find(object, "metadata"); metadata != nullptr && metadata->IsObject()) {
    for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp",
                              "deletionGracePeriodSeconds", "selfLink"}) {
      metadata->RemoveMember(field);
    }
  }
}

}  // namespace

void add_warnings(Response& response, const std::vector<std::string>& warnings) {
  for (const auto& warning : warnings) {
    std::string escaped;
    for (char c : warning) {
      if (c == '"' || c == '\\') {
        escaped += '\\';
      }
      escaped += c;
    }
    response.headers.emplace_back("Warning", "299 - \"" + escaped + "\"");
  }
}

void ApiServer::store_object(const std::string& key, Document object, const char* event_type) {
  auto version = store_.next_version();
  Value& metadata = json::ensure_object(object, "metadata", object.GetAllocator());
  json::set_string(metadata, "resourceVersion", std::to_string(version), object.GetAllocator());
  store_.put(key, std::make_shared<const Document>(std::move(object)), event_type);
}

void ApiServer::remove_object(const std::string& key, const ObjectPtr& object) {
  Document final_object = json::copy(*object);
  auto version = store_.next_version();
  json::set_string(json::ensure_object(final_object, "metadata", final_object.GetAllocator()), "resourceVersion",
                   std::to_string(version), final_object.GetAllocator());
  const bool is_crd = key.starts_with("apiextensions.k8s.io/customresourcedefinitions/");
  const std::string group = string_at(final_object, {"spec", "group"});
  const std::string plural = string_at(final_object, {"spec", "names", "plural"});
  store_.erase(key, std::make_shared<const Document>(std::move(final_object)));
  if (is_crd) {
    // Normally the CRD's finalizer kept it until its custom resources were gone; one
    // removed by hand takes them along all the same.
    stop_serving_crd(key.substr(key.rfind('/') + 1));
    for (const auto& [resource_key, resource] : store_.range(collection_prefix(group, plural))) {
      remove_object(resource_key, resource);
    }
  }
}

Response ApiServer::create_object(const Request& request, const Target& target, Document body, bool from_apply) {
  const ResourceType& type = *target.type;
  auto& allocator = body.GetAllocator();
  if (!target.subresource.empty()) {
    return method_not_allowed();
  }
  if (type.custom && !from_apply && !request.held && options_.crd_create_hold.count() > 0) {
    // kube-apiserver sleeps in every create of a custom resource that comes right after
    // its CRD was established (so that other API servers of an HA setup serve it too).
    auto established = crd_established_at_.find(type.plural + "." + type.group);
    if (established != crd_established_at_.end() && clock_() - established->second < options_.crd_create_hold_window) {
      Response held;
      held.hold = options_.crd_create_hold;
      return held;
    }
  }
  if (auto mismatch = check_type(type, body)) {
    return *mismatch;
  }
  Value& metadata = json::ensure_object(body, "metadata", allocator);
  if (type.namespaced) {
    auto body_namespace = string_at(metadata, {"namespace"});
    if (!body_namespace.empty() && body_namespace != target.namespace_name) {
      return bad_request("the namespace of the provided object does not match the namespace sent on the request");
    }
    json::set_string(metadata, "namespace", target.namespace_name, allocator);
  } else {
    metadata.RemoveMember("namespace");
  }
  std::string name = string_at(metadata, {"name"});
  if (name.empty() && !from_apply) {
    std::string generate = string_at(metadata, {"generateName"});
    if (!generate.empty()) {
      name = generate + random_suffix();
      json::set_string(metadata, "name", name, allocator);
    }
  }
  if (auto causes = validate_name(type, name); !causes.empty()) {
    return invalid(type, name, causes);
  }
  if (type.namespaced) {
    auto ns = store_.get(object_key("", "namespaces", "", target.namespace_name));
    if (!ns) {
      return namespace_not_found(target.namespace_name);
    }
    if (json::find_path(*ns, {"metadata", "deletionTimestamp"}) != nullptr) {
      auto details = details_for(&type, name);
      Value causes(rapidjson::kArrayType);
      Value cause(rapidjson::kObjectType);
      std::string message = "namespace " + target.namespace_name + " is being terminated";
      json::set_string(cause, "reason", "NamespaceTerminating", details.GetAllocator());
      json::set_string(cause, "message", message, details.GetAllocator());
      json::set_string(cause, "field", "metadata.namespace", details.GetAllocator());
      causes.PushBack(std::move(cause), details.GetAllocator());
      json::set(details, "causes", std::move(causes), details.GetAllocator());
      return failure(403, "Forbidden",
                     type.qualified_plural() + " \"" + name +
                         "\" is forbidden: unable to create new content in namespace " + target.namespace_name +
                         " because it is being terminated",
                     &details);
    }
  }
  std::vector<std::string> warnings;
  std::vector<FieldCause> causes;
  if (auto refused = decode_object(request, type, body, allocator, !from_apply, warnings, causes)) {
    return *refused;
  }
  auto more = validate_object(type, body);
  causes.insert(causes.end(), more.begin(), more.end());
  if (!causes.empty()) {
    return invalid(type, name, causes);
  }
  Target named = target;
  named.name = name;
  std::string key = named.key();
  if (store_.get(key)) {
    auto details = details_for(&type, name);
    return failure(409, "AlreadyExists", type.qualified_plural() + " \"" + name + "\" already exists", &details);
  }
  // Server-populated fields.
  strip_server_metadata(body);
  Value& fresh_meta = json::ensure_object(body, "metadata", allocator);
  json::set_string(fresh_meta, "uid", new_uid(), allocator);
  json::set_string(fresh_meta, "creationTimestamp", now_rfc3339(), allocator);
  if (tracks_generation(type)) {
    json::set(fresh_meta, "generation", Value(1), allocator);
  }
  if (!from_apply) {
    record_update(nullptr, body, ownership_of(*this, type, manager_of(request), ""), allocator);
  }
  prepare_for_create(type, body, allocator);
  if (type.group.empty() && type.plural == "services") {
    allocate_service_addresses(body, allocator, query(request, "dryRun") == "All");
  }
  bool dry_run = query(request, "dryRun") == "All";
  Response response;
  if (dry_run) {
    response = json_response(201, json::dump(body));
  } else {
    store_object(key, std::move(body), "ADDED");
    response = json_response(201, json::dump(*store_.get(key)));
  }
  add_warnings(response, warnings);
  return response;
}

Response ApiServer::update_object(const Request& request, const Target& target, Document body) {
  const ResourceType& type = *target.type;
  if (auto mismatch = check_type(type, body)) {
    return *mismatch;
  }
  std::string body_name = string_at(body, {"metadata", "name"});
  if (body_name != target.name) {
    return bad_request("the name of the object (" + body_name + ") does not match the name on the URL (" + target.name +
                       ")");
  }
  if (type.namespaced) {
    auto body_namespace = string_at(body, {"metadata", "namespace"});
    if (!body_namespace.empty() && body_namespace != target.namespace_name) {
      return bad_request("the namespace of the provided object does not match the namespace sent on the request");
    }
  }
  auto old = store_.get(target.key());
  if (!old) {
    return not_found(type, target.name);
  }
  std::string body_version = string_at(body, {"metadata", "resourceVersion"});
  if (!body_version.empty() && body_version != string_at(*old, {"metadata", "resourceVersion"})) {
    return conflict(type, target.name);
  }
  return commit_update(request, target, old, std::move(body), manager_of(request), true);
}

Response ApiServer::commit_update(const Request& request, const Target& target, const ObjectPtr& old, Document updated,
                                  const std::string& manager, bool record_manager) {
  const ResourceType& type = *target.type;
  if (target.subresource == "finalize") {
    // A namespace's finalize subresource changes spec.finalizers and nothing else.
    Document result = json::copy(*old);
    auto& result_allocator = result.GetAllocator();
    Value& spec = json::ensure_object(result, "spec", result_allocator);
    if (const Value* finalizers = json::find_path(updated, {"spec", "finalizers"}); finalizers != nullptr) {
      json::set(spec, "finalizers", Value(*finalizers, result_allocator), result_allocator);
    } else {
      spec.RemoveMember("finalizers");
    }
    updated = std::move(result);
  }
  bool status_only = target.subresource == "status";
  if (status_only) {
    // The status subresource changes .status and nothing else.
    Document result = json::copy(*old);
    auto& result_allocator = result.GetAllocator();
    if (const Value* status = json::find(updated, "status"); status != nullptr) {
      json::set(result, "status", Value(*status, result_allocator), result_allocator);
    } else {
      result.RemoveMember("status");
    }
    if (type.group == "apps" && !type.custom) {
      // The workloads' status strategies keep what a status write does to annotations
      // (the Deployment controller sets deployment.kubernetes.io/revision that way).
      Value& result_metadata = json::ensure_object(result, "metadata", result_allocator);
      if (const Value* annotations = json::find_path(updated, {"metadata", "annotations"}); annotations != nullptr) {
        json::set(result_metadata, "annotations", Value(*annotations, result_allocator), result_allocator);
      } else {
        result_metadata.RemoveMember("annotations");
      }
    }
    updated = std::move(result);
  }
  // Taken after the swap above: a moved-into Document has a new allocator.
  auto& allocator = updated.GetAllocator();
  if (status_only) {
    // nothing more: status came from the request, everything else from the stored object
  } else if (type.has_status && type.group != "apiextensions.k8s.io") {
    if (const Value* status = json::find(*old, "status"); status != nullptr) {
      json::set(updated, "status", Value(*status, allocator), allocator);
    } else {
      updated.RemoveMember("status");
    }
  } else if (type.group == "apiextensions.k8s.io") {
    if (const Value* status = json::find(*old, "status"); status != nullptr) {
      json::set(updated, "status", Value(*status, allocator), allocator);
    }
  }
  // Server-owned metadata always comes from the stored object.
  Value& metadata = json::ensure_object(updated, "metadata", allocator);
  const Value& old_metadata = *json::find(*old, "metadata");
  for (const char* field : {"uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds",
                            "namespace", "name"}) {
    if (const Value* value = json::find(old_metadata, field); value != nullptr) {
      json::set(metadata, field, Value(*value, allocator), allocator);
    } else {
      metadata.RemoveMember(field);
    }
  }
  json::set(metadata, "resourceVersion", Value(*json::find(old_metadata, "resourceVersion"), allocator), allocator);
  std::vector<std::string> warnings;
  std::vector<FieldCause> causes;
  if (auto refused = decode_object(request, type, updated, allocator, record_manager, warnings, causes)) {
    return *refused;
  }
  if (type.group.empty() && type.plural == "services") {
    // An update that omits what the Service's creation allocated keeps it.
    Value& spec = json::ensure_object(updated, "spec", allocator);
    for (const char* field : {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"}) {
      const Value* given = json::find(spec, field);
      if (given == nullptr || (given->IsString() && given->GetStringLength() == 0)) {
        if (const Value* allocated = json::find_path(*old, {"spec", field}); allocated != nullptr) {
          json::set(spec, field, Value(*allocated, allocator), allocator);
        }
      }
    }
  }
  auto immutable = validate_immutable(type, *old, updated);
  causes.insert(causes.end(), immutable.begin(), immutable.end());
  auto more = validate_object(type, updated);
  causes.insert(causes.end(), more.begin(), more.end());
  if (!causes.empty()) {
    return invalid(type, target.name, causes);
  }
  if (tracks_generation(type) && !status_only && spec_changed(*old, updated)) {
    const Value* generation = json::find(old_metadata, "generation");
    int64_t next = generation != nullptr && generation->IsInt64() ? generation->GetInt64() + 1 : 1;
    json::set(json::ensure_object(updated, "metadata", allocator), "generation", Value(next), allocator);
  }
  if (record_manager) {
    record_update(old.get(), updated, ownership_of(*this, type, manager, status_only ? "status" : ""), allocator);
  }
  bool dry_run = query(request, "dryRun") == "All";
  // No-op writes keep the resourceVersion (ignoring managedFields timestamps).
  auto without_times = [](const Value& object) {
    Document copy = json::copy(object);
    if (Value* managed = find_mutable(copy, {"metadata", "managedFields"}); managed != nullptr && managed->IsArray()) {
      for (auto& entry : managed->GetArray()) {
        entry.RemoveMember("time");
      }
    }
    return copy;
  };
  if (without_times(*old) == without_times(updated)) {
    Response response = json_response(200, json::dump(*old));
    add_warnings(response, warnings);
    return response;
  }
  std::string key = target.key();
  // An object being deleted goes once its last finalizer is removed.
  const Value* finalizers = json::find_path(updated, {"metadata", "finalizers"});
  bool finalized = json::find_path(updated, {"metadata", "deletionTimestamp"}) != nullptr &&
                   (finalizers == nullptr || !finalizers->IsArray() || finalizers->Empty());
  if (type.plural == "namespaces" && type.group.empty()) {
    // A namespace also waits for its spec.finalizers (the namespace controller's "kubernetes").
    const Value* spec_finalizers = json::find_path(updated, {"spec", "finalizers"});
    finalized = finalized && (spec_finalizers == nullptr || !spec_finalizers->IsArray() || spec_finalizers->Empty());
  }
  Response response;
  if (dry_run) {
    response = json_response(200, json::dump(updated));
  } else if (finalized) {
    auto final_object = std::make_shared<const Document>(std::move(updated));
    remove_object(key, final_object);
    response = json_response(200, json::dump(*final_object));
  } else {
    store_object(key, std::move(updated), "MODIFIED");
    response = json_response(200, json::dump(*store_.get(key)));
  }
  add_warnings(response, warnings);
  return response;
}

Response ApiServer::patch_object(const Request& request, const Target& target) {
  const ResourceType& type = *target.type;
  std::string content_type = request.content_type.substr(0, request.content_type.find(';'));
  bool apply = content_type == "application/apply-patch+yaml" || content_type == "application/apply-patch+cbor";
  auto old = store_.get(target.key());
  if (!apply) {
    if (content_type != "application/merge-patch+json" && content_type != "application/json-patch+json" &&
        content_type != "application/strategic-merge-patch+json") {
      return unsupported_media_type();
    }
    if (content_type == "application/strategic-merge-patch+json" && type.custom) {
      return unsupported_media_type();
    }
    if (!old) {
      return not_found(type, target.name);
    }
    auto patch = json::parse(request.body);
    if (!patch) {
      return bad_request(patch.error().message);
    }
    Document updated = json::copy(*old);
    Status result = ok_status();
    if (content_type == "application/merge-patch+json") {
      if (!patch->IsObject()) {
        return bad_request("merge patch must be a JSON object");
      }
      apply_merge_patch(updated, *patch, updated.GetAllocator());
    } else if (content_type == "application/json-patch+json") {
      result = apply_json_patch(updated, *patch, updated.GetAllocator());
    } else {
      result = apply_strategic_merge_patch(updated, *patch, updated.GetAllocator());
    }
    if (!result.ok()) {
      return failure(422, "Invalid", result.error().message);
    }
    if (!updated.IsObject()) {
      return bad_request("the patch did not produce an object");
    }
    if (auto mismatch = check_type(type, updated)) {
      return *mismatch;
    }
    if (string_at(updated, {"metadata", "name"}) != target.name) {
      return bad_request("the name of the object (" + string_at(updated, {"metadata", "name"}) +
                         ") does not match the name on the URL (" + target.name + ")");
    }
    std::string patched_version = string_at(updated, {"metadata", "resourceVersion"});
    if (patched_version != string_at(*old, {"metadata", "resourceVersion"})) {
      return conflict(type, target.name);
    }
    return commit_update(request, target, old, std::move(updated), manager_of(request), true);
  }

  // Server-side apply.
  std::string manager = query(request, "fieldManager");
  if (manager.empty()) {
    Document details(rapidjson::kObjectType);
    Value causes(rapidjson::kArrayType);
    Value cause(rapidjson::kObjectType);
    json::set_string(cause, "reason", "FieldValueRequired", details.GetAllocator());
    json::set_string(cause, "message", "Required value: is required for apply patch", details.GetAllocator());
    json::set_string(cause, "field", "fieldManager", details.GetAllocator());
    causes.PushBack(std::move(cause), details.GetAllocator());
    json::set_string(details, "group", "meta.k8s.io", details.GetAllocator());
    json::set_string(details, "kind", "PatchOptions", details.GetAllocator());
    json::set(details, "causes", std::move(causes), details.GetAllocator());
    return failure(
        422, "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        &details);
  }
  auto applied = parse_json_or_yaml(request.body);
  if (!applied || !applied->IsObject()) {
    return bad_request(applied ? "the apply patch must be an object" : applied.error().message);
  }
  if (auto mismatch = check_type(type, *applied)) {
    return *mismatch;
  }
  std::string applied_name = string_at(*applied, {"metadata", "name"});
  if (applied_name != target.name) {
    return bad_request("the name of the object (" + applied_name + ") does not match the name on the URL (" +
                       target.name + ")");
  }
  std::string applied_version = string_at(*applied, {"metadata", "resourceVersion"});
  if (!applied_version.empty() && (!old || applied_version != string_at(*old, {"metadata", "resourceVersion"}))) {
    return conflict(type, target.name);
  }
  if (Value* metadata = json::find(*applied, "metadata"); metadata != nullptr) {
    metadata->RemoveMember("managedFields");
    strip_server_metadata(*applied);
    if (type.namespaced) {
      auto body_namespace = string_at(*metadata, {"namespace"});
      if (!body_namespace.empty() && body_namespace != target.namespace_name) {
        return bad_request("the namespace of the provided object does not match the namespace sent on the request");
      }
    }
  }
  // Server-side apply checks the configuration against the schema before anything
  // else, and fails with an internal error (500, no reason) whatever fieldValidation
  // says (kubernetes/kubernetes#122480; recordings 26 and 66).
  if (auto unknown = fields_not_in_schema(type, *applied); !unknown.empty()) {
    std::string message = "failed to create typed patch object (" + string_at(*applied, {"metadata", "namespace"}) +
                          "/" + target.name + "; " + type.group + "/" + type.version + ", Kind=" + type.kind + "): ";
    if (unknown.size() == 1) {
      message += unknown.front();
    } else {
      message += "errors:";
      for (const auto& error : unknown) {
        message += "\n  " + error;
      }
    }
    return failure(500, "", message);
  }
  std::vector<std::string> warnings;
  bool status_only = target.subresource == "status";
  Document live;
  if (old) {
    live.CopyFrom(*old, live.GetAllocator());
  }
  auto outcome = server_side_apply(
      live, *applied,
      ownership_of(*this, type, manager, status_only ? "status" : "", query(request, "force") == "true"),
      live.GetAllocator());
  if (!outcome) {
    return failure(500, "", outcome.error().message);
  }
  if (!outcome->empty()) {
    return apply_conflict(*outcome);
  }
  Response response;
  if (!old) {
    if (status_only) {
      return not_found(type, target.name);
    }
    response = create_object(request, target, std::move(live), true);
  } else {
    response = commit_update(request, target, old, std::move(live), manager, false);
  }
  add_warnings(response, warnings);
  return response;
}

// ---- scale ----------------------------------------------------------------------------------

Response ApiServer::scale_subresource(const Request& request, const Target& target) {
  const ResourceType& type = *target.type;
  auto old = store_.get(target.key());
  if (!old) {
    return not_found(type, target.name);
  }
  auto scale_of = [&](const Value& object) {
    Document scale(rapidjson::kObjectType);
    auto& allocator = scale.GetAllocator();
    json::set_string(scale, "kind", "Scale", allocator);
    json::set_string(scale, "apiVersion", "autoscaling/v1", allocator);
    Value metadata(rapidjson::kObjectType);
    for (const char* field : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
      if (const Value* value = json::find_path(object, {"metadata", field}); value != nullptr) {
        json::set(metadata, field, Value(*value, allocator), allocator);
      }
    }
    json::set(scale, "metadata", std::move(metadata), allocator);
    const Value* replicas = json::find_path(object, {"spec", "replicas"});
    Value spec(rapidjson::kObjectType);
    json::set(spec, "replicas", replicas != nullptr ? Value(*replicas, allocator) : Value(1), allocator);
    json::set(scale, "spec", std::move(spec), allocator);
    Value status(rapidjson::kObjectType);
    const Value* current = json::find_path(object, {"status", "replicas"});
    json::set(status, "replicas", current != nullptr ? Value(*current, allocator) : Value(0), allocator);
    json::set(scale, "status", std::move(status), allocator);
    return scale;
  };
  Document scale = scale_of(*old);
  if (request.method == "GET") {
    return json_response(200, json::dump(scale));
  }
  Document desired;
  if (request.method == "PUT") {
    auto body = json::parse(request.body);
    if (!body) {
      return bad_request(body.error().message);
    }
    desired = std::move(*body);
  } else {
    auto patch = json::parse(request.body);
    if (!patch) {
      return bad_request(patch.error().message);
    }
    desired = json::copy(scale);
    std::string content_type = request.content_type.substr(0, request.content_type.find(';'));
    Status result = content_type == "application/json-patch+json"
                        ? apply_json_patch(desired, *patch, desired.GetAllocator())
                        : apply_strategic_merge_patch(desired, *patch, desired.GetAllocator());
    if (!result.ok()) {
      return failure(422, "Invalid", result.error().message);
    }
  }
  const Value* replicas = json::find_path(desired, {"spec", "replicas"});
  if (replicas == nullptr || !replicas->IsInt64() || replicas->GetInt64() < 0) {
    std::vector<FieldCause> causes{
        {"FieldValueInvalid", "Invalid value: must be greater than or equal to 0", "spec.replicas"}};
    return invalid(type, target.name, causes);
  }
  Document updated = json::copy(*old);
  json::set(json::ensure_object(updated, "spec", updated.GetAllocator()), "replicas", Value(replicas->GetInt64()),
            updated.GetAllocator());
  Target main = target;
  main.subresource.clear();
  Response response = commit_update(request, main, old, std::move(updated), manager_of(request), true);
  if (response.status == 200) {
    auto stored = json::parse(response.body);
    if (stored) {
      response.body = json::dump(scale_of(*stored));
    }
  }
  return response;
}

// ---- deletion -------------------------------------------------------------------------------

namespace {

// Kinds whose registry answers an immediate DELETE with the deleted object instead of a
// Success Status (ReturnDeletedObject; recording 73's notes: Services).
bool returns_deleted_object(const ResourceType& type) {
  return !type.custom && type.group.empty() && (type.plural == "services" || type.plural == "pods");
}

// {"kind":"Status",...,"status":"Success","details":{name, group, kind: <plural>, uid}} (recording 70).
std::string success_status_body(const ResourceType& type, const Value& object) {
  Document doc(rapidjson::kObjectType);
  auto& allocator = doc.GetAllocator();
  json::set_string(doc, "kind", "Status", allocator);
  json::set_string(doc, "apiVersion", "v1", allocator);
  json::set(doc, "metadata", Value(rapidjson::kObjectType), allocator);
  json::set_string(doc, "status", "Success", allocator);
  Value details(rapidjson::kObjectType);
  json::set_string(details, "name", string_at(object, {"metadata", "name"}), allocator);
  if (!type.group.empty()) {
    json::set_string(details, "group", type.group, allocator);
  }
  json::set_string(details, "kind", type.plural, allocator);
  json::set_string(details, "uid", string_at(object, {"metadata", "uid"}), allocator);
  json::set(doc, "details", std::move(details), allocator);
  return json::dump(doc);
}

bool has_finalizer(const Value& object, std::string_view finalizer) {
  const Value* finalizers = json::find_path(object, {"metadata", "finalizers"});
  return finalizers != nullptr && finalizers->IsArray() &&
         std::any_of(finalizers->Begin(), finalizers->End(), [&](const Value& value) {
           return value.IsString() && std::string_view(value.GetString(), value.GetStringLength()) == finalizer;
         });
}

}  // namespace

ApiServer::Deletion ApiServer::delete_now(const ResourceType& type, const std::string& key, const ObjectPtr& object,
                                          const std::string& propagation, bool dry_run) {
  const bool is_namespace = type.group.empty() && type.plural == "namespaces" && !type.custom;
  const bool is_crd = type.group == "apiextensions.k8s.io" && type.plural == "customresourcedefinitions";
  const bool being_deleted = json::find_path(*object, {"metadata", "deletionTimestamp"}) != nullptr;
  // The garbage collector's finalizers: a Job deleted without a policy orphans its Pods
  // (batch/v1's default), Orphan and Foreground say so themselves.
  std::string policy = propagation;
  if (policy.empty() && type.group == "batch" && type.plural == "jobs" && !type.custom) {
    policy = "Orphan";
  }
  std::vector<std::string> added;
  if (!is_namespace && policy == "Foreground" && !has_finalizer(*object, "foregroundDeletion")) {
    added.emplace_back("foregroundDeletion");
  }
  if (!is_namespace && policy == "Orphan" && !has_finalizer(*object, "orphan")) {
    added.emplace_back("orphan");
  }
  if (is_crd && !has_finalizer(*object, "customresourcecleanup.apiextensions.k8s.io")) {
    // The CRD registry keeps a CRD until its custom resources are gone (recording 68).
    added.emplace_back("customresourcecleanup.apiextensions.k8s.io");
  }
  if (being_deleted && added.empty()) {
    return {object, false};
  }
  Document marked = json::copy(*object);
  auto& allocator = marked.GetAllocator();
  Value& metadata = json::ensure_object(marked, "metadata", allocator);
  if (!added.empty()) {
    if (json::find(metadata, "finalizers") == nullptr || !json::find(metadata, "finalizers")->IsArray()) {
      json::set(metadata, "finalizers", Value(rapidjson::kArrayType), allocator);
    }
    Value& finalizers = *json::find(metadata, "finalizers");
    for (const auto& finalizer : added) {
      finalizers.PushBack(json::make_string(finalizer, allocator), allocator);
    }
  }
  const Value* finalizers = json::find(metadata, "finalizers");
  const bool has_finalizers = finalizers != nullptr && finalizers->IsArray() && !finalizers->Empty();
  if (!is_namespace && !has_finalizers) {
    if (!dry_run) {
      remove_object(key, object);
    }
    return {object, true};
  }
  if (!being_deleted) {
    json::set_string(metadata, "deletionTimestamp", now_rfc3339(), allocator);
    if (is_namespace) {
      json::set_string(json::ensure_object(marked, "status", allocator), "phase", "Terminating", allocator);
    } else if (is_crd) {
      Value& status = json::ensure_object(marked, "status", allocator);
      if (json::find(status, "conditions") == nullptr || !json::find(status, "conditions")->IsArray()) {
        json::set(status, "conditions", Value(rapidjson::kArrayType), allocator);
      }
      Value terminating(rapidjson::kObjectType);
      json::set_string(terminating, "type", "Terminating", allocator);
      json::set_string(terminating, "status", "True", allocator);
      json::set_string(terminating, "lastTransitionTime", now_rfc3339(), allocator);
      json::set_string(terminating, "reason", "InstanceDeletionPending", allocator);
      json::set_string(terminating, "message",
                       "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
                       allocator);
      json::find(status, "conditions")->PushBack(std::move(terminating), allocator);
    } else {
      json::set(metadata, "deletionGracePeriodSeconds", Value(0), allocator);
      // Graceful deletion is a change of the object: generation moves on (recordings 72, 73).
      if (const Value* generation = json::find(metadata, "generation");
          generation != nullptr && generation->IsInt64() && generation->GetInt64() > 0) {
        json::set(metadata, "generation", Value(generation->GetInt64() + 1), allocator);
      }
    }
  }
  if (dry_run) {
    return {std::make_shared<const Document>(std::move(marked)), false};
  }
  store_object(key, std::move(marked), "MODIFIED");
  return {store_.get(key), false};
}

Response ApiServer::delete_object(const Request& request, const Target& target) {
  const ResourceType& type = *target.type;
  auto old = store_.get(target.key());
  if (!old) {
    return not_found(type, target.name);
  }
  std::string propagation = query(request, "propagationPolicy");
  if (!request.body.empty()) {
    auto options = json::parse(request.body);
    if (!options) {
      return bad_request(options.error().message);
    }
    if (const Value* preconditions = json::find(*options, "preconditions"); preconditions != nullptr) {
      auto uid = string_at(*preconditions, {"uid"});
      auto version = string_at(*preconditions, {"resourceVersion"});
      auto details = details_for(&type, target.name);
      if (!uid.empty() && uid != string_at(*old, {"metadata", "uid"})) {
        return failure(409, "Conflict",
                       "Operation cannot be fulfilled on " + type.qualified_plural() + " \"" + target.name +
                           "\": Precondition failed: UID in precondition: " + uid +
                           ", UID in object meta: " + string_at(*old, {"metadata", "uid"}),
                       &details);
      }
      if (!version.empty() && version != string_at(*old, {"metadata", "resourceVersion"})) {
        return failure(409, "Conflict",
                       "Operation cannot be fulfilled on " + type.qualified_plural() + " \"" + target.name +
                           "\": Precondition failed: ResourceVersion in precondition: " + version +
                           ", ResourceVersion in object meta: " + string_at(*old, {"metadata", "resourceVersion"}),
                       &details);
      }
    }
    if (auto policy = string_at(*options, {"propagationPolicy"}); !policy.empty()) {
      propagation = policy;
    }
    if (const Value* dry = json::find(*options, "dryRun"); dry != nullptr && dry->IsArray() && !dry->Empty()) {
      // DeleteOptions.dryRun in the body counts like the query parameter.
      Request copy = request;
      copy.query["dryRun"] = "All";
      copy.body.clear();
      copy.query["propagationPolicy"] = propagation;
      return delete_object(copy, target);
    }
  }
  if (!propagation.empty() && propagation != "Orphan" && propagation != "Background" && propagation != "Foreground") {
    return bad_request("propagationPolicy: Unsupported value: \"" + propagation +
                       "\": supported values: \"Foreground\", \"Background\", \"Orphan\"");
  }
  const bool is_namespace = type.group.empty() && type.plural == "namespaces" && !type.custom;
  if (is_namespace && json::find_path(*old, {"metadata", "deletionTimestamp"}) != nullptr) {
    // The namespace registry refuses to delete a terminating namespace again.
    auto details = details_for(&type, target.name);
    return failure(409, "Conflict",
                   "Operation cannot be fulfilled on namespaces \"" + target.name +
                       "\": The system is ensuring all content is removed from this namespace.  Upon completion, "
                       "this namespace will automatically be purged by the system.",
                   &details);
  }
  auto result = delete_now(type, target.key(), old, propagation, query(request, "dryRun") == "All");
  Response response =
      json_response(200, result.deleted_now && !returns_deleted_object(type) ? success_status_body(type, *result.object)
                                                                             : json::dump(*result.object));
  if (propagation.empty() && type.group == "batch" && type.plural == "jobs" && !type.custom) {
    add_warnings(response, {"child pods are preserved by default when jobs are deleted; set "
                            "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress "
                            "this warning"});
  }
  return response;
}

Response ApiServer::delete_collection(const Request& request, const Target& target) {
  const ResourceType& type = *target.type;
  auto labels = parse_label_selector(query(request, "labelSelector"));
  if (!labels) {
    return bad_request(labels.error().message);
  }
  auto fields = parse_field_selector(query(request, "fieldSelector"));
  if (!fields) {
    return bad_request(fields.error().message);
  }
  std::string prefix =
      collection_prefix(type.group, type.plural) + (type.namespaced ? target.namespace_name + "/" : std::string());
  bool dry_run = query(request, "dryRun") == "All";
  std::string propagation = query(request, "propagationPolicy");
  std::string items;
  for (const auto& [key, object] : store_.range(prefix)) {
    if (!labels->matches(*object) ||
        !fields->matches(string_at(*object, {"metadata", "name"}), string_at(*object, {"metadata", "namespace"}))) {
      continue;
    }
    auto result = delete_now(type, key, object, propagation, dry_run);
    items +=
        (items.empty() ? "" : ",") + (type.custom ? json::dump(*result.object) : without_type_meta(*result.object));
  }
  return json_response(200, "{\"kind\":\"" + type.kind + "List\",\"apiVersion\":\"" + type.api_version() +
                                "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(store_.current_version()) +
                                "\"},\"items\":[" + items + "]}");
}

// ---- CRDs ------------------------------------------------------------------------------------

std::vector<ResourceType> ApiServer::types_of_crd(const Value& crd) const {
  std::vector<ResourceType> types;
  const Value* spec = json::find(crd, "spec");
  if (spec == nullptr) {
    return types;
  }
  const Value* versions = json::find(*spec, "versions");
  if (versions == nullptr || !versions->IsArray()) {
    return types;
  }
  for (const auto& version : versions->GetArray()) {
    if (const Value* served = json::find(version, "served");
        served != nullptr && served->IsBool() && !served->GetBool()) {
      continue;
    }
    ResourceType type;
    type.custom = true;
    type.group = string_at(*spec, {"group"});
    type.version = string_at(version, {"name"});
    type.kind = string_at(*spec, {"names", "kind"});
    type.plural = string_at(*spec, {"names", "plural"});
    type.singular = string_at(*spec, {"names", "singular"});
    if (type.singular.empty()) {
      type.singular = type.kind;
      std::transform(type.singular.begin(), type.singular.end(), type.singular.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    type.namespaced = string_at(*spec, {"scope"}) != "Cluster";
    // (the custom resource handler lists its verbs in this order: recording 63)
    type.verbs = {"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
    for (const char* list : {"shortNames", "categories"}) {
      if (const Value* names = json::find_path(*spec, {"names", list}); names != nullptr && names->IsArray()) {
        for (const auto& name : names->GetArray()) {
          if (name.IsString()) {
            (std::string_view(list) == "shortNames" ? type.short_names : type.categories)
                .emplace_back(name.GetString());
          }
        }
      }
    }
    type.has_status = json::find_path(version, {"subresources", "status"}) != nullptr;
    type.has_scale = json::find_path(version, {"subresources", "scale"}) != nullptr;
    if (type.has_scale) {
      type.subresources.push_back({"scale", "autoscaling", "v1", "Scale", {"get", "patch", "update"}});
    }
    if (type.has_status) {
      type.subresources.push_back({"status", type.group, type.version, type.kind, {"get", "patch", "update"}});
    }
    if (const Value* schema = json::find_path(version, {"schema", "openAPIV3Schema"}); schema != nullptr) {
      type.schema = std::make_shared<const Document>(json::copy(*schema));
    }
    types.push_back(std::move(type));
  }
  return types;
}

void ApiServer::reload_custom_resources() {
  for (const auto& [key, object] :
       store_.range(collection_prefix("apiextensions.k8s.io", "customresourcedefinitions"))) {
    const Value* conditions = json::find_path(*object, {"status", "conditions"});
    bool established = false;
    if (conditions != nullptr && conditions->IsArray()) {
      for (const auto& condition : conditions->GetArray()) {
        established = established ||
                      (string_at(condition, {"type"}) == "Established" && string_at(condition, {"status"}) == "True");
      }
    }
    if (established) {
      serve_crd(*object);
    }
  }
  controllers_.resync();
}

// ---- time-driven work ---------------------------------------------------------------------

void ApiServer::tick() {
  auto now = clock_();
  if (options_.compaction_interval.count() > 0) {
    if (!last_compaction_) {
      last_compaction_ = now;
      revision_at_last_compaction_ = store_.current_version();
    } else if (now - *last_compaction_ >= options_.compaction_interval) {
      store_.compact_to(revision_at_last_compaction_);
      last_compaction_ = now;
      revision_at_last_compaction_ = store_.current_version();
    }
  }
  controllers_.run(now);
}

}  // namespace kstate::emulator
