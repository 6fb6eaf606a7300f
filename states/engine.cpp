// The states engine (see engine.hpp): prefetch of live objects per (resource,
// namespace), a dependency-ordered worker pool on one io_context, and the three
// state functions with their strategies, each in real or test (dryRun=All) mode.
#include "states/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <set>

#include "core/crd.hpp"
#include "core/log_fields.hpp"
#include "core/signal.hpp"
#include "states/adoption.hpp"
#include "states/applyset.hpp"
#include "states/compare.hpp"
#include "states/crd_versions.hpp"
#include "states/diff.hpp"
#include "states/inventory.hpp"
#include "states/normalize.hpp"
#include "states/ordering.hpp"
#include "states/present_decision.hpp"
#include "states/prune.hpp"
#include "states/read_ahead.hpp"
#include "states/readiness.hpp"
#include "states/requisites.hpp"
#include "states/scheduler.hpp"
#include "states/schema_validation.hpp"
#include "states/state_id_label.hpp"
#include "states/takeover.hpp"
#include "states/waits.hpp"

namespace kstate::states {
namespace {

using Clock = std::chrono::steady_clock;
using json::resource_version;
using json::string_at;
using manifests::Function;
using manifests::State;
using manifests::Strategy;

constexpr int replace_conflict_retries = 5;
constexpr int apply_conflict_attempts = 8;
// How long a state whose kind discovery still lists after its path answered 404 waits
// before writing again: an API server that has just established the CRD serves it
// within moments (recording 60: 2 s at most, and a held create is not a 404).
constexpr std::chrono::milliseconds not_served_pause{500};
// Distinct server warnings kept in one state's result (the server sends a handful).
constexpr std::size_t max_warnings_per_state = 16;
// How long an object_updated waits for an object kube-controller-manager makes in each
// new namespace (ServiceAccount `default`, ConfigMap `kube-root-ca.crt`).
constexpr std::chrono::milliseconds made_by_the_cluster_timeout{30000};

bool is_immutable_field_error(const Error& error) {
  if (error.kind != ErrorKind::invalid) {
    return false;
  }
  if (error.message.find("immutable") != std::string::npos) {
    return true;
  }
  for (const auto& cause : error.causes) {
    if (cause.message.find("immutable") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string immutable_fields(const Error& error) {
  std::string fields;
  for (const auto& cause : error.causes) {
    if (cause.message.find("immutable") != std::string::npos && !cause.field.empty()) {
      fields += (fields.empty() ? "" : ", ") + cause.field;
    }
  }
  return fields.empty() ? "a field" : fields;
}

// "apps.v1.Deployment.ns.name", the label kubectl diff gives the compared files.
std::string diff_label(const ObjectRef& ref) {
  std::string label = ref.gvk.group.empty() ? "" : ref.gvk.group + ".";
  label += ref.gvk.version + "." + ref.gvk.kind + ".";
  if (!ref.ns.empty()) {
    label += ref.ns + ".";
  }
  return label + ref.name;
}

std::string short_hash(std::string_view text) {
  return config_hash(json::Value(text.data(), text.size())).substr(0, 40);
}

// What a state sees of an object that does not exist.
const json::Value absent_object;

}  // namespace

std::string ObjectRef::display() const {
  return gvk.kind + "/" + (ns.empty() ? "" : ns + "/") + name;
}

// Per-run state of the engine.
struct Engine::Impl {
  struct Slot {
    // The object present() sends, built ahead while the live objects are being read
    // (EngineOptions::prepare_ahead); present() takes it.
    std::optional<json::Document> prepared;
    bool present_started = false;
    std::shared_ptr<const ApiResource> resource;  // shared by the states of one kind
    std::optional<Error> resolve_error;
    ObjectRef ref;
    StateResult result;
    bool selected = true;  // EngineOptions::selected
    bool failed = false;
    bool done = false;
    bool changed_something = false;  // made or (test mode) would make a change: onchanges, watch
    bool created = false;            // (or would be) created by this run
    std::string uid;                 // of the object as it exists after an object_present
    // Read it with a GET when the state runs, not from its pair: its namespace did not
    // exist when the pair was read, and the cluster makes an object of its name in every
    // new namespace; or a create found it made meanwhile.
    bool read_when_run = false;
    bool create_raced = false;                 // a create of it was answered 409 AlreadyExists
    bool rediscovered = false;                 // a write of it was answered 404 page not found (rediscover)
    std::optional<Clock::time_point> started;  // when execute() began it
    // The server's warnings on the requests made for this state (its pair's read
    // included), printable; they go into its result when it ends.
    std::vector<std::string> warnings;
    // An existing object kstate did not create, taken over by this write (adoption.hpp):
    // reported "adopted"; `adopted_from` names the tool that managed it, if any.
    bool adopting = false;
    std::string adopted_from;
    // The managers whose fields this object_present took over (takeover.hpp), and in
    // test mode the plan, to show what the apply after it would remove.
    std::vector<std::string> taken_over_from;
    std::optional<TakeoverPlan> takeover;
    // The last live_object() read it on its own, managedFields included (take_over).
    bool read_with_managed_fields = false;
  };
  // Live objects of one (resource, namespace) pair, read once. The objects point into
  // live_documents (a LIST answer is kept whole, not copied item by item).
  struct LiveSet {
    enum class Phase { unread, reading, read };
    Phase phase = Phase::unread;
    std::map<std::string, const json::Value*, std::less<>> objects;
    // States of the pair wait on it while its read is in flight; notified when it ends.
    std::unique_ptr<Signal> read_done;
  };

  DynamicClient& client;
  KindResolver& resolver;
  const EngineOptions& options;
  std::vector<State>& states;
  std::vector<Slot> slots;
  // Objects the engine wrote or read one by one share one pool; LIST answers keep
  // their own. Both are declared before live_sets, so they outlive the pointers into them.
  json::Allocator live_pool;
  std::deque<json::Document> live_documents;  // a deque: growing it moves no document
  std::map<std::string, LiveSet> live_sets;
  // The background read of every pair (Engine::run waits for it before returning).
  Clock::time_point run_started;
  std::optional<Result<Plan>> planned;
  // One background read: the slots of one pair, or of every pair of one kind when they
  // are read together across namespaces (see plan_prefetch). By when they run.
  struct PrefetchWork {
    std::vector<std::vector<std::size_t>> pairs;
    bool across_namespaces = false;
  };
  std::vector<PrefetchWork> prefetch_work;
  // Engine::start resolves each kind once, not once per state (later resolutions, of
  // the kinds CRDs add, ask the resolver each time).
  bool resolving_up_front = false;
  std::map<GroupVersionKind, std::shared_ptr<const ApiResource>> kinds_resolved_up_front;
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
    std::size_t slot = 0;  // the Namespace's state
    bool started = false;
    bool done = false;
    bool absent = false;               // only when the GET said 404
    std::unique_ptr<Signal> finished;  // notified when done
  };
  std::optional<ApiResource> namespaces_resource;                       // set when a Namespace is declared
  std::map<std::string, NamespaceCheck, std::less<>> namespace_checks;  // by declared name
  std::string namespaces_key;                                           // the live_sets key of the Namespaces' pair
  bool namespaces_read_by_name = false;                                 // that pair is one Namespace, read with a GET
  bool namespaces_read_started = false;
  bool prefetch_running = false;
  bool preparing = false;  // prepare_ahead() is running (it refers to this Impl)
  std::unique_ptr<Signal> prepared_all;
  std::unique_ptr<Signal> prefetch_done;
  // Test mode: Namespaces and CRD kinds that would only be created by this run.
  std::set<std::string> pending_namespaces;
  // Namespaces this run created: kube-controller-manager makes its objects in them a
  // moment later (made_in_every_namespace). Their states require the Namespace's.
  std::set<std::string, std::less<>> namespaces_created;
  // The CRDs this run creates or updates, the server's, and discovery's lag behind them.
  CrdVersions crd_versions;
  // Test mode: objects an object_present of this run would create ("Kind/ns/name").
  std::set<std::string> pending_objects;
  bool crd_established_since_refresh = false;
  // rediscover: discovery read again once per run, by the first state whose write met a
  // path the server does not serve; the others wait for that read.
  SharedResult<Status> rediscovered;
  // Warning texts already logged by this run (each is logged once per run).
  std::set<std::string, std::less<>> logged_warnings;
  bool discovery_stale = false;  // a request found a path discovery listed not served (served())

  Impl(DynamicClient& c, KindResolver& r, const EngineOptions& o, std::vector<State>& s)
      : client(c), resolver(r), options(o), states(s), slots(s.size()), crd_versions(c, r, o.sleep) {}

  static std::string live_key(const ApiResource& resource, const std::string& ns) {
    return resource.group + "/" + resource.version + "/" + resource.plural + "|" + ns;
  }

  asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) { co_await pause_for(options.sleep, duration); }

  WriteOptions write_options(bool apply) const {
    WriteOptions write;
    write.dry_run = options.test_mode;
    write.field_manager = options.field_manager;
    write.field_validation = "Strict";
    if (apply) {
      write.force = true;
    }
    return write;
  }

  // --- requests -----------------------------------------------------------------
  // Every DynamicClient call passes named lvalues: GCC 12 mis-destroys temporaries and
  // default arguments bound to coroutine parameters (a double free seen in practice).

  // A 404 that is not a Status ("404 page not found") on a read means the server does
  // not serve this resource's path: discovery is out of date (a CRD's plural, scope or
  // versions changed). Never "the object is absent": an error, and discovery is read
  // again at the end of the cycle (RunReport::discovery_stale). Writes meet the same
  // answer in present(), which reads discovery again at once (rediscover).
  Result<json::Document> served(const Slot& slot, Result<json::Document> answer) {
    if (answer.ok() || !answer.error().resource_not_served) {
      return answer;
    }
    discovery_stale = true;
    const ApiResource& resource = *slot.resource;
    return Error(ErrorKind::unsupported,
                 "the API server does not serve " + resource.plural + " in " + resource.api_version() +
                     (resource.namespaced ? " (namespaced)" : " (cluster-scoped)") +
                     " as discovery said (404 page not found): discovery is read again for the next cycle");
  }

  // Each state's requests go through a client that keeps the server's warnings for it.
  asio::awaitable<Result<json::Document>> read(Slot& slot) {
    std::string subresource;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return served(slot, co_await warned.get(*slot.resource, slot.ref.ns, slot.ref.name, subresource));
  }

  asio::awaitable<Result<json::Document>> read_all(Slot& slot, const ListOptions& list_options) {
    ListOptions list = list_options;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return served(slot, co_await warned.list(*slot.resource, slot.ref.ns, list));
  }

  asio::awaitable<Result<json::Document>> create(Slot& slot, const json::Value& object) {
    WriteOptions write = write_options(false);
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return co_await warned.create(*slot.resource, slot.ref.ns, object, write);
  }

  asio::awaitable<Result<json::Document>> put(Slot& slot, const json::Value& object) {
    WriteOptions write = write_options(false);
    std::string subresource;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return co_await warned.replace(*slot.resource, slot.ref.ns, slot.ref.name, object, write, subresource);
  }

  asio::awaitable<Result<json::Document>> patch(Slot& slot, PatchType type, const json::Value& body) {
    WriteOptions write = write_options(type == PatchType::apply);
    std::string text = json::dump(body);
    std::string subresource;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, type, text, write, subresource);
  }

  asio::awaitable<Result<json::Document>> delete_object(Slot& slot, const DeleteOptions& delete_options) {
    DeleteOptions remove_options = delete_options;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return co_await warned.remove(*slot.resource, slot.ref.ns, slot.ref.name, remove_options);
  }

  // The warnings of a read shared by several states (a pair's, a kind's LIST) are each
  // one's: a deprecated API's warning belongs to every object read through it.
  void share_warnings(const std::vector<std::string>& warnings, const std::vector<std::size_t>& members) {
    for (std::size_t i : members) {
      slots[i].warnings.insert(slots[i].warnings.end(), warnings.begin(), warnings.end());
    }
  }

  // --- resolution -----------------------------------------------------------

  asio::awaitable<void> resolve(std::size_t index) {
    Slot& slot = slots[index];
    const json::Value& object = states[index].object;
    slot.ref.gvk = make_gvk(json::string_or(json::find(object, "apiVersion"), ""),
                            json::string_or(json::find(object, "kind"), ""));
    slot.ref.name = string_at(object, {"metadata", "name"});
    std::shared_ptr<const ApiResource> known;
    if (resolving_up_front) {
      if (auto found = kinds_resolved_up_front.find(slot.ref.gvk); found != kinds_resolved_up_front.end()) {
        known = found->second;
      }
    }
    if (known) {
      set_resource(index, std::move(known));
      co_return;
    }
    auto resource = co_await resolver.resolve(slot.ref.gvk);
    if (!resource.ok() && resource.error().kind == ErrorKind::not_found && crd_established_since_refresh) {
      crd_established_since_refresh = false;
      (void)co_await resolver.refresh();
      resource = co_await resolver.resolve(slot.ref.gvk);
    }
    if (!resource.ok()) {
      slot.resolve_error = resource.error();
      co_return;
    }
    auto shared = std::make_shared<const ApiResource>(std::move(resource).value());
    if (resolving_up_front) {
      kinds_resolved_up_front.emplace(slot.ref.gvk, shared);
    }
    set_resource(index, std::move(shared));
  }

  void set_resource(std::size_t index, std::shared_ptr<const ApiResource> resource) {
    Slot& slot = slots[index];
    slot.resolve_error.reset();
    if (resource->namespaced) {
      std::string ns = string_at(states[index].object, {"metadata", "namespace"});
      slot.ref.ns = ns.empty() ? options.default_namespace : ns;
    } else {
      slot.ref.ns.clear();
    }
    slot.resource = std::move(resource);
  }

  // --- live objects -----------------------------------------------------------

  // Reads the live objects of every (resource, namespace) pair the states touch: one
  // GET when the pair holds a single named object, else one LIST. The reads run in
  // the background while the plan runs, the pairs of the states that run first read
  // first, and a state waits only for its own pair: so the first writes go out while
  // other pairs are still being read, instead of after every read.
  // A namespaced kind whose objects are all recorded in the inventory (options.recorded:
  // kstate wrote them, so they carry its ownership labels) and spread over several
  // namespaces is read with one LIST across namespaces selected by those labels, as
  // `kubectl get -A -l` would: a re-apply of 8 kinds in 10 namespaces sends 8 LISTs
  // instead of 80. A pair in which that LIST lacks one of the objects (deleted, or its
  // labels removed, by someone else) is then read on its own, so "absent" is only ever
  // concluded from a complete read.
  // Called synchronously before the plan starts: marks every pair as being read, so
  // that no state reads its object on its own meanwhile, and lists the reads to make.
  void plan_prefetch(const Plan& plan) {
    std::vector<std::size_t> position(slots.size(), slots.size());
    for (std::size_t order = 0; order < plan.topological_order.size(); ++order) {
      if (plan.topological_order[order] < slots.size()) {
        position[plan.topological_order[order]] = order;
      }
    }
    std::map<std::string, std::vector<std::size_t>> pairs;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].selected && slots[i].resource && !slots[i].ref.name.empty()) {
        pairs[live_key(*slots[i].resource, slots[i].ref.ns)].push_back(i);
      }
    }
    // Pairs grouped by kind (the key without its namespace).
    std::map<std::string, std::vector<std::vector<std::size_t>>> kinds;
    for (auto& [key, members] : pairs) {
      live_sets[key].phase = LiveSet::Phase::reading;
      const Slot& first = slots[members.front()];
      if (first.resource->group.empty() && first.resource->plural == "namespaces" && !first.resource->namespaced) {
        namespaces_resource = *first.resource;
        namespaces_key = key;
        namespaces_read_by_name = members.size() == 1;
        for (std::size_t i : members) {
          namespace_checks[slots[i].ref.name].slot = i;
        }
      }
      kinds[live_key(*first.resource, "")].push_back(std::move(members));
    }
    auto& work = prefetch_work;
    for (auto& [kind, kind_pairs] : kinds) {
      if (read_across_namespaces(kind_pairs) || listed_ahead(kind_pairs)) {
        work.push_back(PrefetchWork{std::move(kind_pairs), true});
        continue;
      }
      for (auto& members : kind_pairs) {
        work.push_back(PrefetchWork{{std::move(members)}, false});
      }
    }
    auto first_position = [&](const PrefetchWork& read) {
      std::size_t first = slots.size();
      for (const auto& members : read.pairs) {
        for (std::size_t i : members) {
          first = std::min(first, position[i]);
        }
      }
      return first;
    };
    std::stable_sort(work.begin(), work.end(),
                     [&](const auto& a, const auto& b) { return first_position(a) < first_position(b); });
  }

  bool read_across_namespaces(const std::vector<std::vector<std::size_t>>& kind_pairs) const {
    if (kind_pairs.size() < 2 || !options.recorded || options.ownership_labels.empty() ||
        !slots[kind_pairs.front().front()].resource->namespaced) {
      return false;
    }
    for (const auto& members : kind_pairs) {
      for (std::size_t i : members) {
        if (!options.recorded(slots[i].ref)) {
          return false;
        }
      }
    }
    return true;
  }

  bool listed_ahead(const std::vector<std::vector<std::size_t>>& kind_pairs) const {
    const ApiResource& resource = *slots[kind_pairs.front().front()].resource;
    return options.read_ahead && resource.namespaced && options.read_ahead->started(resource.gvk());
  }

  // Marks a pair read (or unread: its states then read their objects one by one and
  // report) and wakes the states waiting for it. Objects remembered meanwhile
  // (generateName look-ups) are newer than the read, so they are kept.
  void finish_pair_read(const std::string& key, std::vector<std::pair<std::string, const json::Value*>>& found,
                        bool read_ok) {
    LiveSet& set = live_sets[key];
    for (auto& [name, object] : found) {
      set.objects.emplace(std::move(name), object);
    }
    set.phase = read_ok ? LiveSet::Phase::read : LiveSet::Phase::unread;
    if (set.read_done) {
      set.read_done->notify();
    }
  }

  // What kube-controller-manager creates in every namespace, moments after the namespace:
  // the serviceaccount controller's ServiceAccount `default` and the root-ca-cert-publisher's
  // ConfigMap `kube-root-ca.crt`. Declared in a namespace this run creates, each is read
  // when its state runs (after the Namespace), so that kstate updates the controller's
  // object (or refuses it, without adopt) instead of reporting it created.
  static bool made_in_every_namespace(const ApiResource& resource, const std::string& name) {
    return resource.group.empty() && ((resource.kind == "ServiceAccount" && name == "default") ||
                                      (resource.kind == "ConfigMap" && name == "kube-root-ca.crt"));
  }

  // Whether kube-controller-manager makes this state's object in a namespace this run
  // created (so it may appear after the namespace's pair was read).
  bool made_by_the_cluster_here(std::size_t index) const {
    const Slot& slot = slots[index];
    return slot.resource && !slot.ref.ns.empty() && namespaces_created.count(slot.ref.ns) > 0 &&
           made_in_every_namespace(*slot.resource, slot.ref.name);
  }

  asio::awaitable<void> check_finished(NamespaceCheck& check) {
    if (check.done) {
      co_return;
    }
    if (!check.finished) {
      check.finished = std::make_unique<Signal>(co_await asio::this_coro::executor);
    }
    while (!check.done) {
      co_await check.finished->wait();
    }
  }

  // A declared Namespace is not written while its GET, asking whether it exists, is in
  // flight: that GET would find this run's own new Namespace, and the pairs in it would
  // be read for nothing.
  asio::awaitable<void> namespace_check_finished(std::size_t index) {
    const Slot& slot = slots[index];
    if (!slot.resource || namespaces_key.empty() || live_key(*slot.resource, slot.ref.ns) != namespaces_key) {
      co_return;
    }
    auto check = namespace_checks.find(slot.ref.name);
    if (check != namespace_checks.end() && check->second.started) {
      co_await check_finished(check->second);
    }
  }

  // Whether the declared Namespace `ns` does not exist: read once, by the first caller
  // (the others wait for that read). False when it is not declared, or its GET failed
  // (e.g. 403: kstate cannot tell, so its pairs are read).
  asio::awaitable<bool> namespace_absent(const std::string& ns) {
    auto check = namespace_checks.find(ns);
    if (check == namespace_checks.end() || !namespaces_resource) {
      co_return false;
    }
    const bool likely_new =
        !namespaces_read_by_name && options.recorded && !options.recorded(slots[check->second.slot].ref);
    if (namespaces_read_started) {
      // (never waited for before it started: it may be waiting for a free slot)
      LiveSet& namespaces = live_sets[namespaces_key];
      if (!likely_new) {
        co_await read_finished(namespaces);
      }
      if (namespaces.phase == LiveSet::Phase::read) {
        if (namespaces.objects.count(ns) > 0) {
          co_return false;
        }
        if (namespaces_read_by_name) {
          co_return true;
        }
      }
    }
    NamespaceCheck& state = check->second;
    if (state.started) {
      co_await check_finished(state);
      co_return state.absent;
    }
    state.started = true;
    // Done however the read ends (an exception too), so that no pair waits forever.
    struct MarkDone {
      NamespaceCheck& state;
      ~MarkDone() {
        state.done = true;
        if (state.finished) {
          state.finished->notify();
        }
      }
    } mark_done{state};
    std::string subresource;
    std::string cluster_scope;
    auto got = co_await client.get(*namespaces_resource, cluster_scope, ns, subresource);
    state.absent = !got.ok() && got.error().kind == ErrorKind::not_found;
    co_return state.absent;
  }

  asio::awaitable<void> read_finished(LiveSet& set) {
    if (set.phase != LiveSet::Phase::reading) {
      co_return;
    }
    if (!set.read_done) {
      set.read_done = std::make_unique<Signal>(co_await asio::this_coro::executor);
    }
    while (set.phase == LiveSet::Phase::reading) {
      co_await set.read_done->wait();
    }
  }

  // One pair on its own: a GET for a single object, else a LIST of the namespace;
  // nothing when its namespace was just found absent (it then holds no object; one
  // created meanwhile is the same race as one created after any read).
  asio::awaitable<void> read_pair(const std::vector<std::size_t>& members) {
    Slot& first = slots[members.front()];
    const std::size_t warned_before = first.warnings.size();
    const std::string key = live_key(*first.resource, first.ref.ns);
    bool read_ok = false;
    std::vector<std::pair<std::string, const json::Value*>> found;
    if (key == namespaces_key) {
      namespaces_read_started = true;
    } else if (first.resource->namespaced) {
      const bool absent_namespace = co_await namespace_absent(first.ref.ns);
      if (absent_namespace) {
        for (std::size_t i : members) {
          slots[i].read_when_run = made_in_every_namespace(*slots[i].resource, slots[i].ref.name);
        }
        finish_pair_read(key, found, true);
        co_return;
      }
    }
    const ListOptions everything;
    if (members.size() == 1) {
      auto got = co_await read(first);
      if (got.ok()) {
        live_documents.push_back(std::move(got).value());
        found.emplace_back(first.ref.name, &live_documents.back());
        read_ok = true;
      } else if (got.error().kind == ErrorKind::not_found) {
        read_ok = true;
      }
    } else {
      auto listed = co_await read_all(first, everything);
      if (listed.ok()) {
        live_documents.push_back(std::move(listed).value());
        const json::Value* items = json::find(live_documents.back(), "items");
        if (items != nullptr && items->IsArray()) {
          for (const auto& item : items->GetArray()) {
            found.emplace_back(string_at(item, {"metadata", "name"}), &item);
          }
        }
        read_ok = true;
      }
    }
    if (first.warnings.size() > warned_before) {
      const std::vector<std::string> warnings(first.warnings.begin() + static_cast<std::ptrdiff_t>(warned_before),
                                              first.warnings.end());
      share_warnings(warnings, std::vector<std::size_t>(members.begin() + 1, members.end()));
    }
    finish_pair_read(key, found, read_ok);
  }

  // Every pair of one kind: one LIST across namespaces selected by the ownership
  // labels; the pairs it does not fully answer (or all, when it fails: e.g. no
  // permission to list across namespaces) are then read on their own.
  asio::awaitable<void> read_kind(const std::vector<std::vector<std::size_t>>& kind_pairs) {
    const Slot& first = slots[kind_pairs.front().front()];
    ListOptions owned;
    owned.label_selector = label_selector(options.ownership_labels);
    ApiResource resource = *first.resource;
    std::optional<Result<json::Document>> ahead;
    if (options.read_ahead) {
      ahead = co_await options.read_ahead->take(resource);
    }
    std::string all_namespaces;
    Result<json::Document> listed = Error(ErrorKind::internal, "not listed");
    if (ahead) {
      listed = std::move(*ahead);
    } else {
      std::vector<std::string> warnings;
      DynamicClient warned = client.collecting_warnings(warnings);
      listed = co_await warned.list(resource, all_namespaces, owned);
      for (const auto& members : kind_pairs) {
        share_warnings(warnings, members);
      }
    }
    std::vector<const std::vector<std::size_t>*> unanswered;
    if (!listed.ok()) {
      for (const auto& members : kind_pairs) {
        unanswered.push_back(&members);
      }
    } else {
      live_documents.push_back(std::move(listed).value());
      // namespace -> name -> object
      std::map<std::string, std::map<std::string, const json::Value*>, std::less<>> by_namespace;
      if (const json::Value* items = json::find(live_documents.back(), "items"); items != nullptr && items->IsArray()) {
        for (const auto& item : items->GetArray()) {
          by_namespace[string_at(item, {"metadata", "namespace"})][string_at(item, {"metadata", "name"})] = &item;
        }
      }
      for (const auto& members : kind_pairs) {
        const std::string& ns = slots[members.front()].ref.ns;
        auto listed_here = by_namespace.find(ns);
        bool complete = listed_here != by_namespace.end();
        for (std::size_t i = 0; complete && i < members.size(); ++i) {
          complete = listed_here->second.count(slots[members[i]].ref.name) != 0;
        }
        if (!complete) {
          unanswered.push_back(&members);
          continue;
        }
        std::vector<std::pair<std::string, const json::Value*>> found(listed_here->second.begin(),
                                                                      listed_here->second.end());
        finish_pair_read(live_key(resource, ns), found, true);
      }
    }
    for (const auto* members : unanswered) {
      co_await read_pair(*members);
    }
  }

  asio::awaitable<void> prefetch() {
    co_await for_each_bounded(prefetch_work.size(), options.concurrency, [&](std::size_t w) -> asio::awaitable<void> {
      const PrefetchWork& read = prefetch_work[w];
      if (read.across_namespaces) {
        co_await read_kind(read.pairs);
      } else {
        co_await read_pair(read.pairs.front());
      }
    });
  }

  // The reads and the preparation started by Engine::start have ended (their
  // coroutines refer to this Impl).
  asio::awaitable<void> background_finished() {
    while (prefetch_running) {
      co_await prefetch_done->wait();
    }
    while (preparing) {
      co_await prepared_all->wait();
    }
  }

  // Builds the objects the object_present states will send, in plan order, while
  // their live objects are still being read: a re-apply otherwise waits for the LIST
  // answers with this thread idle, then builds all of them. Yields to the other
  // handlers every few objects, so that an answer is taken as soon as it arrives.
  asio::awaitable<void> prepare_ahead(const Plan& plan) {
    auto executor = co_await asio::this_coro::executor;
    std::size_t since_yield = 0;
    for (std::size_t node : plan.topological_order) {
      if (node >= slots.size()) {
        continue;
      }
      Slot& slot = slots[node];
      if (!slot.selected || !slot.resource || slot.ref.name.empty() || slot.present_started ||
          states[node].function != Function::object_present) {
        continue;
      }
      slot.prepared = desired_object(node);
      if (++since_yield == 16) {
        since_yield = 0;
        co_await asio::post(executor, asio::use_awaitable);
      }
    }
  }

  // The live object of a state: from its pair's read (waiting for it when in flight),
  // else one GET. Points at a null value when the object does not exist. The object
  // stays valid for the whole run (live documents are never freed before its end).
  asio::awaitable<Result<const json::Value*>> live_object(std::size_t index, bool fresh = false) {
    Slot& slot = slots[index];
    slot.read_with_managed_fields = false;
    const std::string key = live_key(*slot.resource, slot.ref.ns);
    if (!fresh) {
      auto it = live_sets.find(key);
      if (it != live_sets.end()) {
        co_await read_finished(it->second);
      }
      // (after the wait: the pair's read may have found its namespace absent meanwhile)
      fresh = slot.read_when_run;
      if (!fresh && it != live_sets.end() && it->second.phase == LiveSet::Phase::read) {
        auto object = it->second.objects.find(slot.ref.name);
        co_return object == it->second.objects.end() ? &absent_object : object->second;
      }
    }
    slot.read_when_run = false;
    // With its managedFields: an object read on its own is often one to take over (made
    // by someone else meanwhile), and then no second read is needed (take_over).
    auto got = co_await client.get_with_managed_fields(*slot.resource, slot.ref.ns, slot.ref.name);
    slot.read_with_managed_fields = got.ok();
    if (!got.ok() && got.error().kind == ErrorKind::not_found) {
      co_return &absent_object;
    }
    if (!got.ok()) {
      co_return got.error();
    }
    live_documents.push_back(std::move(got).value());
    const json::Value* object = &live_documents.back();
    live_sets[key].objects[slot.ref.name] = object;
    co_return object;
  }

  void remember_live(std::size_t index, const json::Value& object) {
    json::Document copy(&live_pool);
    copy.CopyFrom(object, live_pool);
    remember_live(index, std::move(copy));
  }
  // A whole answer is kept as it is (no copy); returns where it is kept.
  const json::Value& remember_live(std::size_t index, json::Document&& object) {
    Slot& slot = slots[index];
    live_documents.push_back(std::move(object));
    live_sets[live_key(*slot.resource, slot.ref.ns)].objects[slot.ref.name] = &live_documents.back();
    return live_documents.back();
  }

  // --- bounded parallelism ----------------------------------------------------

  // Runs task(0..count-1) with at most options.concurrency in flight.
  // What the ordering planner needs to know about each state.
  std::vector<PlanItem> plan_items() const {
    std::vector<PlanItem> items(states.size());
    for (std::size_t i = 0; i < states.size(); ++i) {
      const State& state = states[i];
      const Slot& slot = slots[i];
      PlanItem& item = items[i];
      item.id = state.id;
      item.function = state.function;
      item.group = slot.ref.gvk.group;
      item.kind = slot.ref.gvk.kind;
      item.ns = slot.resource ? slot.ref.ns : string_at(state.object, {"metadata", "namespace"});
      item.name = slot.ref.name;
      item.require = state.require;
      item.parent_id = state.parent_id;
      item.require_in = state.require_in;
      item.onchanges = state.onchanges;
      item.watch = state.watch;
      item.sls_file = state.sls_file;
      if (is_crd(slot.ref.gvk)) {
        item.defines_group = string_at(state.object, {"spec", "group"});
        item.defines_kind = string_at(state.object, {"spec", "names", "kind"});
      }
    }
    return items;
  }

  // Walks the plan (states/scheduler.hpp): a node starts once every node it waits for
  // is done, at most options.concurrency states at a time; barrier nodes complete at once.
  asio::awaitable<void> run_plan(const Plan& plan) {
    // (a named function: GCC 12 mis-destroys temporaries bound to coroutine parameters)
    const std::function<asio::awaitable<void>(std::size_t)> run_node =
        [this, &plan](std::size_t node) -> asio::awaitable<void> {
      if (node < plan.item_count && slots[node].selected) {
        co_await execute(node, plan.nodes[node]);
      }
    };
    co_await states::run_plan(plan, options.concurrency, run_node);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].selected && !slots[i].done) {
        start_result(i);
        fail(i, "not run: its dependencies never completed");
      }
    }
  }

  // --- results ------------------------------------------------------------------

  void fail(std::size_t index, std::string comment) {
    Slot& slot = slots[index];
    slot.failed = true;
    slot.done = true;
    slot.result.result = false;
    slot.result.comment = std::move(comment);
    log_with(log_fields(slot, "failed"), spdlog::level::warn, "failed {} ({}): {}", slot.result.name,
             slot.result.source.to_string(), one_line(slot.result.comment));
  }

  // What a JSON log line about this slot's state carries besides its message.
  LogFields log_fields(const Slot& slot, std::string_view action) const {
    LogFields fields;
    fields.state_id = slot.result.id;
    fields.kind = slot.ref.gvk.kind;
    fields.namespace_name = slot.ref.ns;
    fields.name = slot.ref.name;
    fields.action = action;
    fields.file = slot.result.source.file;
    fields.line = slot.result.source.line;
    if (slot.started) {
      fields.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - *slot.started).count();
    }
    return fields;
  }

  // A comment on one log line: the lines after the first (each field an Invalid answer
  // or a local check names: "  * spec.replicas: ...") joined with "; ".
  static std::string one_line(std::string_view comment) {
    std::string line;
    for (std::size_t at = 0; at <= comment.size();) {
      std::size_t end = std::min(comment.find('\n', at), comment.size());
      std::string_view part = comment.substr(at, end - at);
      while (part.starts_with(' ')) {
        part.remove_prefix(1);
      }
      if (part.starts_with("* ")) {
        part.remove_prefix(2);
      }
      if (!part.empty()) {
        line += (line.empty() ? "" : "; ") + std::string(part);
      }
      at = end + 1;
    }
    return line;
  }

  void succeed(std::size_t index, std::string comment) {
    Slot& slot = slots[index];
    slot.done = true;
    slot.result.result = true;
    slot.result.comment = std::move(comment);
  }

  // A change made (real mode) or pending (test mode), with its diff.
  void changed(std::size_t index, Change change, const std::string& diff) {
    Slot& slot = slots[index];
    slot.done = true;
    slot.result.change = change;
    const std::string verb = to_string(change);
    slot.changed_something = true;
    slot.created = slot.created || change == Change::created;
    if (!options.record_diffs) {
      set_only_change(slot.result.changes, verb, slot.result.name);
    } else if (!diff.empty()) {
      set_only_change(slot.result.changes, "diff", diff);
    }
    if (options.test_mode) {
      slot.result.result = std::nullopt;
      slot.result.comment = slot.result.comment.empty() ? "would be " + verb : slot.result.comment;
    } else {
      slot.result.result = true;
      slot.result.comment = verb;
      log_with(log_fields(slot, verb), spdlog::level::info, "{} {} ({})", verb, slot.result.name,
               slot.result.source.to_string());
    }
    if (change == Change::deleted) {
      json::set_string(slot.result.changes, "deleted", slot.result.name, slot.result.changes.GetAllocator());
    }
  }

  // changes[key] = text. Built in one chunk that fits when it is the first change:
  // set_string's member array has room for 16 (512 bytes) and left a long text a chunk
  // of its own, 3 KB for a 1 KB diff (2 MB of a 1,000-object cold apply).
  static void set_only_change(json::Document& changes, std::string_view key, std::string_view text) {
    if (!changes.IsObject() || !changes.ObjectEmpty()) {
      json::set_string(changes, key, text, changes.GetAllocator());
      return;
    }
    changes.GetAllocator().reserve(sizeof(json::Value) * 2 + key.size() + text.size() + 32);
    auto one_member = [key, text](json::Document& document) {
      return document.StartObject() && document.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()), true) &&
             document.String(text.data(), static_cast<rapidjson::SizeType>(text.size()), true) && document.EndObject(1);
    };
    changes.Populate(one_member);
  }

  // --- state functions --------------------------------------------------------

  void start_result(std::size_t index) {
    Slot& slot = slots[index];
    const State& state = states[index];
    slot.result.id = state.id;
    slot.result.function = state.function;
    slot.result.source = state.source;
    slot.result.name =
        slot.resource ? slot.ref.display() : slot.ref.gvk.kind + "/" + string_at(state.object, {"metadata", "name"});
  }

  asio::awaitable<void> execute(std::size_t index, const PlanNode& node) {
    auto started = Clock::now();
    Slot& slot = slots[index];
    slot.started = started;
    start_result(index);
    std::vector<RequisiteStatus> requisites;
    for (std::size_t d : node.requires_nodes) {
      if (d >= slots.size()) {
        continue;
      }
      RequisiteStatus& status = requisites.emplace_back();
      status.id = states[d].id;
      status.outcome = slots[d].failed              ? RequisiteOutcome::failed
                       : slots[d].changed_something ? RequisiteOutcome::changed
                                                    : RequisiteOutcome::unchanged;
      status.onchanges = std::binary_search(node.onchanges_nodes.begin(), node.onchanges_nodes.end(), d);
      status.watched = std::binary_search(node.watch_nodes.begin(), node.watch_nodes.end(), d);
    }
    RunDecision decision = decide_run(requisites);
    switch (decision.action) {
      case BeforeRun::requisite_failed:
        fail(index, decision.comment);
        co_return;
      case BeforeRun::no_onchanges_change:
        succeed(index, decision.comment);
        co_return;
      case BeforeRun::run:
        break;
    }
    if (!states[index].left_alone_by.empty()) {
      succeed(index,
              "left alone (" + states[index].left_alone_by + "): kstate neither creates, changes nor deletes it");
      co_return;
    }
    if (!slot.resource) {
      co_await resolve(index);
      start_result(index);
    }
    try {
      co_await dispatch(index);
      if (!decision.watched_changes.empty()) {
        co_await restart_for_watch(index, decision.watched_changes);
      }
    } catch (const std::exception& e) {
      fail(index, std::string("internal error: ") + e.what());
    }
    report_warnings(index);
    slot.result.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  }

  // The fields of this state's object left to other writers: its annotation's and the
  // config rules matching it.
  std::vector<std::string> ignored_fields(std::size_t index) const {
    std::vector<std::string> pointers = states[index].ignore_fields;
    const ObjectRef& ref = slots[index].ref;
    for (const auto& rule : options.ignore_fields) {
      if (rule.matches(ref.gvk.group, ref.gvk.kind, ref.ns, ref.name)) {
        pointers.insert(pointers.end(), rule.pointers.begin(), rule.pointers.end());
      }
    }
    return pointers;
  }

  // Before an apply of an existing object with ignored fields: the ones another manager
  // owns leave the apply, so that kstate's ownership of them goes (ignore_fields.hpp).
  // Reads the object with its managedFields when `live` lacks them or is no longer
  // current (one GET, only for such objects and only when kstate writes).
  asio::awaitable<void> give_up_ignored_fields(std::size_t index, json::Document& desired, const json::Value& live,
                                               bool live_is_current) {
    const std::vector<std::string> pointers = ignored_fields(index);
    if (pointers.empty() || live.IsNull()) {
      co_return;
    }
    if (live_is_current && json::find_path(live, {"metadata", "managedFields"}) != nullptr) {
      manifests::give_up_fields(desired, live, pointers, options.field_manager);
      co_return;
    }
    Slot& slot = slots[index];
    auto whole = co_await client.get_with_managed_fields(*slot.resource, slot.ref.ns, slot.ref.name);
    if (whole.ok()) {
      manifests::give_up_fields(desired, *whole, pointers, options.field_manager);
    }
  }

  // A `watch` requisite changed something: restart the workload as `kubectl rollout
  // restart` does (its pod template gets a new restartedAt annotation, under a field
  // manager of its own so that kstate's applies neither own nor remove it).
  asio::awaitable<void> restart_for_watch(std::size_t index, const std::vector<std::string>& watched_changes) {
    Slot& slot = slots[index];
    RestartInput input;
    input.watched_changes = watched_changes;
    input.group = slot.ref.gvk.group;
    input.kind = slot.ref.gvk.kind;
    input.function = states[index].function;
    input.state_failed = slot.failed || !slot.resource;
    input.created = slot.created;
    input.test_mode = options.test_mode;
    std::string because;
    for (const auto& id : watched_changes) {
      because += (because.empty() ? "" : ", ") + id;
    }
    auto& changes = slot.result.changes;
    const Restart restart = decide_restart(input);
    if (restart == Restart::none || restart == Restart::not_a_workload) {
      co_return;
    }
    if (restart == Restart::would_restart) {
      json::set_string(changes, "restart", "would be restarted: " + because + " would change", changes.GetAllocator());
      slot.changed_something = true;
      slot.result.result = std::nullopt;
      slot.result.comment += "; would be restarted (watch: " + because + ")";
      co_return;
    }
    const std::string timestamp = format_time(options.now());
    WriteOptions write = write_options(false);
    write.field_manager = options.field_manager + "-rollout";
    std::string subresource;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    auto patched = co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::strategic,
                                         restart_patch(timestamp), write, subresource);
    if (!patched.ok()) {
      fail(index, slot.result.comment + "; restart (watch: " + because + ") failed: " + patched.error().describe());
      co_return;
    }
    json::set_string(changes, "restarted", std::string(restarted_at_annotation) + "=" + timestamp,
                     changes.GetAllocator());
    slot.changed_something = true;
    slot.result.comment += "; restarted (watch: " + because + " changed)";
    spdlog::info("restarted {} ({}): watch {} changed", slot.result.name, slot.result.source.to_string(), because);
  }

  // The server's warnings on this state's requests go into its result, each once and
  // at most max_warnings_per_state, as kubectl shows them ("Warning: ..."); the log has
  // each distinct text once per run (a daemon cycle), with the first state it came with.
  void report_warnings(std::size_t index) {
    Slot& slot = slots[index];
    auto& shown = slot.result.warnings;
    std::size_t left_out = 0;
    for (auto& text : slot.warnings) {
      if (std::find(shown.begin(), shown.end(), text) != shown.end()) {
        continue;
      }
      if (shown.size() >= max_warnings_per_state) {
        ++left_out;
        continue;
      }
      if (logged_warnings.insert(text).second) {
        spdlog::warn("Warning: {} ({}, {})", text, slot.result.name, slot.result.source.to_string());
      }
      shown.push_back(std::move(text));
    }
    if (left_out > 0) {
      shown.push_back("(" + std::to_string(left_out) + " more warnings not shown)");
    }
    slot.warnings.clear();
  }

  asio::awaitable<void> dispatch(std::size_t index) {
    Slot& slot = slots[index];
    State& state = states[index];
    if (!slot.resource && !options.test_mode && state.function != Function::object_absent) {
      co_await until_discovery_lists_version(index);
    }
    if (!slot.resource) {
      const json::Value* crd = crd_versions.created_crd(slot.ref.gvk);
      if (options.test_mode && crd != nullptr && state.function != Function::object_absent) {
        co_await pending_custom_resource(index, *crd);
        co_return;
      }
      const json::Value* updated_crd = crd_versions.updated_crd(slot.ref.gvk);
      if (updated_crd != nullptr && slot.resolve_error->kind == ErrorKind::not_found) {
        if (state.function == Function::object_absent) {
          // (test mode: the dry run's answer, which the server does not run yet)
          co_await absent_in_version_added_by_update(index, *updated_crd, options.test_mode);
          co_return;
        }
        if (options.test_mode) {
          version_added_by_update(index, *updated_crd);
          co_return;
        }
      }
      if (state.function == Function::object_absent && slot.resolve_error->kind == ErrorKind::not_found) {
        // Discovery may lag behind an update of the kind's CRD that this run did not
        // make (an earlier run, a daemon cycle of other files, someone else): when it
        // lists the kind in another version, the CRD itself says whether this one is
        // served. A kind discovery does not list at all (an uninstalled operator's, a
        // removed built-in) costs no request.
        const bool kind_listed = co_await crd_versions.listed_in_another_version(slot.ref.gvk);
        if (!kind_listed) {
          succeed(index, "already absent (the server has no kind " + slot.ref.gvk.qualified_kind() + ")");
          co_return;
        }
        auto live_crd = co_await crd_versions.live_crd(slot.ref.gvk.group, slot.ref.gvk.kind);
        if (!live_crd.ok() && live_crd.error().kind == ErrorKind::forbidden) {
          // A user who may not list CRDs (namespaced rights only) sees what discovery
          // shows, as before this look-up.
          succeed(index, "already absent (the server has no kind " + slot.ref.gvk.qualified_kind() + ")");
          co_return;
        }
        if (!live_crd.ok()) {
          fail(index, "cannot tell whether kind " + slot.ref.gvk.qualified_kind() +
                          " exists: listing CustomResourceDefinitions: " + live_crd.error().describe());
          co_return;
        }
        if (*live_crd != nullptr && CrdVersions::serves_kinds(**live_crd)) {
          const bool dry_run_crd = false;
          co_await absent_in_version_added_by_update(index, **live_crd, dry_run_crd);
          co_return;
        }
        succeed(index, "already absent (the server has no kind " + slot.ref.gvk.qualified_kind() + ")");
        co_return;
      }
      fail(index, slot.resolve_error->describe());
      co_return;
    }
    if (options.test_mode && !slot.ref.ns.empty() && pending_namespaces.count(slot.ref.ns) > 0) {
      co_await pending_namespace(index);
      co_return;
    }
    switch (state.function) {
      case Function::object_present:
        co_await present(index);
        break;
      case Function::object_updated:
        co_await updated(index);
        break;
      case Function::object_absent:
        co_await absent(index);
        break;
    }
  }

  // Test mode: the namespace of this object is itself only created by this run, so
  // the server cannot validate the object yet.
  asio::awaitable<void> pending_namespace(std::size_t index) {
    Slot& slot = slots[index];
    State& state = states[index];
    std::string why = "server validation skipped because namespace " + slot.ref.ns + " does not exist yet";
    if (state.function == Function::object_absent) {
      succeed(index, "already absent (namespace " + slot.ref.ns + " does not exist yet)");
    } else if (state.function == Function::object_updated && pending_objects.count(slot.ref.display()) == 0 &&
               made_in_every_namespace(*slot.resource, slot.ref.name)) {
      json::Document desired = desired_object(index, false);
      changed(index, Change::updated, object_diff(json::Value(), desired, diff_label(slot.ref)));
      slot.result.comment = "would be updated once kube-controller-manager makes it in the new namespace; " + why;
    } else if (state.function == Function::object_updated && pending_objects.count(slot.ref.display()) == 0) {
      fail(index, slot.ref.display() + " does not exist (namespace " + slot.ref.ns + " does not exist yet)");
    } else if (state.function == Function::object_updated) {
      co_await would_update_created(index);
    } else {
      // Even a dry run answers 404 here (recording 41): what the server would refuse is
      // found against the schema it publishes, so that no object shown as "would be
      // created" fails half-way through the real apply.
      json::Document desired = desired_object(index);
      const std::string not_yet = "namespace " + slot.ref.ns + " does not exist yet";
      LocalCheck check = co_await check_locally(index, desired, not_yet);
      if (check.outcome == LocalCheck::Outcome::invalid) {
        fail(index, check.text);
        co_return;
      }
      changed(index, Change::created, object_diff(json::Value(), desired, diff_label(slot.ref)));
      slot.result.comment = "would be created; " + check.text + " (" + why + ")";
      pending_objects.insert(slot.ref.display());
    }
    co_return;
  }

  // What test mode found checking an object locally (check_locally).
  struct LocalCheck {
    enum class Outcome { valid, invalid, not_validated };
    Outcome outcome = Outcome::not_validated;
    // What it was checked against (valid), that and each violation (invalid), or why
    // it could not be checked (not_validated): said in the state's result.
    std::string text;
  };

  // Checks an object the server cannot validate yet against the schema the server
  // publishes for its kind (OpenAPI v3), or, for a custom resource whose group version
  // the server does not publish, against its CustomResourceDefinition's schema.
  // `not_yet`: why the server cannot check it (for the message).
  asio::awaitable<LocalCheck> check_locally(std::size_t index, const json::Value& object, const std::string& not_yet,
                                            Completeness completeness = Completeness::whole_object) {
    const GroupVersionKind gvk = slots[index].ref.gvk;
    auto verdict = [&not_yet](const std::vector<SchemaViolation>& violations, const std::string& against) {
      if (violations.empty()) {
        return LocalCheck{LocalCheck::Outcome::valid, "validated locally against " + against};
      }
      std::string text = "invalid against " + against + " (checked locally: " + not_yet + "):";
      for (const auto& violation : violations) {
        text += "\n  " + violation.message;
      }
      return LocalCheck{LocalCheck::Outcome::invalid, std::move(text)};
    };
    // A kind whose CRD this run creates or updates: that CRD's schema, as it will be.
    for (const json::Value* crd : {crd_versions.created_crd(gvk), crd_versions.updated_crd(gvk)}) {
      if (crd != nullptr) {
        auto schema = crd_version_schema(*crd, gvk.version);
        if (schema.ok() && *schema != nullptr) {
          co_return verdict(validate_against_schema(object, **schema, completeness),
                            "the schema of CustomResourceDefinition " + string_at(*crd, {"metadata", "name"}));
        }
      }
    }
    auto published = co_await resolver.published_schema(gvk);
    if (published.ok() && published->has_value()) {
      const discovery::PublishedSchema& found = **published;
      co_return verdict(validate_against_openapi(object, *found.schema, *found.components, completeness),
                        "the server's OpenAPI schema of " + gvk.api_version() + " " + gvk.kind);
    }
    std::string why_not = published.ok()
                              ? "the server publishes no OpenAPI schema for " + gvk.api_version() + " " + gvk.kind
                              : published.error().describe();
    if (!gvk.group.empty()) {
      auto crd = co_await crd_versions.live_crd(gvk.group, gvk.kind);
      if (crd.ok() && *crd != nullptr) {
        const std::string crd_name = string_at(**crd, {"metadata", "name"});
        auto schema = crd_version_schema(**crd, gvk.version);
        if (schema.ok() && *schema != nullptr) {
          co_return verdict(validate_against_schema(object, **schema, completeness),
                            "the schema of CustomResourceDefinition " + crd_name);
        }
        why_not += schema.ok()
                       ? "; version " + gvk.version + " of CustomResourceDefinition " + crd_name + " has no schema"
                       : "; " + schema.error().message;
      }
    }
    co_return LocalCheck{LocalCheck::Outcome::not_validated, "not validated: " + why_not};
  }

  // Test mode: a custom resource the server cannot take yet (its CRD, or the version it
  // uses, only comes with this run): names it in the CRD's scope.
  void name_custom_resource(std::size_t index, const json::Value& crd) {
    Slot& slot = slots[index];
    if (string_at(crd, {"spec", "scope"}) != "Cluster") {
      std::string ns = string_at(states[index].object, {"metadata", "namespace"});
      slot.ref.ns = ns.empty() ? options.default_namespace : ns;
    }
    slot.result.name = slot.ref.display();
  }

  // The kind's CRD, as this run updated it (or found it), serves the version the state
  // names, but the API server's discovery lists a version an update adds a moment later
  // (its discovery controller catches up from an informer): the state waits for it,
  // reading discovery again with a growing pause (one read at a time for all the states
  // waiting), instead of failing with "no kind". Resolved when it returns, unless the
  // wait timed out (the state then fails saying so).
  asio::awaitable<void> until_discovery_lists_version(std::size_t index) {
    Slot& slot = slots[index];
    if (!slot.resolve_error || slot.resolve_error->kind != ErrorKind::not_found) {
      co_return;
    }
    if (!crd_versions.awaits_discovery(slot.ref.gvk)) {
      co_return;
    }
    auto listed = co_await crd_versions.until_discovery_lists(slot.ref.gvk);
    if (!listed.ok()) {
      slot.resolve_error = listed.error();
      co_return;
    }
    co_await resolve(index);  // (found in what discovery answered: no request)
    slot.result.name = slot.ref.display();
  }

  // Test mode: this run's update of the CRD adds the version this custom resource
  // uses, so the server can neither read nor validate it in that version yet: it is
  // checked against that version's schema here, and shown whole, as it would be applied.
  void version_added_by_update(std::size_t index, const json::Value& crd) {
    Slot& slot = slots[index];
    name_custom_resource(index, crd);
    const std::string& version = slot.ref.gvk.version;
    std::string crd_name = string_at(crd, {"metadata", "name"});
    std::string not_yet = "version " + version + " is only served once this run updates CustomResourceDefinition " +
                          crd_name + "; the live object was not read";
    auto schema = crd_version_schema(crd, version);
    if (!schema.ok()) {
      fail(index, schema.error().message + " (checked locally: " + not_yet + ")");
      return;
    }
    json::Document desired = desired_object(index, states[index].function != Function::object_updated);
    std::string violations;
    if (*schema != nullptr) {
      for (const auto& violation : validate_against_schema(desired, **schema)) {
        violations += "\n  " + violation.message;
      }
    }
    if (!violations.empty()) {
      fail(index, "invalid against the schema of version " + version + " of CustomResourceDefinition " + crd_name +
                      " (checked locally: " + not_yet + "):" + violations);
      return;
    }
    changed(index, Change::applied, object_diff(json::Value(), desired, diff_label(slot.ref)));
    slot.result.comment = std::string("would be applied; ") +
                          (*schema != nullptr ? "validated locally against the schema of version " + version +
                                                    " of CustomResourceDefinition " + crd_name
                                              : "not validated (version " + version + " has no schema)") +
                          " (server validation skipped: " + not_yet + ")";
  }

  // An object_absent names its custom resource in a version this run's update of the
  // CRD adds (and serves), which discovery does not list: in test mode because the
  // update was a dry run, in real mode because the API server's discovery lists a
  // CRD's new versions a moment after the update. The object is the same in every
  // version of its kind, so it may well exist: it is read (one GET, not a pair's LIST,
  // which may have been selected by kstate's labels), and deleted (test mode: dryRun),
  // through another version the server serves now. A version the update does not serve
  // is not there after the apply either: that state finds its kind absent.
  // `dry_run_crd`: `crd` is test mode's dry-run answer for this run's update, which the
  // server does not run yet; otherwise it is (or will be, moments after this run's
  // update) the CRD the server runs.
  asio::awaitable<void> absent_in_version_added_by_update(std::size_t index, const json::Value& crd, bool dry_run_crd) {
    Slot& slot = slots[index];
    const GroupVersionKind named = slot.ref.gvk;
    const std::string crd_name = string_at(crd, {"metadata", "name"});
    const json::Value* versions = json::find_path(crd, {"spec", "versions"});
    if (versions == nullptr || !versions->IsArray() || !CrdVersions::serves_version(crd, named.version)) {
      succeed(index, "already absent (the server has no kind " + named.qualified_kind() + ")");
      co_return;
    }
    for (const auto& version : versions->GetArray()) {
      const std::string name = string_at(version, {"name"});
      // Only a version the CRD serves: the API server's handler may stop serving one
      // (served: false) before its discovery stops listing it, and a 404 from a version
      // no longer served is not an absent object. A dry-run answer is not run yet: the
      // server runs the CRD as it is now, so any version it lists reads the object.
      if (name.empty() || name == named.version || (!dry_run_crd && !CrdVersions::serves_version(crd, name))) {
        continue;
      }
      GroupVersionKind served{named.group, name, named.kind};
      auto resource = co_await resolver.resolve(served);
      if (!resource.ok() && resource.error().kind == ErrorKind::not_found) {
        continue;
      }
      if (!resource.ok()) {
        fail(index, resource.error().describe());
        co_return;
      }
      slot.resource = std::make_shared<const ApiResource>(std::move(resource).value());
      slot.resolve_error.reset();
      name_custom_resource(index, crd);
      const bool fresh = true;
      co_await absent(index, fresh);
      slot.result.comment += dry_run_crd ? " (read through version " + name + ": version " + named.version +
                                               " is only served once this run updates "
                                               "CustomResourceDefinition " +
                                               crd_name + ")"
                                         : " (through version " + name + ": version " + named.version +
                                               ", which CustomResourceDefinition " + crd_name +
                                               " serves, is not in discovery yet)";
      co_return;
    }
    if (!dry_run_crd) {
      // The object may well exist, stored in another version: never "already absent".
      fail(index, "version " + named.version + " of kind " + named.qualified_kind() +
                      " is not in the API server's discovery yet, nor any other version CustomResourceDefinition " +
                      crd_name + " serves: run again once it lists it");
      co_return;
    }
    succeed(index, "already absent (the server serves no version of kind " + named.qualified_kind() +
                       " that this run's CustomResourceDefinition " + crd_name + " keeps)");
  }

  // Test mode: the CRD of this custom resource is only created by this run, so the
  // server cannot validate it: check it against the CRD's schema here instead.
  asio::awaitable<void> pending_custom_resource(std::size_t index, const json::Value& crd) {
    Slot& slot = slots[index];
    State& state = states[index];
    std::string crd_name = string_at(crd, {"metadata", "name"});
    name_custom_resource(index, crd);
    std::string not_yet = "CustomResourceDefinition " + crd_name + " does not exist yet";
    if (state.function == Function::object_updated) {
      if (pending_objects.count(slot.ref.display()) == 0) {
        fail(index, slot.ref.display() + " does not exist (" + not_yet + ")");
      } else {
        co_await would_update_created(index);
      }
      co_return;
    }
    json::Document desired = desired_object(index);
    auto schema = crd_version_schema(crd, slot.ref.gvk.version);
    if (!schema.ok()) {
      fail(index, schema.error().message + " (checked locally: " + not_yet + ")");
      co_return;
    }
    std::string violations;
    if (*schema != nullptr) {
      for (const auto& violation : validate_against_schema(desired, **schema)) {
        violations += "\n  " + violation.message;
      }
    }
    if (!violations.empty()) {
      fail(index, "invalid against the schema of CustomResourceDefinition " + crd_name +
                      " (checked locally: " + not_yet + "):" + violations);
      co_return;
    }
    changed(index, Change::created, object_diff(json::Value(), desired, diff_label(slot.ref)));
    slot.result.comment =
        *schema != nullptr
            ? "would be created; validated locally against the schema of CustomResourceDefinition " + crd_name +
                  " (server validation skipped because it does not exist yet)"
            : "would be created; server validation skipped because " + not_yet + " (it has no schema to check)";
    pending_objects.insert(slot.ref.display());
  }

  // Test mode: the object this object_updated changes is only created by this run, so
  // the server cannot check the update: its fields are checked locally (not for
  // completeness: it names only those it changes).
  asio::awaitable<void> would_update_created(std::size_t index) {
    Slot& slot = slots[index];
    json::Document desired = desired_object(index, false);
    const std::string not_yet = slot.ref.display() + " does not exist yet";
    LocalCheck check = co_await check_locally(index, desired, not_yet, Completeness::fields_only);
    if (check.outcome == LocalCheck::Outcome::invalid) {
      fail(index, check.text);
      co_return;
    }
    changed(index, Change::updated, object_diff(json::Value(), desired, diff_label(slot.ref)));
    slot.result.comment = "would be updated once this run creates it; " + check.text +
                          " (server validation skipped because " + not_yet + ")";
  }

  // The object to send: the manifest with its namespace set, kstate's ownership
  // labels and the configuration hash annotation.
  json::Document desired_object(std::size_t index, bool with_ownership = true) {
    Slot& slot = slots[index];
    json::Document desired = json::copy(states[index].object);
    auto& allocator = desired.GetAllocator();
    auto& metadata = json::ensure_object(desired, "metadata", allocator);
    if (!slot.ref.ns.empty()) {
      json::set_string(metadata, "namespace", slot.ref.ns, allocator);
    } else {
      metadata.RemoveMember("namespace");
    }
    if (!slot.ref.name.empty()) {
      json::set_string(metadata, "name", slot.ref.name, allocator);
    }
    if (with_ownership) {
      auto& labels = json::ensure_object(metadata, "labels", allocator);
      for (const auto& [key, value] : options.ownership_labels) {
        json::set_string(labels, key, value, allocator);
      }
      if (!string_at(states[index].object, {"metadata", "generateName"}).empty()) {
        json::set_string(labels, state_id_label, short_hash(states[index].id), allocator);
      }
      std::string hash = config_hash(desired);
      json::set_string(json::ensure_object(metadata, "annotations", allocator), config_hash_annotation, hash,
                       allocator);
    }
    return desired;
  }

  static StoredFormOptions stored_form(const Slot& slot) {
    StoredFormOptions stored;
    stored.status_subresource = slot.resource && slot.resource->has_subresource("status");
    return stored;
  }

  // Whether this object_present may write an existing object (states/adoption.hpp): it
  // is the set's already, or is taken over now (slot.adopting: reported "adopted"), or
  // the state fails saying who owns it and how to opt in.
  bool may_adopt(std::size_t index, const json::Value& live) {
    Slot& slot = slots[index];
    const LiveObject marks = live_object_from_json(live);
    AdoptionInput adoption;
    adoption.labels = marks.labels;
    adoption.annotations = marks.annotations;
    if (auto id = options.ownership_labels.find(std::string(applyset_part_of_label));
        id != options.ownership_labels.end()) {
      adoption.applyset_id = id->second;
    }
    adoption.adopt = options.adopt;
    adoption.named =
        string_at(states[index].object, {"metadata", "annotations", std::string(adopt_annotation)}) == "true" ||
        options.adopt_objects.count(slot.ref.display()) != 0;
    const AdoptionDecision decision = decide_adoption(adoption);
    switch (decision.verdict) {
      case AdoptionVerdict::ours:
        return true;
      case AdoptionVerdict::adopt:
        slot.adopting = true;
        slot.adopted_from = decision.owner ? decision.owner->description : std::string();
        return true;
      case AdoptionVerdict::refuse_foreign:
        fail(index, slot.ref.display() + " is managed by " + decision.owner->description +
                        "; kstate does not take it over, and left it unchanged. To take it over (label it, and prune "
                        "it once no manifest declares it), annotate its manifest kstate.io/adopt: \"true\" or list " +
                        slot.ref.display() + " in adopt-objects (kstate apply --adopt-objects)");
        return false;
      case AdoptionVerdict::refuse_not_ours:
        fail(index, slot.ref.display() + " already exists and is not managed by kstate (it lacks the labels " +
                        owned_labels_text() +
                        "); it was left unchanged. To take it over (label it, and prune it once no manifest declares "
                        "it), set `adopt: true` in the daemon config or pass --adopt to kstate apply");
        return false;
    }
    return false;
  }

  // Whether a live object carries every ownership label with kstate's value (so it is
  // kstate's, not an object to adopt).
  bool owned(const json::Value& live) const {
    for (const auto& [key, value] : options.ownership_labels) {
      if (string_at(live, {"metadata", "labels", key}) != value) {
        return false;
      }
    }
    return true;
  }

  std::string owned_labels_text() const {
    std::string text;
    for (const auto& [key, value] : options.ownership_labels) {
      text += (text.empty() ? "" : ", ") + key + "=" + value;
    }
    return text;
  }

  // generateName objects: find the one an earlier run created (by the state-ID
  // label) so that it is never created twice.
  asio::awaitable<Status> find_generated(std::size_t index) {
    Slot& slot = slots[index];
    ListOptions list;
    list.label_selector = std::string(state_id_label) + "=" + short_hash(states[index].id);
    auto listed = co_await read_all(slot, list);
    if (!listed.ok()) {
      co_return listed.error();
    }
    const json::Value* items = json::find(*listed, "items");
    if (items != nullptr && items->IsArray() && !items->Empty()) {
      slot.ref.name = string_at((*items)[0], {"metadata", "name"});
      slot.result.name = slot.ref.display();
      remember_live(index, (*items)[0]);
    }
    co_return ok_status();
  }

  asio::awaitable<void> present(std::size_t index) {
    Slot& slot = slots[index];
    State& state = states[index];
    slot.present_started = true;
    if (slot.ref.name.empty()) {
      if (auto found = co_await find_generated(index); !found.ok()) {
        fail(index, found.error().describe());
        co_return;
      }
    }
    const json::Value* live = &absent_object;
    if (!slot.ref.name.empty()) {
      // Read when it runs: its pair may have been read before the controller made it.
      slot.read_when_run = slot.read_when_run || made_by_the_cluster_here(index);
      auto got = co_await live_object(index);
      if (!got.ok()) {
        fail(index, got.error().describe());
        co_return;
      }
      live = *got;
      co_await namespace_check_finished(index);
    }
    // The facts, then one decision (states/present_decision.hpp), then its action.
    PresentFacts facts;
    facts.exists = !live->IsNull();
    facts.being_deleted = json::find_path(*live, {"metadata", "deletionTimestamp"}) != nullptr;
    facts.named = !slot.ref.name.empty();
    facts.strategy = state.strategy;
    facts.takeover_disabled = state.takeover_disabled;
    json::Document desired;
    if (!(facts.exists && facts.being_deleted)) {
      desired = slot.prepared ? std::move(*slot.prepared) : desired_object(index);
    }
    slot.prepared.reset();
    if (facts.exists && !facts.being_deleted) {
      manifests::leave_fields_to_others(desired, *live, ignored_fields(index));
    }
    if (facts.exists && !facts.being_deleted && facts.strategy != Strategy::create_only &&
        !options.ownership_labels.empty()) {
      facts.adoption_refused = !may_adopt(index, *live);  // (when refused: failed, saying why)
    }
    if (facts.exists && !facts.being_deleted && !facts.adoption_refused) {
      facts.kubectl_applied = has_last_applied(*live) && !has_last_applied(desired);
      facts.live_has_config_hash = !recorded_config_hash(*live).empty();
      facts.config_hash_matches = recorded_config_hash(*live) == recorded_config_hash(desired);
      facts.stored_subset = facts.config_hash_matches && is_stored_subset(desired, *live, stored_form(slot));
    }
    const PresentDecision decision = decide_present(facts);
    switch (decision.action) {
      case PresentAction::skip_being_deleted: {
        // Being deleted (finalizers still running; a Namespace emptying itself): whatever
        // is written now goes with it, and "already good" would be untrue once it is gone.
        // Nothing is sent: the next cycle creates it again.
        std::string comment = slot.ref.display() + " is being deleted (since " +
                              string_at(*live, {"metadata", "deletionTimestamp"}) +
                              "): it is created again once it is gone";
        if (options.test_mode) {
          slot.done = true;
          slot.result.result = std::nullopt;
          slot.result.comment = comment;
        } else {
          fail(index, comment + ", by the next cycle");
        }
        co_return;
      }
      case PresentAction::keep_create_only:
        succeed(index, "already exists (create-only: never updated)");
        // Not written, so not recorded as applied; but a wait still means "until ready".
        if (!options.test_mode && (is_crd(slot.ref.gvk) || wants_wait(state.wait))) {
          co_await wait_ready(index, *live);
        }
        co_return;
      case PresentAction::refuse_adoption:
        co_return;  // (failed by may_adopt, saying why)
      case PresentAction::already_good:
        succeed(index, "already good");
        co_await after_present(index, *live);
        co_return;
      case PresentAction::create:
      case PresentAction::replace:
      case PresentAction::apply:
        break;
    }
    const bool taking_over = decision.take_over;
    if (taking_over) {
      if (auto taken = co_await take_over(index, *live); !taken.ok()) {
        fail(index, "taking over the fields of other managers: " + taken.error().describe());
        co_return;
      }
    }
    Result<json::Document> written = Error(ErrorKind::internal, "not sent");
    if (decision.action == PresentAction::create) {
      written = co_await create(slot, desired);
    } else if (decision.action == PresentAction::replace) {
      written = co_await replace(index, desired, live);
      auto refreshed = co_await live_object(index);
      live = refreshed.ok() ? *refreshed : &absent_object;
    } else {
      // (after a takeover, `live`'s managedFields are no longer the server's)
      co_await give_up_ignored_fields(index, desired, *live, !taking_over);
      written = co_await apply_patch(index, desired);
    }
    if (!written.ok() && is_immutable_field_error(written.error())) {
      co_await immutable(index, written.error(), *live);
      co_return;
    }
    if (!written.ok() && written.error().kind == ErrorKind::already_exists && !slot.ref.name.empty() &&
        !slot.create_raced) {
      // Made by someone else since it was read (e.g. kube-controller-manager's `default`
      // ServiceAccount in a new namespace): read it, and decide again as for any object
      // that exists (adopt, create-only, replace).
      slot.create_raced = true;
      slot.read_when_run = true;
      co_await present(index);
      co_return;
    }
    if (!written.ok() && written.error().resource_not_served && !slot.rediscovered) {
      slot.rediscovered = true;
      if (co_await rediscover(index, written.error())) {
        co_await present(index);
      }
      co_return;
    }
    if (!written.ok()) {
      fail(index, manifest_error(written.error(), desired));
      co_return;
    }
    if (options.test_mode && slot.takeover) {
      remove_what_takeover_releases(*slot.takeover, *written, desired);
    }
    co_await report_write(index, *live, *written);
  }

  // A write refused by the server, told in the manifest's terms: the fields it names
  // as a manifest reader counts them (manifest_field_path), e.g. server-side apply's
  // 500 for an undeclared field, `metadata.annotation`.
  static std::string manifest_error(Error error, const json::Value& sent) {
    for (auto& cause : error.causes) {
      cause.field = manifest_field_path(cause.field, sent);
    }
    return error.describe();
  }

  // A write was answered 404 "page not found": the server does not serve the kind at
  // the path discovery gave (its CRD deleted or changed since discovery was read, or a
  // custom resource that an API server does not serve yet, recording 60). Discovery is
  // read again, once per run for all the states that meet this; when the kind still
  // resolves, the state writes again after a short pause (true), else it fails saying
  // the server has no such kind (false).
  asio::awaitable<bool> rediscover(std::size_t index, const Error& refused) {
    Slot& slot = slots[index];
    const Status* rediscovery = co_await rediscovered.get([this, &slot]() -> asio::awaitable<Status> {
      spdlog::info("the API server does not serve {} at the path discovery gave: reading discovery again",
                   slot.ref.gvk.qualified_kind());
      try {
        co_return co_await resolver.refresh();
      } catch (const std::exception& failure) {
        co_return Status(Error(ErrorKind::internal, failure.what()));  // the waiters must not wait forever
      }
    });
    if (!rediscovery->ok()) {
      fail(index, refused.describe() + " (reading discovery again failed: " + rediscovery->error().describe() + ")");
      co_return false;
    }
    auto resource = co_await resolver.resolve_known(slot.ref.gvk);
    if (!resource.ok()) {
      fail(index, resource.error().describe() + " (its path answered 404 page not found; discovery was read again)");
      co_return false;
    }
    set_resource(index, std::make_shared<const ApiResource>(std::move(resource).value()));
    slot.result.name = slot.ref.display();
    co_await sleep_for(not_served_pause);
    co_return true;
  }

  // Test mode: the dry-run apply could not see a takeover that was not made, so what
  // the real apply would remove after it is removed from its answer here.
  void remove_what_takeover_releases(const TakeoverPlan& plan, json::Value& answer, const json::Value& desired) const {
    std::vector<const json::Value*> others;
    for (const auto& entry : plan.managed_fields.GetArray()) {
      if (string_at(entry, {"manager"}) != options.field_manager || string_at(entry, {"operation"}) != "Apply") {
        others.push_back(json::find(entry, "fieldsV1"));
      }
    }
    remove_released_fields(answer, plan.owned_fields, desired, others);
  }

  static bool has_last_applied(const json::Value& object) {
    return json::find_path(object, {"metadata", "annotations", last_applied_annotation}) != nullptr;
  }

  // Moves the fields of the managers kstate takes over into its own Apply entry (one
  // JSON patch of managedFields, which fails if the object changed since it was read:
  // then read again). `live` is used when it was read with its managedFields (on its
  // own: it may have none); objects from a LIST are read again. Test mode only reads,
  // and keeps the plan for the diff.
  asio::awaitable<Status> take_over(std::size_t index, const json::Value& live) {
    Slot& slot = slots[index];
    constexpr int attempts = 3;
    for (int attempt = 1;; ++attempt) {
      Result<json::Document> whole = json::Document();
      if (attempt == 1 && slot.read_with_managed_fields) {
        whole = json::copy(live);
      } else {
        whole = co_await client.get_with_managed_fields(*slot.resource, slot.ref.ns, slot.ref.name);
      }
      if (!whole.ok()) {
        co_return whole.error().kind == ErrorKind::not_found ? ok_status() : Status(whole.error());
      }
      static const json::Value none;
      const json::Value* managed_fields = json::find_path(*whole, {"metadata", "managedFields"});
      TakeoverPlan plan = plan_takeover(managed_fields != nullptr ? *managed_fields : none, options.field_manager);
      if (!plan.needed()) {
        co_return ok_status();
      }
      if (options.test_mode) {
        slot.taken_over_from = plan.managers;
        slot.takeover = std::move(plan);
        co_return ok_status();
      }
      WriteOptions write;
      write.field_manager = options.field_manager;
      std::string no_subresource;
      std::string body = takeover_patch(plan, resource_version(*whole));
      auto patched = co_await client.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::json, body, write,
                                           no_subresource);
      if (patched.ok()) {
        slot.taken_over_from = plan.managers;
        spdlog::info("took {} over from {}", slot.ref.display(), managers_text(plan.managers));
        co_return ok_status();
      }
      // A failed resourceVersion test: someone wrote it meanwhile. Read it again.
      const bool raced = patched.error().kind == ErrorKind::conflict || patched.error().kind == ErrorKind::invalid;
      if (!raced || attempt >= attempts) {
        co_return patched.error();
      }
    }
  }

  // Server-side apply, retried on 409 Conflict (DESIGN.md "409 re-read and retry"):
  // apply with force carries no resourceVersion, so a conflict only means a concurrent
  // update won a race on the server, and sending the same apply again is safe. Bounded
  // by apply_conflict_attempts, with a short growing pause between attempts.
  asio::awaitable<Result<json::Document>> apply_patch(std::size_t index, const json::Value& desired) {
    Slot& slot = slots[index];
    std::chrono::milliseconds pause{10};
    for (int attempt = 0;; ++attempt) {
      auto written = co_await patch(slot, PatchType::apply, desired);
      if (written.ok() || written.error().kind != ErrorKind::conflict) {
        co_return written;
      }
      if (attempt + 1 >= apply_conflict_attempts) {
        Error error = written.error();
        error.message += " (gave up after " + std::to_string(apply_conflict_attempts) + " conflicting attempts)";
        co_return error;
      }
      co_await sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(200));
    }
  }

  // Records the outcome of a write: created / updated with its diff, or already good
  // when the server changed nothing kstate shows.
  asio::awaitable<void> report_write(std::size_t index, const json::Value& live, json::Document& written) {
    Slot& slot = slots[index];
    if (slot.ref.name.empty()) {
      slot.ref.name = string_at(written, {"metadata", "name"});
      slot.result.name = slot.ref.display();
    }
    // An update's diff also tells whether the server changed anything kstate shows.
    std::string diff =
        live.IsNull() && !options.record_diffs ? std::string() : object_diff(live, written, diff_label(slot.ref));
    if (!live.IsNull() && diff.empty() && slot.taken_over_from.empty()) {
      succeed(index, "already good");
    } else {
      changed(index, live.IsNull() ? Change::created : slot.adopting ? Change::adopted : Change::updated, diff);
      if (live.IsNull() && slot.resource && slot.resource->group.empty() && slot.resource->kind == "Namespace") {
        namespaces_created.insert(slot.ref.name);
      }
      if (!slot.taken_over_from.empty()) {
        slot.result.comment += " (taken over from " + managers_text(slot.taken_over_from) + ")";
      }
      if (!slot.adopted_from.empty()) {
        slot.result.comment += " (from " + slot.adopted_from + ", as its manifest or adopt-objects says)";
      }
    }
    if (options.test_mode) {
      co_await after_present(index, written);
      co_return;
    }
    // The answer itself becomes the live object (copying it was 2% of a cold apply).
    const json::Value& kept = remember_live(index, std::move(written));
    co_await after_present(index, kept);
  }

  // GET + PUT with the live resourceVersion, keeping server-allocated fields; on 409
  // re-read and retry (MetalK8s' replace behaviour).
  asio::awaitable<Result<json::Document>> replace(std::size_t index, json::Document& desired, const json::Value* live) {
    Slot& slot = slots[index];
    for (int attempt = 0;; ++attempt) {
      json::Document body = json::copy(desired);
      auto& allocator = body.GetAllocator();
      auto& metadata = json::ensure_object(body, "metadata", allocator);
      json::set_string(metadata, "resourceVersion", resource_version(*live), allocator);
      keep_allocated_fields(body, *live);
      auto written = co_await put(slot, body);
      if (written.ok() || written.error().kind != ErrorKind::conflict || attempt + 1 >= replace_conflict_retries) {
        co_return written;
      }
      auto fresh = co_await live_object(index, true);
      if (!fresh.ok()) {
        co_return fresh.error();
      }
      if ((*fresh)->IsNull()) {
        co_return co_await create(slot, desired);
      }
      live = *fresh;
    }
  }

  // Service clusterIP(s) (and similar allocated values) are kept from the live object
  // when the manifest does not set them, so replace does not hit "field is immutable".
  static void keep_allocated_fields(json::Document& body, const json::Value& live) {
    if (json::string_or(json::find(body, "kind"), "") != "Service") {
      return;
    }
    const json::Value* live_spec = json::find(live, "spec");
    if (live_spec == nullptr) {
      return;
    }
    auto& spec = json::ensure_object(body, "spec", body.GetAllocator());
    for (const char* field : {"clusterIP", "clusterIPs", "healthCheckNodePort", "ipFamilies"}) {
      if (json::find(spec, field) == nullptr) {
        if (const json::Value* value = json::find(*live_spec, field)) {
          json::Value copy;
          copy.CopyFrom(*value, body.GetAllocator());
          json::set(spec, field, std::move(copy), body.GetAllocator());
        }
      }
    }
  }

  // The server refused a change to an immutable field: delete and re-create when the
  // state allows it, else say which field and how to opt in.
  asio::awaitable<void> immutable(std::size_t index, const Error& error, const json::Value& live) {
    Slot& slot = slots[index];
    State& state = states[index];
    std::string fields = immutable_fields(error);
    if (!state.recreate) {
      fail(index, error.describe() + "\n" + fields +
                      " cannot be changed in place; set `recreate: true` on the state (or the annotation "
                      "kstate.io/recreate: \"true\") to delete and re-create the object");
      co_return;
    }
    if (options.test_mode) {
      json::Document desired = desired_object(index);
      changed(index, Change::recreated, object_diff(live, desired, diff_label(slot.ref)));
      slot.result.comment = "would be deleted and re-created (" + fields + " is immutable)";
      co_return;
    }
    DeleteOptions remove;
    remove.propagation_policy = "Foreground";
    auto removed = co_await delete_object(slot, remove);
    if (!removed.ok() && removed.error().kind != ErrorKind::not_found) {
      fail(index, "re-create: delete failed: " + removed.error().describe());
      co_return;
    }
    const manifests::Wait until_gone{true, 0, 0, 0};
    const std::string old_uid = string_at(live, {"metadata", "uid"});
    if (auto gone = co_await wait_gone(index, until_gone, old_uid); !gone.ok()) {
      fail(index, "re-create: " + gone.error().message);
      co_return;
    }
    json::Document desired = desired_object(index);
    auto created = co_await create(slot, desired);
    if (!created.ok()) {
      fail(index, "re-create: create failed: " + created.error().describe());
      co_return;
    }
    changed(index, Change::recreated, object_diff(live, *created, diff_label(slot.ref)));
    slot.result.comment = "re-created (" + fields + " is immutable)";
    remember_live(index, *created);
    co_await after_present(index, *created);
  }

  // After an object_present: CRDs must be Established before their CRs run.
  asio::awaitable<void> after_present(std::size_t index, const json::Value& object) {
    Slot& slot = slots[index];
    slot.uid = string_at(object, {"metadata", "uid"});
    if (options.test_mode) {
      if (slot.result.change == Change::created) {
        pending_objects.insert(slot.ref.display());
        if (slot.ref.gvk.kind == "Namespace" && slot.ref.gvk.group.empty()) {
          pending_namespaces.insert(slot.ref.name);
        }
        if (is_crd(slot.ref.gvk)) {
          crd_versions.created(object);
        }
      } else if (is_crd(slot.ref.gvk)) {
        // As this run would update it (the dry run's answer): versions it adds.
        crd_versions.updated(object);
      }
      co_return;
    }
    if (is_crd(slot.ref.gvk) && slot.result.change != Change::created && slot.result.change != Change::recreated) {
      // The API server serves and lists the versions an update adds (this run's, or a
      // recent one: a run again right after a failed one) once its CRD handler and
      // discovery catch up, a moment later and not in step: until discovery lists one,
      // an object_absent naming it reads and deletes through another version the CRD
      // serves (dispatch). Not after a create: a new kind holds nothing yet.
      crd_versions.updated(object);
    }
    if (is_crd(slot.ref.gvk) || wants_wait(states[index].wait)) {
      co_await wait_ready(index, object);
    }
  }

  static bool wants_wait(const manifests::Wait& wait) {
    return wait.enabled || wait.attempts > 0 || wait.timeout_seconds > 0;
  }

  // Waits until the object is ready (states/readiness): CRDs until Established, and
  // any object whose state asks (`wait`, annotation kstate.io/wait). The state fails
  // with the last reason seen when the wait runs out or readiness cannot come.
  asio::awaitable<void> wait_ready(std::size_t index, const json::Value& written) {
    Slot& slot = slots[index];
    const bool crd = is_crd(slot.ref.gvk);
    manifests::Wait policy = states[index].wait;
    WaitDefaults defaults;
    defaults.timeout = options.default_wait_timeout;
    if (crd) {
      // A CRD is Established within moments; its CRs are waiting for it.
      policy.enabled = true;
      defaults = prompt_wait_defaults(options.default_wait_timeout);
    }
    const ReadinessChecker checker = check_exists_ready;
    const std::string goal = "ready";
    auto outcome = co_await object_wait(slot).until(&written, checker, policy, defaults, goal);
    if (!outcome.ok()) {
      fail(index, outcome.error().message);
      co_return;
    }
    if (crd) {
      crd_established_since_refresh = true;
    }
  }

  // A wait for the slot's object (states/waits.hpp): its reads keep the state's warnings
  // and go through served(), so that a path the server does not serve never reads as
  // a missing object.
  ObjectWait object_wait(Slot& slot) {
    ObjectWait::Options wait_options;
    wait_options.watch = options.watch_waits;
    wait_options.sleep = options.sleep;
    wait_options.take_read = [this, &slot](Result<json::Document> answer) { return served(slot, std::move(answer)); };
    return ObjectWait(client.collecting_warnings(slot.warnings), *slot.resource, slot.ref.ns, slot.ref.name,
                      slot.ref.display(), std::move(wait_options));
  }

  asio::awaitable<void> updated(std::size_t index) {
    Slot& slot = slots[index];
    if (states[index].strategy_given && states[index].strategy != Strategy::apply) {
      fail(index, std::string("object_updated takes `strategy: apply` (server-side apply) or no strategy (a merge "
                              "patch), not ") +
                      manifests::to_string(states[index].strategy) + ", which is object_present's");
      co_return;
    }
    slot.read_when_run = slot.read_when_run || made_by_the_cluster_here(index);
    auto got = co_await live_object(index);
    if (!got.ok()) {
      fail(index, got.error().describe());
      co_return;
    }
    const json::Value* found = *got;
    if (found->IsNull() && options.test_mode && pending_objects.count(slot.ref.display()) > 0) {
      co_await would_update_created(index);
      co_return;
    }
    if (found->IsNull() && made_by_the_cluster_here(index) && !options.test_mode) {
      auto made = co_await made_by_the_cluster(index);
      if (!made.ok()) {
        fail(index, made.error().describe());
        co_return;
      }
      found = *made;
    }
    const json::Value& live = *found;
    if (live.IsNull()) {
      fail(index, slot.ref.display() + " does not exist");
      co_return;
    }
    json::Document desired = desired_object(index, false);
    manifests::leave_fields_to_others(desired, live, ignored_fields(index));
    if (is_stored_subset(desired, live, stored_form(slot))) {
      succeed(index, "already good");
      co_await after_update(index, live);
      co_return;
    }
    const bool apply = states[index].strategy_given && states[index].strategy == Strategy::apply;
    Result<json::Document> written = Error(ErrorKind::internal, "not sent");
    if (apply) {
      written = co_await update_apply(index, desired);
    } else {
      written = co_await patch(slot, PatchType::merge, desired);
    }
    if (!written.ok()) {
      fail(index, manifest_error(written.error(), desired));
      co_return;
    }
    std::string diff = object_diff(live, *written, diff_label(slot.ref));
    if (diff.empty()) {
      succeed(index, "already good");
    } else {
      changed(index, Change::updated, diff);
    }
    co_await after_update(index, *written);
  }

  // object_updated of an object kube-controller-manager makes in the namespace this run
  // created: it comes a moment after the namespace (typically 5-100 ms), so it is waited
  // for (watched, else polled) up to made_by_the_cluster_timeout, not reported missing.
  asio::awaitable<Result<const json::Value*>> made_by_the_cluster(std::size_t index) {
    const std::string why_absent = "kube-controller-manager makes it in each new namespace, and has not yet";
    auto waited = co_await object_wait(slots[index]).until_exists(made_by_the_cluster_timeout, why_absent);
    if (!waited.ok()) {
      co_return Error(waited.error().kind, slots[index].ref.display() + " does not exist: " + waited.error().message);
    }
    co_return co_await live_object(index, true);
  }

  // object_updated with `strategy: apply`: server-side apply of the fields the state
  // names, under a field manager of its own, so that it neither takes over nor (by
  // leaving them out) removes the fields object_present applies as field_manager.
  asio::awaitable<Result<json::Document>> update_apply(std::size_t index, const json::Value& desired) {
    Slot& slot = slots[index];
    WriteOptions write = write_options(true);
    const std::string& id = states[index].id;
    bool printable = std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    write.field_manager = options.field_manager + ":" + (printable ? id : short_hash(id).substr(0, 16));
    if (write.field_manager.size() > 128) {  // the API server's limit
      write.field_manager = options.field_manager + ":" + short_hash(id).substr(0, 16);
    }
    std::string text = json::dump(desired);
    std::string subresource;
    DynamicClient warned = client.collecting_warnings(slot.warnings);
    co_return co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, PatchType::apply, text, write,
                                    subresource);
  }

  // object_updated waits too when asked (e.g. a scaled Deployment rolled out).
  asio::awaitable<void> after_update(std::size_t index, const json::Value& object) {
    if (!options.test_mode && wants_wait(states[index].wait)) {
      co_await wait_ready(index, object);
    }
  }

  // `fresh`: read the object on its own, not from its pair's read.
  asio::awaitable<void> absent(std::size_t index, bool fresh = false) {
    Slot& slot = slots[index];
    State& state = states[index];
    auto got = co_await live_object(index, fresh);
    if (!got.ok()) {
      fail(index, got.error().describe());
      co_return;
    }
    const json::Value& live = **got;
    if (live.IsNull()) {
      succeed(index, "already absent");
      co_return;
    }
    DeleteOptions remove;
    remove.dry_run = options.test_mode;
    remove.propagation_policy = state.propagation;
    auto removed = co_await delete_object(slot, remove);
    if (!removed.ok()) {
      if (removed.error().kind == ErrorKind::not_found) {
        succeed(index, "already absent");
      } else {
        fail(index, removed.error().describe());
      }
      co_return;
    }
    if (!options.test_mode && state.wait.enabled) {
      const std::string deleted_uid = string_at(live, {"metadata", "uid"});
      if (auto gone = co_await wait_gone(index, state.wait, deleted_uid); !gone.ok()) {
        fail(index, gone.error().message);
        co_return;
      }
    }
    changed(index, Change::deleted, object_diff(live, json::Value(), diff_label(slot.ref)));
  }

  // MetalK8s' wait until the object is gone: `attempts` checks `sleep` apart, or until
  // `timeout` (watching, as readiness waits do). An object with another UID than the
  // one deleted is a new object: the deleted one is gone.
  asio::awaitable<Status> wait_gone(std::size_t index, const manifests::Wait& wait, const std::string& deleted_uid) {
    co_return co_await object_wait(slots[index]).until_gone(wait, options.default_wait_timeout, deleted_uid);
  }
};

std::string label_selector(const std::map<std::string, std::string>& labels) {
  std::string selector;
  for (const auto& [key, value] : labels) {
    selector += (selector.empty() ? "" : ",") + key + "=" + value;
  }
  return selector;
}

Engine::Engine(DynamicClient& client, KindResolver& resolver, EngineOptions options)
    : client_(client), resolver_(resolver), options_(std::move(options)) {}

Engine::~Engine() = default;

asio::awaitable<void> Engine::start(std::vector<manifests::State>& states) {
  impl_ = std::make_unique<Impl>(client_, resolver_, options_, states);
  Impl& impl = *impl_;
  impl.run_started = Clock::now();
  // Resolve every kind up front (discovery is cached) so live objects can be read
  // in one request per (resource, namespace); kinds of CRDs created by this run
  // resolve later, when their state runs.
  impl.resolving_up_front = true;
  for (std::size_t i = 0; i < states.size(); ++i) {
    impl.slots[i].selected = !options_.selected || options_.selected(states[i]);
    co_await impl.resolve(i);
  }
  impl.resolving_up_front = false;
  impl.kinds_resolved_up_front.clear();
  impl.planned = plan_order(impl.plan_items());
  if (!impl.planned->ok()) {
    co_return;
  }
  auto executor = co_await asio::this_coro::executor;
  impl.plan_prefetch(**impl.planned);
  impl.prefetch_running = true;
  impl.prefetch_done = std::make_unique<Signal>(executor);
  asio::co_spawn(executor, impl.prefetch(), [&impl](std::exception_ptr failure) {
    if (failure) {
      spdlog::error("internal error while reading live objects");
    }
    impl.prefetch_running = false;
    impl.prefetch_done->notify();
  });
  if (options_.prepare_ahead) {
    impl.preparing = true;
    impl.prepared_all = std::make_unique<Signal>(executor);
    asio::co_spawn(executor, impl.prepare_ahead(**impl.planned), [&impl](std::exception_ptr failure) {
      if (failure) {
        spdlog::error("internal error while preparing objects");  // present() builds them instead
      }
      impl.preparing = false;
      impl.prepared_all->notify();
    });
  }
}

asio::awaitable<void> Engine::abandon() {
  if (impl_) {
    co_await impl_->background_finished();
    impl_.reset();
  }
}

asio::awaitable<RunReport> Engine::run(std::vector<manifests::State>& states) {
  if (!impl_) {
    co_await start(states);
  }
  Impl& impl = *impl_;
  RunReport report;
  report.test_mode = options_.test_mode;
  const Result<Plan>& plan = *impl.planned;
  if (!plan.ok()) {
    report.errors.push_back("ordering: " + plan.error().message);
    for (std::size_t i = 0; i < states.size(); ++i) {
      impl.start_result(i);
      impl.fail(i, "not run: " + plan.error().message);
    }
  } else {
    co_await impl.run_plan(*plan);
  }
  co_await impl.background_finished();
  for (std::size_t i = 0; i < states.size(); ++i) {
    auto& slot = impl.slots[i];
    if (slot.resource && states[i].function != Function::object_absent && !slot.ref.name.empty()) {
      const auto& gvk = slot.ref.gvk;
      report.declared.insert(ObjectKey{gvk.group, gvk.kind, slot.ref.ns, slot.ref.name});
      if (!slot.failed && !slot.uid.empty() && states[i].function == Function::object_present) {
        report.applied.push_back(
            {gvk.group, gvk.version, gvk.kind, slot.ref.ns, slot.ref.name, slot.uid, states[i].source.file});
      }
    } else if (!slot.resource && states[i].function != Function::object_absent) {
      // Unknown kind: the object is still declared, so prune must never delete it.
      const auto& gvk = slot.ref.gvk;
      report.declared.insert(ObjectKey{gvk.group, gvk.kind, string_at(states[i].object, {"metadata", "namespace"}),
                                       string_at(states[i].object, {"metadata", "name"})});
      if (slot.resolve_error && slot.resolve_error->kind != ErrorKind::not_found) {
        report.discovery_failed = true;
      }
    }
    if (slot.selected && slot.resource && states[i].function != Function::object_absent &&
        slot.resource->group.empty() && slot.resource->kind == "ConfigMap" && slot.ref.name == "kube-root-ca.crt" &&
        json::find(states[i].object, "data") != nullptr) {
      // Applied, it is put back a moment later: each run would change it again, unexplained.
      report.notes.push_back("ConfigMap " + slot.ref.ns + "/kube-root-ca.crt (" + states[i].source.to_string() +
                             "): kube-controller-manager's root-ca-cert-publisher puts its data back (ca.crt, the "
                             "cluster's CA) after every change, so each run changes it again; declare only its labels "
                             "or annotations, or use another ConfigMap");
    }
    if (slot.selected) {
      report.results.push_back(std::move(slot.result));
    }
  }
  report.discovery_stale = impl.discovery_stale;
  report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - impl.run_started).count();
  impl_.reset();
  co_return report;
}

}  // namespace kstate::states
