// The states engine (see engine.hpp): the orchestration of one run. It resolves the
// states' kinds, plans them (states/ordering), starts the reads of their live objects
// (states/live_objects), runs the plan at most `concurrency` states at a time
// (states/scheduler), and for each state decides whether it runs (requisites), sends it
// to its state function (dispatch) and collects its result and warnings. The state
// functions are in states/object_present.cpp, states/state_functions.cpp and
// states/unserved_objects.cpp (see states/engine_impl.hpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/crd.hpp"
#include "states/diff.hpp"
#include "states/engine_impl.hpp"
#include "states/inventory.hpp"
#include "states/requisites.hpp"
#include "states/scheduler.hpp"

namespace kstate::states {

using Clock = std::chrono::steady_clock;
using json::string_at;
using manifests::Function;

std::string ObjectRef::display() const {
  return gvk.kind + "/" + (ns.empty() ? "" : ns + "/") + name;
}

WriteOptions Engine::Impl::write_options(bool apply) const {
  WriteOptions write;
  write.dry_run = options.test_mode;
  write.field_manager = options.field_manager;
  write.field_validation = "Strict";
  if (apply) {
    write.force = true;
  }
  return write;
}

// Each state's requests go through a client that keeps the server's warnings for it.
// Its reads go through LiveObjects::served(): a path the server does not serve
// ("404 page not found") is an error, never a missing object; writes meet the same
// answer in present(), which reads discovery again at once (rediscover).
asio::awaitable<Result<json::Document>> Engine::Impl::read_all(Slot& slot, const ListOptions& list_options) {
  ListOptions list = list_options;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return live_objects.served(*slot.resource, co_await warned.list(*slot.resource, slot.ref.ns, list));
}

asio::awaitable<Result<json::Document>> Engine::Impl::create(Slot& slot, const json::Value& object) {
  WriteOptions write = write_options(false);
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return co_await warned.create(*slot.resource, slot.ref.ns, object, write);
}

asio::awaitable<Result<json::Document>> Engine::Impl::put(Slot& slot, const json::Value& object) {
  WriteOptions write = write_options(false);
  std::string subresource;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return co_await warned.replace(*slot.resource, slot.ref.ns, slot.ref.name, object, write, subresource);
}

asio::awaitable<Result<json::Document>> Engine::Impl::patch(Slot& slot, PatchType type, const json::Value& body) {
  WriteOptions write = write_options(type == PatchType::apply);
  std::string text = json::dump(body);
  std::string subresource;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return co_await warned.patch(*slot.resource, slot.ref.ns, slot.ref.name, type, text, write, subresource);
}

asio::awaitable<Result<json::Document>> Engine::Impl::delete_object(Slot& slot, const DeleteOptions& delete_options) {
  DeleteOptions remove_options = delete_options;
  DynamicClient warned = client.collecting_warnings(slot.warnings);
  co_return co_await warned.remove(*slot.resource, slot.ref.ns, slot.ref.name, remove_options);
}

asio::awaitable<void> Engine::Impl::resolve(std::size_t index) {
  Slot& slot = slots[index];
  const json::Value& object = states[index].object;
  slot.ref.gvk =
      make_gvk(json::string_or(json::find(object, "apiVersion"), ""), json::string_or(json::find(object, "kind"), ""));
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

void Engine::Impl::set_resource(std::size_t index, std::shared_ptr<const ApiResource> resource) {
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

// The live object of a state, from its pair's read or one GET (LiveObjects::object).
asio::awaitable<Result<const json::Value*>> Engine::Impl::live_object(std::size_t index, bool fresh) {
  const Slot& slot = slots[index];
  co_return co_await live_objects.object(index, *slot.resource, slot.ref, fresh);
}

// Whether kube-controller-manager makes this state's object in a namespace this run
// created (so it may appear after the namespace's pair was read).
bool Engine::Impl::made_by_the_cluster_here(std::size_t index) const {
  const Slot& slot = slots[index];
  return slot.resource && live_objects.made_by_the_cluster_here(*slot.resource, slot.ref);
}

void Engine::Impl::remember_live(std::size_t index, const json::Value& object) {
  live_objects.remember(*slots[index].resource, slots[index].ref, object);
}

// A whole answer is kept as it is (no copy); returns where it is kept.
const json::Value& Engine::Impl::remember_live(std::size_t index, json::Document&& object) {
  return live_objects.remember(*slots[index].resource, slots[index].ref, std::move(object));
}

// What the reads of live objects need to know about each state.
std::vector<LiveObjects::Target> Engine::Impl::live_targets() const {
  std::vector<LiveObjects::Target> targets(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    targets[i].resource = slots[i].resource;
    targets[i].ref = slots[i].ref;
    targets[i].selected = slots[i].selected;
  }
  return targets;
}

// The reads and the preparation started by Engine::start have ended (their
// coroutines refer to this Impl).
asio::awaitable<void> Engine::Impl::background_finished() {
  co_await live_objects.finished();
  while (preparing) {
    co_await prepared_all->wait();
  }
}

// Builds the objects the object_present states will send, in plan order, while
// their live objects are still being read: a re-apply otherwise waits for the LIST
// answers with this thread idle, then builds all of them. Yields to the other
// handlers every few objects, so that an answer is taken as soon as it arrives.
asio::awaitable<void> Engine::Impl::prepare_ahead(const Plan& plan) {
  auto executor = co_await asio::this_coro::executor;
  std::size_t since_yield = 0;
  for (std::size_t node : plan.topological_order) {
    if (node >= slots.size()) {
      continue;
    }
    Slot& slot = slots[node];
    if (!slot.selected || !slot.resource || slot.ref.name.empty() || slot.status != SlotStatus::waiting ||
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

// What the ordering planner needs to know about each state.
std::vector<PlanItem> Engine::Impl::plan_items() const {
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
asio::awaitable<void> Engine::Impl::run_plan(const Plan& plan) {
  // (a named function: GCC 12 mis-destroys temporaries bound to coroutine parameters)
  const std::function<asio::awaitable<void>(std::size_t)> run_node =
      [this, &plan](std::size_t node) -> asio::awaitable<void> {
    if (node < plan.item_count && slots[node].selected) {
      co_await execute(node, plan.nodes[node]);
    }
  };
  co_await states::run_plan(plan, options.concurrency, run_node);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].selected && !slots[i].finished()) {
      start_result(i);
      fail(i, "not run: its dependencies never completed");
    }
  }
}

void Engine::Impl::start_result(std::size_t index) {
  Slot& slot = slots[index];
  const State& state = states[index];
  slot.result.id = state.id;
  slot.result.function = state.function;
  slot.result.source = state.source;
  slot.result.name =
      slot.resource ? slot.ref.display() : slot.ref.gvk.kind + "/" + string_at(state.object, {"metadata", "name"});
}

asio::awaitable<void> Engine::Impl::execute(std::size_t index, const PlanNode& node) {
  auto started = Clock::now();
  Slot& slot = slots[index];
  slot.started = started;
  slot.status = SlotStatus::running;
  start_result(index);
  std::vector<RequisiteStatus> requisites;
  for (std::size_t d : node.requires_nodes) {
    if (d >= slots.size()) {
      continue;
    }
    RequisiteStatus& status = requisites.emplace_back();
    status.id = states[d].id;
    status.outcome = slots[d].failed()        ? RequisiteOutcome::failed
                     : slots[d].made_a_change ? RequisiteOutcome::changed
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
    succeed(index, "left alone (" + states[index].left_alone_by + "): kstate neither creates, changes nor deletes it");
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

asio::awaitable<void> Engine::Impl::dispatch(std::size_t index) {
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

std::string Engine::Impl::diff_label(const ObjectRef& ref) {
  std::string label = ref.gvk.group.empty() ? "" : ref.gvk.group + ".";
  label += ref.gvk.version + "." + ref.gvk.kind + ".";
  if (!ref.ns.empty()) {
    label += ref.ns + ".";
  }
  return label + ref.name;
}

std::string Engine::Impl::short_hash(std::string_view text) {
  return config_hash(json::Value(text.data(), text.size())).substr(0, 40);
}
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
  impl.live_objects.plan(impl.live_targets(), (*impl.planned)->topological_order);
  impl.live_objects.start(executor);
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
      if (!slot.failed() && !slot.uid.empty() && states[i].function == Function::object_present) {
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
  report.discovery_stale = impl.live_objects.discovery_stale();
  report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - impl.run_started).count();
  impl_.reset();
  co_return report;
}

}  // namespace kstate::states
