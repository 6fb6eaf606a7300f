// Request building: URL templating for every resource, query options and the
// validation that keeps manifest-supplied names from reshaping the URL.
#include "core/request.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace kstate {
namespace {

bool is_unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

bool is_dns_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

// Group, version, plural and subresource come from discovery, not from manifests, but
// a broken or hostile server must not be able to inject path segments either.
Status validate_segment(std::string_view segment, std::string_view what) {
  if (segment.empty()) {
    return Error(ErrorKind::invalid_input, std::string(what) + " is empty");
  }
  for (char c : segment) {
    if (!is_unreserved(c)) {
      return Error(ErrorKind::invalid_input, std::string(what) + " \"" + std::string(segment) +
                                                 "\" contains a character not allowed in a URL segment");
    }
  }
  return ok_status();
}

void add_write_options(Request& request, const WriteOptions& options) {
  if (options.dry_run) {
    request.query.emplace_back("dryRun", "All");
  }
  if (!options.field_manager.empty()) {
    request.query.emplace_back("fieldManager", options.field_manager);
  }
  if (!options.field_validation.empty()) {
    request.query.emplace_back("fieldValidation", options.field_validation);
  }
}

void add_list_options(Request& request, const ListOptions& options) {
  if (!options.label_selector.empty()) {
    request.query.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    request.query.emplace_back("fieldSelector", options.field_selector);
  }
  if (options.limit > 0) {
    request.query.emplace_back("limit", std::to_string(options.limit));
  }
  if (!options.continue_token.empty()) {
    request.query.emplace_back("continue", options.continue_token);
  }
  if (!options.resource_version.empty()) {
    request.query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!options.resource_version_match.empty()) {
    request.query.emplace_back("resourceVersionMatch", options.resource_version_match);
  }
  if (options.timeout_seconds > 0) {
    request.query.emplace_back("timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  if (options.metadata_only) {
    request.accept = std::string(metadata_only_accept);
  }
}

void add_delete_options(Request& request, const DeleteOptions& options) {
  if (options.dry_run) {
    request.query.emplace_back("dryRun", "All");
  }
  if (!options.propagation_policy.empty()) {
    request.query.emplace_back("propagationPolicy", options.propagation_policy);
  }
  if (options.grace_period_seconds) {
    request.query.emplace_back("gracePeriodSeconds", std::to_string(*options.grace_period_seconds));
  }
  if (!options.precondition_resource_version.empty() || !options.precondition_uid.empty()) {
    // Preconditions only exist in the body (a v1 DeleteOptions).
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    writer.StartObject();
    writer.Key("apiVersion");
    writer.String("v1");
    writer.Key("kind");
    writer.String("DeleteOptions");
    writer.Key("preconditions");
    writer.StartObject();
    if (!options.precondition_resource_version.empty()) {
      writer.Key("resourceVersion");
      writer.String(options.precondition_resource_version);
    }
    if (!options.precondition_uid.empty()) {
      writer.Key("uid");
      writer.String(options.precondition_uid);
    }
    writer.EndObject();
    writer.EndObject();
    request.body = buffer.GetString();
    request.content_type = "application/json";
  }
}

}  // namespace

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (is_unreserved(c)) {
      out += c;
    } else {
      auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 0x0F];
    }
  }
  return out;
}

std::string Request::target() const {
  std::string out = path;
  char separator = '?';
  for (const auto& [key, value] : query) {
    out += separator;
    out += percent_encode(key);
    out += '=';
    out += percent_encode(value);
    separator = '&';
  }
  return out;
}

std::string_view content_type_of(PatchType type) {
  switch (type) {
    case PatchType::merge:
      return "application/merge-patch+json";
    case PatchType::json:
      return "application/json-patch+json";
    case PatchType::strategic:
      return "application/strategic-merge-patch+json";
    case PatchType::apply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

Status validate_namespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 63) {
    return Error(ErrorKind::invalid_input, "namespace \"" + std::string(ns) + "\" must be 1 to 63 characters");
  }
  bool chars_ok = true;
  for (char c : ns) {
    chars_ok = chars_ok && is_dns_label_char(c);
  }
  if (!chars_ok || ns.front() == '-' || ns.back() == '-') {
    return Error(ErrorKind::invalid_input, "namespace \"" + std::string(ns) +
                                               "\" is not a valid DNS-1123 label (lower case letters, digits and '-', "
                                               "starting and ending with a letter or digit)");
  }
  return ok_status();
}

Status validate_name(std::string_view name) {
  if (name.empty()) {
    return Error(ErrorKind::invalid_input, "name is empty");
  }
  if (name.size() > 253) {
    return Error(ErrorKind::invalid_input, "name is longer than 253 characters");
  }
  if (name == "." || name == "..") {
    return Error(ErrorKind::invalid_input, "name may not be \"" + std::string(name) + "\"");
  }
  for (char c : name) {
    if (c == '/' || c == '%') {
      return Error(ErrorKind::invalid_input,
                   "name \"" + std::string(name) + "\" may not contain '" + std::string(1, c) + "'");
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return Error(ErrorKind::invalid_input, "name contains a control character");
    }
  }
  return ok_status();
}

namespace requests {

Result<std::string> collection_path(const ApiResource& resource, std::string_view ns) {
  if (auto s = validate_segment(resource.version, "API version"); !s) {
    return s.error();
  }
  if (auto s = validate_segment(resource.plural, "resource"); !s) {
    return s.error();
  }
  std::string path;
  if (resource.group.empty()) {
    path = "/api/" + resource.version;
  } else {
    if (auto s = validate_segment(resource.group, "API group"); !s) {
      return s.error();
    }
    path = "/apis/" + resource.group + "/" + resource.version;
  }
  if (resource.namespaced && !ns.empty()) {
    if (auto s = validate_namespace(ns); !s) {
      return s.error();
    }
    path += "/namespaces/";
    path += ns;
  }
  path += "/" + resource.plural;
  return path;
}

Result<std::string> object_path(const ApiResource& resource, std::string_view ns, std::string_view name,
                                std::string_view subresource) {
  if (resource.namespaced && ns.empty()) {
    return Error(ErrorKind::invalid_input,
                 "a namespace is required for " + resource.plural + " \"" + std::string(name) + "\"");
  }
  if (auto s = validate_name(name); !s) {
    return s.error();
  }
  auto path = collection_path(resource, ns);
  if (!path) {
    return path;
  }
  std::string out = std::move(path.value()) + "/" + percent_encode(name);
  if (!subresource.empty()) {
    if (auto s = validate_segment(subresource, "subresource"); !s) {
      return s.error();
    }
    out += "/";
    out += subresource;
  }
  return out;
}

Result<Request> get(const ApiResource& resource, std::string_view ns, std::string_view name,
                    std::string_view subresource) {
  auto path = object_path(resource, ns, name, subresource);
  if (!path) {
    return path.error();
  }
  Request request;
  request.verb = "GET";
  request.path = std::move(path.value());
  request.idempotent = true;
  return request;
}

Result<Request> list(const ApiResource& resource, std::string_view ns, const ListOptions& options) {
  auto path = collection_path(resource, ns);
  if (!path) {
    return path.error();
  }
  Request request;
  request.verb = "GET";
  request.path = std::move(path.value());
  request.idempotent = true;
  add_list_options(request, options);
  return request;
}

Result<Request> watch(const ApiResource& resource, std::string_view ns, const ListOptions& options) {
  auto request = list(resource, ns, options);
  if (!request) {
    return request;
  }
  request->query.emplace(request->query.begin(), "watch", "true");
  if (options.allow_watch_bookmarks) {
    request->query.emplace_back("allowWatchBookmarks", "true");
  }
  request->streaming = true;
  return request;
}

namespace {

// A write to `path` (POST, PUT, PATCH): its body, dry run, field manager and
// validation. Safe to send again only when `idempotent` (the caller says which).
Request write_request(std::string verb, std::string path, std::string content_type, std::string body, bool idempotent,
                      const WriteOptions& options) {
  Request request;
  request.verb = std::move(verb);
  request.path = std::move(path);
  request.content_type = std::move(content_type);
  request.body = std::move(body);
  request.idempotent = idempotent;
  add_write_options(request, options);
  return request;
}

}  // namespace

Result<Request> create(const ApiResource& resource, std::string_view ns, std::string body,
                       const WriteOptions& options) {
  if (resource.namespaced && ns.empty()) {
    return Error(ErrorKind::invalid_input, "a namespace is required to create " + resource.plural);
  }
  auto path = collection_path(resource, ns);
  if (!path) {
    return path.error();
  }
  return write_request("POST", std::move(path.value()), "application/json", std::move(body), options.dry_run, options);
}

Result<Request> replace(const ApiResource& resource, std::string_view ns, std::string_view name, std::string body,
                        const WriteOptions& options, std::string_view subresource) {
  auto path = object_path(resource, ns, name, subresource);
  if (!path) {
    return path.error();
  }
  return write_request("PUT", std::move(path.value()), "application/json", std::move(body), options.dry_run, options);
}

Result<Request> patch(const ApiResource& resource, std::string_view ns, std::string_view name, PatchType type,
                      std::string body, const WriteOptions& options, std::string_view subresource) {
  if (type == PatchType::apply && options.field_manager.empty()) {
    return Error(ErrorKind::invalid_input, "server-side apply needs a field manager");
  }
  if (type != PatchType::apply && options.force) {
    return Error(ErrorKind::invalid_input, "force is only valid for server-side apply patches");
  }
  auto path = object_path(resource, ns, name, subresource);
  if (!path) {
    return path.error();
  }
  // An apply patch states the whole intent: sending it twice yields the same object.
  Request request = write_request("PATCH", std::move(path.value()), std::string(content_type_of(type)), std::move(body),
                                  options.dry_run || type == PatchType::apply, options);
  if (options.force) {
    request.query.emplace_back("force", *options.force ? "true" : "false");
  }
  return request;
}

Result<Request> remove(const ApiResource& resource, std::string_view ns, std::string_view name,
                       const DeleteOptions& options) {
  auto path = object_path(resource, ns, name);
  if (!path) {
    return path.error();
  }
  Request request;
  request.verb = "DELETE";
  request.path = std::move(path.value());
  request.idempotent = options.dry_run;
  add_delete_options(request, options);
  return request;
}

Result<Request> delete_collection(const ApiResource& resource, std::string_view ns, const ListOptions& list_options,
                                  const DeleteOptions& options) {
  auto path = collection_path(resource, ns);
  if (!path) {
    return path.error();
  }
  Request request;
  request.verb = "DELETE";
  request.path = std::move(path.value());
  request.idempotent = options.dry_run;
  add_list_options(request, list_options);
  add_delete_options(request, options);
  return request;
}

}  // namespace requests
}  // namespace kstate
