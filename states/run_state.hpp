// What one run of the engine knows about its states while it runs (the engine's run
// state): for each state a slot, with its lifecycle as one status (waiting, running,
// succeeded, failed) and the facts its steps record, named; and the facts the states
// share (test mode's pending Namespaces and objects, the warnings already logged).
// The steps that read and write it are Engine::Impl's (states/engine_impl.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "states/engine.hpp"
#include "states/state_result.hpp"
#include "states/takeover.hpp"

namespace kstate::states {

// Where a state is in its run. A state not selected (EngineOptions::selected) stays
// waiting: it never runs.
enum class SlotStatus {
  waiting,    // not started: its requisites are not done, or no worker was free
  running,    // execute() began it
  succeeded,  // its result is set: true, or (test mode) a change pending
  failed,     // its result is false (and stays so whatever comes after)
};

struct StateSlot {
  SlotStatus status = SlotStatus::waiting;
  bool selected = true;                         // EngineOptions::selected
  std::shared_ptr<const ApiResource> resource;  // shared by the states of one kind
  std::optional<Error> resolve_error;
  ObjectRef ref;
  StateResult result;
  std::optional<std::chrono::steady_clock::time_point> started;  // when execute() began it
  // The object present() sends, built ahead while the live objects are being read
  // (EngineOptions::prepare_ahead); present() takes it.
  std::optional<json::Document> prepared;
  // What it did: made (test mode: would make) a change, which its onchanges and watch
  // requisites see; created the object (or would create it).
  bool made_a_change = false;
  bool created_by_this_run = false;
  std::string uid;  // of the object as it exists after an object_present
  // Retries, each made at most once: a create of it was answered 409 AlreadyExists (read
  // it and decide again); a write of it was answered 404 page not found (discovery read
  // again, rediscover).
  bool create_answered_already_exists = false;
  bool discovery_read_again = false;
  // The server's warnings on the requests made for this state (its pair's read's are
  // LiveObjects'), printable; they go into its result when it ends.
  std::vector<std::string> warnings;
  // An existing object kstate did not create, taken over by this write (adoption.hpp):
  // reported "adopted"; `adopted_from` names the tool that managed it, if any.
  bool adopting = false;
  std::string adopted_from;
  // The managers whose fields this object_present took over (takeover.hpp), and in
  // test mode the plan, to show what the apply after it would remove.
  std::vector<std::string> taken_over_from;
  std::optional<TakeoverPlan> takeover;

  bool finished() const { return status == SlotStatus::succeeded || status == SlotStatus::failed; }
  bool failed() const { return status == SlotStatus::failed; }
};

// The slots, by state index, and what the states of one run share.
struct RunState {
  std::vector<StateSlot> slots;
  // Test mode: Namespaces and objects ("Kind/ns/name") only this run would create.
  std::set<std::string> pending_namespaces;
  std::set<std::string> pending_objects;
  // A CRD of this run became Established since discovery was last read: a kind that
  // does not resolve reads discovery again once.
  bool crd_established_since_refresh = false;
  // Warning texts already logged by this run (each is logged once per run).
  std::set<std::string, std::less<>> logged_warnings;

  explicit RunState(std::size_t state_count) : slots(state_count) {}
};

}  // namespace kstate::states
