// The API semantics of kube-apiserver as a pure request -> response function:
// discovery (legacy and aggregated), CRUD with resourceVersion/generation/uid,
// the four PATCH formats, server-side apply, dryRun, fieldValidation,
// subresources, deletion with finalizers and garbage collection, CRDs, and
// watch event selection. No sockets here: http_server.cpp feeds it parsed
// requests, and tests call it directly. Time and randomness are injected.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/json.hpp"
#include "tests/emulator/access.hpp"
#include "tests/emulator/catalog.hpp"
#include "tests/emulator/controllers.hpp"
#include "tests/emulator/selectors.hpp"
#include "tests/emulator/store.hpp"

namespace kstate::emulator {

struct Identity {
  bool authenticated = false;
  std::string user;
  std::vector<std::string> groups;
  bool may_write = false;
  bool may_read = true;  // false: a user without any RBAC grant (every resource request is 403)
  // false: a user whose Role grants every verb but watch (a watch is 403, as RBAC answers it)
  bool may_watch = true;
};

struct Request {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // without the query
  std::map<std::string, std::string> query;
  std::string accept;
  std::string content_type;
  std::string if_none_match;
  std::string user_agent;
  std::string body;
  Identity identity;
  bool held = false;  // this request was held once already (Response::hold)
};

// What a watch request asked for; the HTTP layer streams it.
struct WatchSpec {
  std::string prefix;  // "<group>/<resource>/"
  std::string kind;    // for BOOKMARK objects
  std::string api_version;
  std::string namespace_name;  // "" for all namespaces
  LabelSelector labels;
  FieldSelector fields;
  std::uint64_t start_after = 0;  // stream events with resourceVersion > this
  bool initial_listing = false;   // send the current objects as ADDED first
  bool initial_events_end_bookmark = false;
  bool bookmarks = false;
  int timeout_seconds = 0;
  // Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1: every event's
  // object (bookmarks included) is a PartialObjectMetadata, as kube-apiserver's
  // response transformation makes it (handlers/response.go).
  bool metadata_only = false;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<WatchSpec> watch;
  std::string verb;  // Kubernetes verb (get, list, create, ...) or "discovery", for the request log
  std::string cache_control = "no-cache, private";
  // Not answered yet: ask again (Request::held set) after this long, as kube-apiserver
  // sleeps in a custom resource's create right after its CRD was established.
  std::chrono::milliseconds hold{0};
};

// Adds one `Warning: 299 - "<text>"` header per text, quoted as kube-apiserver quotes
// them (recordings 27 and 73).
void add_warnings(Response& response, const std::vector<std::string>& warnings);

class ApiServer {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  struct Options {
    // Reported by /version. The API modelled is 1.32's (the recordings), but the default
    // says 1.31: kubectl 1.32 sends protobuf bodies (`kubectl create configmap ...`) to
    // servers from 1.32 on, and the emulator speaks JSON only.
    std::string version = "1.31";
    // The cluster's controllers and their delays (controllers.hpp).
    ControllerOptions controllers;
    // kube-apiserver holds every create (POST) of a custom resource that comes within
    // `crd_create_hold_window` of its CRD's Established transition for `crd_create_hold`
    // (real: 2 s and 2 s, recording 64; server-side apply is not held). 0: never.
    std::chrono::milliseconds crd_create_hold{100};
    std::chrono::milliseconds crd_create_hold_window{2000};
    std::string root_ca_pem;
    std::string server_address = "127.0.0.1:6443";
    // false: /api and /apis ignore the aggregated media types in Accept (legacy JSON when
    // Accept allows it, 406 otherwise), as kube-apiserver before 1.26 does.
    bool aggregated_discovery = true;
    // true: /openapi/v3/<group version> documents carry schemas of the built-in kinds,
    // made from the field table (builtin_schema.hpp), for clients that check objects
    // against them (kstate test). kube-apiserver always publishes its full schemas; off
    // by default, because with partial ones kubectl would compute its client-side
    // apply patches from them instead of from its compiled-in types.
    bool openapi_schemas = false;
    // kube-apiserver's --etcd-compaction-interval: every interval, the watch history is
    // compacted to the revision of the previous interval, so a long-running emulator
    // keeps one to two intervals of old object versions, not every write (0: never).
    std::chrono::milliseconds compaction_interval{std::chrono::minutes(5)};
    // Users who may read only some resources (access.hpp): a get/list/watch of another
    // is 403 Forbidden, as kube-apiserver's RBAC answers it.
    ReadGrants read_grants;
  };

  ApiServer(Options options, Clock clock, std::uint64_t seed);

  // Answers a request, then lets the controllers react to what it changed (those
  // without a delay act before the answer leaves).
  Response handle(const Request& request);
  // Time-driven work: compaction and the controllers' delayed work. Call it
  // regularly; it is cheap when there is nothing to do.
  void tick();

  // Watch streaming: events after `after` that match, serialised as watch lines.
  // Returns nullopt when `after` is older than the history (410 Expired).
  struct WatchLines {
    std::vector<std::string> lines;
    std::uint64_t last = 0;
  };
  std::optional<WatchLines> watch_events(const WatchSpec& spec, std::uint64_t after) const;
  std::vector<std::string> initial_watch_events(const WatchSpec& spec) const;
  std::string bookmark_line(const WatchSpec& spec, std::uint64_t version, bool initial_events_end) const;
  std::string expired_line(std::uint64_t requested) const;

  Store& store() { return store_; }
  const Catalog& catalog() const { return catalog_; }
  // Serves the kinds of established stored CRDs again (after a restore from disk), and
  // lets the controllers look at every object again, as they do when they start.
  void reload_custom_resources();

  std::string now_rfc3339() const;
  // Where clients reach this server (legacy /api's serverAddressByClientCIDRs).
  void set_server_address(std::string address) { options_.server_address = std::move(address); }

 private:
  struct Target;
  Response route(const Request& request);
  Response discovery(const Request& request, const std::vector<std::string>& segments);
  Response openapi(const std::vector<std::string>& segments) const;
  Response serve_resource(const Request& request, Target& target);

  Response get_object(const Request& request, const Target& target);
  Response list_objects(const Request& request, const Target& target);
  Response start_watch(const Request& request, const Target& target);
  Response create_object(const Request& request, const Target& target, json::Document body, bool from_apply);
  Response update_object(const Request& request, const Target& target, json::Document body);
  Response patch_object(const Request& request, const Target& target);
  Response delete_object(const Request& request, const Target& target);
  Response delete_collection(const Request& request, const Target& target);
  Response scale_subresource(const Request& request, const Target& target);

  // Shared by update and patch: validates and stores `updated` as the new version of `old`.
  Response commit_update(const Request& request, const Target& target, const ObjectPtr& old, json::Document updated,
                         const std::string& manager, bool record_manager);
  // Deletes, or marks for deletion when finalizers (its own, or the garbage collector's
  // for the propagation policy) hold the object.
  struct Deletion {
    ObjectPtr object;          // the object as deleted, or as marked for deletion
    bool deleted_now = false;  // gone (no finalizer held it)
  };
  Deletion delete_now(const ResourceType& type, const std::string& key, const ObjectPtr& object,
                      const std::string& propagation, bool dry_run);
  void store_object(const std::string& key, json::Document object, const char* event_type);
  void remove_object(const std::string& key, const ObjectPtr& object);

  // What the controllers (controllers.hpp) use: requests with a controller's identity
  // and User-Agent ("kube-controller-manager", "kube-apiserver"), the catalog of a CRD's
  // kinds, and the kind an object key stores.
  friend class Controllers;
  Response controller_request(const std::string& method, const std::string& target, const std::string& body,
                              const std::string& component);
  void serve_crd(const json::Value& crd);
  void stop_serving_crd(const std::string& crd_name);
  const ResourceType* type_of_key(const std::string& key) const;
  std::vector<ResourceType> types_of_crd(const json::Value& crd) const;

  // The JSON of a stored object, serialized once per version: stored objects never
  // change (a write stores a new one), so a LIST or GET copies text instead of walking
  // every object again, as kube-apiserver's watch cache serializes an object once for
  // all who read it. Keyed by address; an entry whose object is gone is stale.
  const std::string& serialized(const ObjectPtr& object);
  // The JSON of an object as an item of a list: built-in kinds' list items carry no
  // kind/apiVersion (kube-apiserver leaves them to the list), custom resources' do.
  const std::string& serialized_item(const ObjectPtr& object, const ResourceType& type);

  std::string new_uid();
  std::string random_suffix();
  std::string allocate_cluster_ip();
  // A new Service's clusterIP(s), IP family fields and node ports, as the service REST
  // storage allocates them (a dry run reserves nothing).
  void allocate_service_addresses(json::Value& service, json::Allocator& allocator, bool dry_run);
  std::string discovery_document(bool aggregated_core, const std::string& version) const;

  Options options_;
  Clock clock_;
  std::mt19937_64 random_;
  Catalog catalog_;
  Store store_;
  Controllers controllers_;
  // CRD name -> when it was established (Options::crd_create_hold).
  std::map<std::string, std::chrono::system_clock::time_point> crd_established_at_;
  // Periodic compaction: when the last one ran, and the revision to compact to next.
  std::optional<std::chrono::system_clock::time_point> last_compaction_;
  std::uint64_t revision_at_last_compaction_ = 0;
  std::uint32_t next_cluster_ip_ = 10;
  std::uint32_t next_node_port_ = 30000;
  struct SerializedObject {
    std::weak_ptr<const json::Document> object;
    std::string json;
    std::string item_json;  // built-in kinds' list item form, made on first use
  };
  std::unordered_map<const json::Document*, SerializedObject> serialized_;
};

// A Kubernetes Status failure body.
std::string status_body(int code, const std::string& reason, const std::string& message,
                        const json::Value* details = nullptr);

}  // namespace kstate::emulator
