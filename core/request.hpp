// Pure request building for any resource (the kube-rs `Request` idea): from an
// ApiResource, a namespace, a name and options to the exact HTTP verb, path, query,
// headers and body the API server expects. No I/O here, so every URL is unit-tested
// as a string. Names and namespaces are validated before they enter a URL, so a
// manifest cannot address another path ("../secrets", "a/b", "%2e").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/api_resource.hpp"
#include "core/error.hpp"

namespace kstate {

// One HTTP request to the API server, transport-independent.
struct Request {
  std::string verb;                                          // GET, POST, PUT, PATCH, DELETE
  std::string path;                                          // e.g. /apis/apps/v1/namespaces/default/deployments/web
  std::vector<std::pair<std::string, std::string>> query;    // unencoded; target() encodes
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (If-None-Match, ...)
  std::string content_type;                                  // empty when there is no body
  std::string accept = "application/json";
  std::string body;
  // Safe to send again after a connection failure or 5xx: reads, watches, apply
  // patches and dryRun writes. A plain POST (create) is never repeated blindly.
  bool idempotent = false;
  bool streaming = false;  // watch: the response body is an unbounded stream
  // False: one attempt, whatever the failure. For probes whose caller already saw
  // requests fail after their retries (is the API server there at all?).
  bool retry = true;

  // path + "?" + percent-encoded query, as it goes on the request line.
  std::string target() const;
};

enum class PatchType { merge, json, strategic, apply };
// The Content-Type of each patch type.
std::string_view content_type_of(PatchType type);

// Options of writes (create, replace, patch).
struct WriteOptions {
  bool dry_run = false;          // dryRun=All
  std::string field_manager;     // fieldManager=...
  std::optional<bool> force;     // force=true|false (apply patches only)
  std::string field_validation;  // Strict | Warn | Ignore
};

// Options of list, watch and deletecollection.
struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::int64_t limit = 0;  // 0: no limit parameter
  std::string continue_token;
  std::string resource_version;
  std::string resource_version_match;  // Exact | NotOlderThan
  std::int64_t timeout_seconds = 0;    // watch: server-side timeout; 0: not sent
  bool allow_watch_bookmarks = false;  // watch only
  // Ask for PartialObjectMetadata (metadata only: no spec, no data) with full objects as
  // the fallback a server without it answers with (the Accept header client-go's
  // metadata client sends).
  bool metadata_only = false;
  // Client side, not sent: keep each object's metadata.managedFields when the answer is
  // parsed (list and watch drop them otherwise, json::parse_api_answer).
  bool keep_managed_fields = false;
};

// The Accept header of ListOptions::metadata_only.
inline constexpr std::string_view metadata_only_accept =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// Options of delete and deletecollection.
struct DeleteOptions {
  bool dry_run = false;
  std::string propagation_policy;  // Background | Foreground | Orphan
  std::optional<std::int64_t> grace_period_seconds;
  std::string precondition_resource_version;  // sent in the DeleteOptions body
  std::string precondition_uid;
};

// Validation of the values that become URL segments. Namespaces are DNS-1123 labels;
// names follow the API server's path-segment rule (not empty, not "." or "..", no '/'
// or '%') plus no control characters and at most 253 bytes.
Status validate_namespace(std::string_view ns);
Status validate_name(std::string_view name);

// Builders. `ns` is ignored for cluster-scoped resources (as kubectl does) and
// required for namespaced ones except in list/watch/deletecollection, where empty
// means all namespaces. `subresource` is e.g. "status" or "scale".
namespace requests {

// The collection path: /api/v1/namespaces/ns/pods or /apis/G/V/plural.
Result<std::string> collection_path(const ApiResource& resource, std::string_view ns);
// The object path: collection path + "/" + name (+ "/" + subresource).
Result<std::string> object_path(const ApiResource& resource, std::string_view ns, std::string_view name,
                                std::string_view subresource = {});

Result<Request> get(const ApiResource& resource, std::string_view ns, std::string_view name,
                    std::string_view subresource = {});
Result<Request> list(const ApiResource& resource, std::string_view ns, const ListOptions& options = {});
Result<Request> watch(const ApiResource& resource, std::string_view ns, const ListOptions& options = {});
Result<Request> create(const ApiResource& resource, std::string_view ns, std::string body,
                       const WriteOptions& options = {});
Result<Request> replace(const ApiResource& resource, std::string_view ns, std::string_view name, std::string body,
                        const WriteOptions& options = {}, std::string_view subresource = {});
Result<Request> patch(const ApiResource& resource, std::string_view ns, std::string_view name, PatchType type,
                      std::string body, const WriteOptions& options = {}, std::string_view subresource = {});
Result<Request> remove(const ApiResource& resource, std::string_view ns, std::string_view name,
                       const DeleteOptions& options = {});
Result<Request> delete_collection(const ApiResource& resource, std::string_view ns, const ListOptions& list_options,
                                  const DeleteOptions& options = {});

}  // namespace requests

// RFC 3986 percent-encoding of everything but unreserved characters.
std::string percent_encode(std::string_view text);

}  // namespace kstate
