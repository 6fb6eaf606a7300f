// The states engine: runs loaded states against the API server through the
// DynamicClient, in dependency order, up to `concurrency` at a time, in real or test
// (dryRun=All) mode, and returns one Salt-shaped result per state.
//
// Requests are kept to a minimum: the live objects are read once per (resource,
// namespace) pair (one LIST, or one GET when the pair holds a single object), and a
// state whose object already matches (subset + configuration hash) sends nothing.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/dynamic_client.hpp"
#include "core/gvk.hpp"
#include "discovery/openapi.hpp"
#include "manifests/state.hpp"
#include "states/report.hpp"

namespace kstate::states {

// GVK -> resource, through cached discovery. The engine calls refresh() once after
// a CRD of this run became Established so that its kinds resolve.
class KindResolver {
 public:
  virtual ~KindResolver() = default;
  // Not found: ErrorKind::not_found with kubectl's "no matches for kind" message.
  virtual asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) = 0;
  virtual asio::awaitable<Status> refresh() = 0;
  // As resolve(), from what discovery last answered: never reads it again (a resolver
  // without that distinction resolves as usual).
  virtual asio::awaitable<Result<ApiResource>> resolve_known(const GroupVersionKind& gvk) {
    co_return co_await resolve(gvk);
  }
  // Every resource the server offers (preferred versions), for prune's check that a
  // Namespace or CRD holds nothing kstate does not manage. A resolver that cannot
  // enumerate answers an error, and prune then keeps every Namespace and CRD.
  virtual asio::awaitable<Result<std::vector<ApiResource>>> resources() {
    co_return Error(ErrorKind::internal, "this resolver cannot list the server's resources");
  }
  // The kind's schema as the server publishes it (OpenAPI v3, discovery/openapi.hpp),
  // for test mode's checks of objects the server cannot validate yet; nullopt when it
  // publishes none. The schema stays valid as long as the resolver.
  virtual asio::awaitable<Result<std::optional<discovery::PublishedSchema>>> published_schema(
      const GroupVersionKind& gvk) {
    (void)gvk;
    co_return Error(ErrorKind::unsupported, "this resolver cannot read the server's OpenAPI schemas");
  }
  // Asks the server whether what resolve() and resources() answer is still what it
  // offers (discovery revalidated: a 304 when nothing changed), and takes its answer.
  // Prune calls it before it lists what a Namespace holds: a kind unknown to cached
  // discovery must not count as empty.
  virtual asio::awaitable<Status> revalidate() { co_return co_await refresh(); }
  // Group-versions the last discovery answer lacks (an aggregated API server that
  // answered 503, or is listed as Stale), as "group/version: why": the kinds they
  // serve could not be enumerated, so prune keeps every Namespace.
  virtual std::vector<std::string> unavailable_group_versions() const { return {}; }
};

struct ObjectRef;
class ReadAhead;

struct EngineOptions {
  bool test_mode = false;
  int concurrency = 16;
  std::string field_manager = "kstate";
  std::string default_namespace = "default";  // from the kubeconfig context
  // Labels put on every object kstate writes (managed-by, ApplySet membership).
  std::map<std::string, std::string> ownership_labels;
  // Whether an object_present may take over an existing object that does not carry
  // ownership_labels (label it, and so make it prunable later). When false, such an
  // object is left unmodified and the state fails saying how to opt in.
  bool adopt = true;
  // Objects ("Kind/namespace/name", "Kind/name") that may be taken over even when
  // another tool manages them (adopt-objects; states/adoption.hpp). The manifest's
  // annotation kstate.io/adopt: "true" does the same for its object.
  std::set<std::string> adopt_objects;
  // Bound on readiness waits (CRD Established, `wait: true`, object_absent's wait) when
  // a state gives none: 5 minutes, as `helm --wait`.
  std::chrono::milliseconds default_wait_timeout{std::chrono::minutes(5)};
  // Time-bounded readiness waits watch the object (one request) instead of polling.
  // Tests that drive waits with the injected sleep turn this off.
  bool watch_waits = true;
  // When set, only states it accepts are read and run (the daemon's one-changed-file
  // reconcile); the others are still resolved and count as declared, so prune never
  // mistakes them for removed objects.
  std::function<bool(const manifests::State&)> selected;
  // Whether the inventory records this object (kstate wrote it, so it carries
  // ownership_labels). When every object of a namespaced kind is recorded and they
  // span several namespaces, they are read with one LIST across namespaces selected by
  // ownership_labels instead of one LIST per namespace. Unset: one per namespace.
  std::function<bool(const ObjectRef&)> recorded;
  // LISTs across namespaces started before the manifests were loaded (read_ahead.hpp).
  // A kind with one is read from its answer, like a kind read across namespaces above
  // (a pair the answer lacks an object of is read on its own).
  std::shared_ptr<ReadAhead> read_ahead;
  // Build the objects to send while the live objects are being read, instead of each
  // just before its comparison (`kstate apply`/`test`: the process has the memory to
  // hold them all; the daemon builds them one at a time).
  bool prepare_ahead = false;
  // Keep each change's diff in its result (StateResult::changes "diff") for reports.
  // The daemon reports counts, not diffs: without, a change is recorded by its verb
  // ({"created": "ConfigMap/ns/name"}), and a created object's diff, the YAML of the
  // whole object, is not rendered at all (a first reconcile of 10,000 objects held
  // 23 MB of them).
  bool record_diffs = true;
  // Injected so tests of waits never sleep longer than needed.
  std::function<asio::awaitable<void>(std::chrono::milliseconds)> sleep;
};

// A label selector matching every one of `labels` ("k1=v1,k2=v2").
std::string label_selector(const std::map<std::string, std::string>& labels);

// Identity of the object a state concerns, resolved against discovery.
struct ObjectRef {
  GroupVersionKind gvk;
  std::string ns;  // empty for cluster-scoped
  std::string name;
  std::string display() const;  // Kind/namespace/name or Kind/name
};

class Engine {
 public:
  Engine(DynamicClient& client, KindResolver& resolver, EngineOptions options);
  ~Engine();

  // Optional, before run(): resolves the states' kinds, plans them and starts reading
  // their live objects in the background, so that those reads overlap what the caller
  // does before run() (reconcile records its pending inventory entries meanwhile).
  // Sends no write. Then either run() with the same states, or abandon(): the engine
  // must not be destroyed while its reads are in flight.
  asio::awaitable<void> start(std::vector<manifests::State>& states);
  asio::awaitable<void> abandon();

  // Runs every state in the order states/ordering plans (tiers, Namespaces and CRDs
  // first, `require` edges, deletes last). A state whose requisite failed fails
  // without sending a request.
  asio::awaitable<RunReport> run(std::vector<manifests::State>& states);

 private:
  struct Impl;
  DynamicClient& client_;
  KindResolver& resolver_;
  EngineOptions options_;
  std::unique_ptr<Impl> impl_;  // between start() and the end of run() or abandon()
};

}  // namespace kstate::states
