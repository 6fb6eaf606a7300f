// The engine's run (Engine::Impl), private to states/: what one run of the engine
// holds (its RunState, states/run_state.hpp: the states' slots and what they share;
// the stages it drives) and its steps, declared here and defined in a file per concern:
//  - states/engine.cpp: the orchestration (resolve the kinds, plan, start the reads,
//    run the plan, execute and dispatch one state, results and warnings);
//  - states/state_outcomes.cpp: a state's outcome (failed, succeeded, changed) in its
//    slot, its log line, and the server's warnings in its result;
//  - states/object_present.cpp: object_present (decide, create / replace / apply, take
//    fields over, the 409 retry, immutable fields, rediscovery);
//  - states/state_functions.cpp: object_updated, object_absent, and what the three
//    share (the object to send, fields left to others, readiness and deletion waits,
//    the restart a `watch` requisite asks for);
//  - states/unserved_objects.cpp: objects the server cannot read or validate yet (test
//    mode's new namespaces and CRDs, the versions a CRD update adds).
// The stages it drives have their own files and tests: live_objects.hpp (reads),
// scheduler.hpp, waits.hpp, crd_versions.hpp, and the pure decisions (present_decision,
// adoption, takeover, requisites).
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/log_fields.hpp"
#include "core/signal.hpp"
#include "states/compare.hpp"
#include "states/crd_versions.hpp"
#include "states/engine.hpp"
#include "states/live_objects.hpp"
#include "states/ordering.hpp"
#include "states/run_state.hpp"
#include "states/schema_validation.hpp"
#include "states/takeover.hpp"
#include "states/waits.hpp"

namespace kstate::states {

struct Engine::Impl : RunState {
  using Clock = std::chrono::steady_clock;
  using State = manifests::State;

  using Slot = StateSlot;

  // What test mode found checking an object locally (check_locally).
  struct LocalCheck {
    enum class Outcome { valid, invalid, not_validated };
    Outcome outcome = Outcome::not_validated;
    // What it was checked against (valid), that and each violation (invalid), or why
    // it could not be checked (not_validated): said in the state's result.
    std::string text;
  };

  DynamicClient& client;
  KindResolver& resolver;
  const EngineOptions& options;
  std::vector<State>& states;
  // The run's reads of live objects: each pair read once, in the background.
  LiveObjects live_objects;
  Clock::time_point run_started;
  std::optional<Result<Plan>> planned;
  // Engine::start resolves each kind once, not once per state (later resolutions, of
  // the kinds CRDs add, ask the resolver each time).
  bool resolving_up_front = false;
  std::map<GroupVersionKind, std::shared_ptr<const ApiResource>> kinds_resolved_up_front;
  bool preparing = false;  // prepare_ahead() is running (it refers to this Impl)
  std::unique_ptr<Signal> prepared_all;
  // The CRDs this run creates or updates, the server's, and discovery's lag behind them.
  CrdVersions crd_versions;
  // rediscover: discovery read again once per run, by the first state whose write met a
  // path the server does not serve; the others wait for that read.
  SharedResult<Status> rediscovered;

  Impl(DynamicClient& c, KindResolver& r, const EngineOptions& o, std::vector<State>& s)
      : RunState(s.size()),
        client(c),
        resolver(r),
        options(o),
        states(s),
        live_objects(c, o, s.size()),
        crd_versions(c, r, o.sleep) {}

  // --- states/engine.cpp: the orchestration -----------------------------------------
  asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) { co_await pause_for(options.sleep, duration); }
  WriteOptions write_options(bool apply) const;
  // Requests. Every DynamicClient call passes named lvalues: GCC 12 mis-destroys
  // temporaries and default arguments bound to coroutine parameters (a double free
  // seen in practice).
  asio::awaitable<Result<json::Document>> read_all(Slot& slot, const ListOptions& list_options);
  asio::awaitable<Result<json::Document>> create(Slot& slot, const json::Value& object);
  asio::awaitable<Result<json::Document>> put(Slot& slot, const json::Value& object);
  asio::awaitable<Result<json::Document>> patch(Slot& slot, PatchType type, const json::Value& body);
  asio::awaitable<Result<json::Document>> delete_object(Slot& slot, const DeleteOptions& delete_options);
  // Resolution.
  asio::awaitable<void> resolve(std::size_t index);
  void set_resource(std::size_t index, std::shared_ptr<const ApiResource> resource);
  // Live objects (states/live_objects.hpp).
  asio::awaitable<Result<const json::Value*>> live_object(std::size_t index, bool fresh = false);
  bool made_by_the_cluster_here(std::size_t index) const;
  void remember_live(std::size_t index, const json::Value& object);
  const json::Value& remember_live(std::size_t index, json::Document&& object);
  std::vector<LiveObjects::Target> live_targets() const;
  asio::awaitable<void> background_finished();
  asio::awaitable<void> prepare_ahead(const Plan& plan);
  // The plan.
  std::vector<PlanItem> plan_items() const;
  asio::awaitable<void> run_plan(const Plan& plan);
  // One state.
  void start_result(std::size_t index);
  asio::awaitable<void> execute(std::size_t index, const PlanNode& node);
  asio::awaitable<void> dispatch(std::size_t index);
  // "apps.v1.Deployment.ns.name", the label kubectl diff gives the compared files.
  static std::string diff_label(const ObjectRef& ref);
  static std::string short_hash(std::string_view text);

  // --- states/state_outcomes.cpp: a state's outcome in its slot ------------------
  void fail(std::size_t index, std::string comment);
  void succeed(std::size_t index, std::string comment);
  void changed(std::size_t index, Change change, const std::string& diff);
  LogFields log_fields(const Slot& slot, std::string_view action) const;
  static std::string one_line(std::string_view comment);
  static void set_only_change(json::Document& changes, std::string_view key, std::string_view text);
  void report_warnings(std::size_t index);

  // --- states/object_present.cpp --------------------------------------------------
  asio::awaitable<void> present(std::size_t index);
  asio::awaitable<Status> find_generated(std::size_t index);
  bool may_adopt(std::size_t index, const json::Value& live);
  std::string owned_labels_text() const;
  static std::string manifest_error(Error error, const json::Value& sent);
  asio::awaitable<bool> rediscover(std::size_t index, const Error& refused);
  void remove_what_takeover_releases(const TakeoverPlan& plan, json::Value& answer, const json::Value& desired) const;
  static bool has_last_applied(const json::Value& object);
  asio::awaitable<Status> take_over(std::size_t index, const json::Value& live);
  asio::awaitable<Result<json::Document>> apply_patch(std::size_t index, const json::Value& desired);
  asio::awaitable<void> report_write(std::size_t index, const json::Value& live, json::Document& written);
  asio::awaitable<Result<json::Document>> replace(std::size_t index, json::Document& desired, const json::Value* live);
  static void keep_allocated_fields(json::Document& body, const json::Value& live);
  asio::awaitable<void> immutable(std::size_t index, const Error& error, const json::Value& live);
  asio::awaitable<void> after_present(std::size_t index, const json::Value& object);

  // --- states/state_functions.cpp -------------------------------------------------
  asio::awaitable<void> updated(std::size_t index);
  asio::awaitable<Result<const json::Value*>> made_by_the_cluster(std::size_t index);
  asio::awaitable<Result<json::Document>> update_apply(std::size_t index, const json::Value& desired);
  asio::awaitable<void> after_update(std::size_t index, const json::Value& object);
  asio::awaitable<void> absent(std::size_t index, bool fresh = false);
  asio::awaitable<Status> wait_gone(std::size_t index, const manifests::Wait& wait, const std::string& deleted_uid);
  static bool wants_wait(const manifests::Wait& wait);
  asio::awaitable<void> wait_ready(std::size_t index, const json::Value& written);
  ObjectWait object_wait(Slot& slot);
  json::Document desired_object(std::size_t index, bool with_ownership = true);
  static StoredFormOptions stored_form(const Slot& slot);
  std::vector<std::string> ignored_fields(std::size_t index) const;
  asio::awaitable<void> give_up_ignored_fields(std::size_t index, json::Document& desired, const json::Value& live,
                                               bool live_is_current);
  asio::awaitable<void> restart_for_watch(std::size_t index, const std::vector<std::string>& watched_changes);

  // --- states/unserved_objects.cpp ------------------------------------------------
  asio::awaitable<void> pending_namespace(std::size_t index);
  asio::awaitable<LocalCheck> check_locally(std::size_t index, const json::Value& object, const std::string& not_yet,
                                            Completeness completeness = Completeness::whole_object);
  void name_custom_resource(std::size_t index, const json::Value& crd);
  asio::awaitable<void> until_discovery_lists_version(std::size_t index);
  void version_added_by_update(std::size_t index, const json::Value& crd);
  asio::awaitable<void> absent_in_version_added_by_update(std::size_t index, const json::Value& crd, bool dry_run_crd);
  asio::awaitable<void> pending_custom_resource(std::size_t index, const json::Value& crd);
  asio::awaitable<void> would_update_created(std::size_t index);
};

}  // namespace kstate::states
