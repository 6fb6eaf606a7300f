// The engine's reads of live objects during one run: every (resource, namespace) pair
// the states touch is read once, in the background while the plan runs (one GET when
// the pair holds a single named object, else one LIST; a namespaced kind whose objects
// kstate wrote in several namespaces, or one `kstate apply` listed ahead, with one LIST
// across namespaces), the pairs of the states that run first read first, and a state
// waits only for its own pair. A pair in a declared Namespace found absent is not read
// at all (it holds nothing). A state's object then comes from its pair's read, or from
// a GET of its own when the pair could not be read, or when the object may have been
// made since (kube-controller-manager's objects in a namespace this run created, a
// create answered 409). "Absent" is only ever concluded from a complete read or a 404
// Status, never from a `404 page not found` (a path discovery lists but the server does
// not serve: served()).
// Objects read or written stay valid for the whole run (documents are kept, not freed).
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "core/signal.hpp"
#include "states/engine.hpp"

namespace kstate::states {

class LiveObjects {
 public:
  // One state as the reads see it, by its index in the run's states.
  struct Target {
    std::shared_ptr<const ApiResource> resource;  // nullptr: not resolved (not read ahead)
    ObjectRef ref;
    bool selected = true;  // EngineOptions::selected
  };

  // `client` and `options` must outlive this; `state_count` states, by index.
  LiveObjects(DynamicClient& client, const EngineOptions& options, std::size_t state_count);
  LiveObjects(const LiveObjects&) = delete;
  LiveObjects& operator=(const LiveObjects&) = delete;

  // Called synchronously before the plan starts: marks every pair of the named,
  // resolved, selected targets as being read, so that no state reads its object on its
  // own meanwhile, and lists the reads in the order of `order` (the plan's topological
  // order; indices past the targets are ignored).
  void plan(const std::vector<Target>& targets, const std::vector<std::size_t>& order);
  // Starts the planned reads in the background, at most options.concurrency at a time.
  void start(const asio::any_io_executor& executor);
  // The background reads have ended (they refer to this object).
  asio::awaitable<void> finished();

  // The live object of state `index` (`resource`, `ref`: as it is now): from its pair's
  // read (waiting for it when in flight), else one GET with its managedFields. Points at
  // a null value when the object does not exist. `fresh`: a GET of its own whatever.
  asio::awaitable<Result<const json::Value*>> object(std::size_t index, const ApiResource& resource,
                                                     const ObjectRef& ref, bool fresh = false);
  // The next object() of state `index` reads with a GET of its own, not from its pair.
  void read_when_run(std::size_t index);
  // Whether the last object() of state `index` read it on its own, managedFields
  // included (a takeover then needs no second read).
  bool read_with_managed_fields(std::size_t index) const;

  // The object written or found for a state replaces what its pair's read found: a copy,
  // or the whole answer kept as it is (no copy), whose kept place is returned.
  void remember(const ApiResource& resource, const ObjectRef& ref, const json::Value& object);
  const json::Value& remember(const ApiResource& resource, const ObjectRef& ref, json::Document&& object);

  // A declared Namespace is not written while the GET asking whether it exists is in
  // flight: that GET would find this run's own new Namespace, and the pairs in it
  // would be read for nothing. Returns at once for any other object.
  asio::awaitable<void> namespace_checked(const ApiResource& resource, const ObjectRef& ref);

  // This run created Namespace `name`: kube-controller-manager makes its objects in it
  // a moment later (made_in_every_namespace).
  void namespace_created(const std::string& name);
  // What kube-controller-manager creates in every namespace, moments after the
  // namespace: ServiceAccount `default` and ConfigMap `kube-root-ca.crt`.
  static bool made_in_every_namespace(const ApiResource& resource, const std::string& name);
  // Whether the cluster makes this object in a namespace this run created (so it may
  // appear after its pair was read: read it when its state runs).
  bool made_by_the_cluster_here(const ApiResource& resource, const ObjectRef& ref) const;

  // A read's answer as the engine takes it: a 404 that is not a Status ("404 page not
  // found") means the server does not serve this resource's path, so discovery is out
  // of date; never "the object is absent". It becomes an error, and discovery_stale()
  // says to read discovery again for the next cycle.
  Result<json::Document> served(const ApiResource& resource, Result<json::Document> answer);
  bool discovery_stale() const { return discovery_stale_; }

  // The server's warnings on the reads made for state `index` (a shared read's are
  // each reader's), taken once.
  std::vector<std::string> take_warnings(std::size_t index);

  // What a state sees of an object that does not exist.
  static const json::Value& absent();

 private:
  struct Member {
    std::shared_ptr<const ApiResource> resource;  // as planned
    ObjectRef ref;
    std::vector<std::string> warnings;
    bool read_when_run = false;
    bool read_with_managed_fields = false;
  };
  // Live objects of one (resource, namespace) pair, read once. The objects point into
  // documents_ (a LIST answer is kept whole, not copied item by item).
  struct LiveSet {
    enum class Phase { unread, reading, read };
    Phase phase = Phase::unread;
    std::map<std::string, const json::Value*, std::less<>> objects;
    // States of the pair wait on it while its read is in flight; notified when it ends.
    std::unique_ptr<Signal> read_done;
  };
  // One background read: the members of one pair, or of every pair of one kind when
  // they are read together across namespaces.
  struct Work {
    std::vector<std::vector<std::size_t>> pairs;
    bool across_namespaces = false;
  };
  // Whether a Namespace the states declare exists. One that does not holds no object,
  // so its pairs are not read: a first apply into new namespaces sends one read per
  // namespace, not one per kind and namespace. The Namespaces' own pair read answers
  // first: found there, it exists; a GET of it that found nothing (one Namespace
  // declared), it does not. Missing from their LIST is not enough (a proxy in front of
  // the API server, e.g. capsule-proxy, may answer it with only some of them): the
  // first pair in it to be read then GETs it by name, while the others in it wait.
  // A Namespace the inventory does not record (new, on a first apply) is not waited for
  // in that LIST, which could not prove it absent: its GET goes out at once, and the
  // pairs in it wait one round trip instead of two.
  struct NamespaceCheck {
    std::size_t member = 0;  // the Namespace's state
    bool started = false;
    bool done = false;
    bool absent = false;               // only when the GET said 404
    std::unique_ptr<Signal> finished;  // notified when done
  };
  using Found = std::vector<std::pair<std::string, const json::Value*>>;

  static std::string pair_key(const ApiResource& resource, const std::string& ns);
  bool read_across_namespaces(const std::vector<std::vector<std::size_t>>& kind_pairs) const;
  bool listed_ahead(const std::vector<std::vector<std::size_t>>& kind_pairs) const;
  void share_warnings(const std::vector<std::string>& warnings, const std::vector<std::size_t>& members);
  void finish_pair_read(const std::string& key, Found& found, bool read_ok);
  asio::awaitable<void> read_finished(LiveSet& set);
  asio::awaitable<void> check_finished(NamespaceCheck& check);
  asio::awaitable<bool> namespace_absent(const std::string& ns);
  asio::awaitable<void> read_pair(const std::vector<std::size_t>& members);
  asio::awaitable<void> read_kind(const std::vector<std::vector<std::size_t>>& kind_pairs);
  asio::awaitable<void> read_everything();

  DynamicClient& client_;
  const EngineOptions& options_;
  std::vector<Member> members_;  // by state index
  // Objects read or written one by one share one pool; LIST answers keep their own.
  // Both are declared before sets_, so they outlive the pointers into them.
  json::Allocator pool_;
  std::deque<json::Document> documents_;  // a deque: growing it moves no document
  std::map<std::string, LiveSet> sets_;   // by pair_key
  std::vector<Work> work_;
  bool running_ = false;
  std::unique_ptr<Signal> done_;
  std::optional<ApiResource> namespaces_resource_;                       // set when a Namespace is declared
  std::map<std::string, NamespaceCheck, std::less<>> namespace_checks_;  // by declared name
  std::string namespaces_key_;                                           // the pair of the Namespaces
  bool namespaces_read_by_name_ = false;                                 // that pair is one Namespace, read with a GET
  bool namespaces_read_started_ = false;
  std::set<std::string, std::less<>> namespaces_created_;
  bool discovery_stale_ = false;
};

}  // namespace kstate::states
