// What object_present does with the object it finds, decided before any write from
// facts the engine gathered (its reads, the adoption verdict, the comparison with the
// server's stored form): a pure function with table tests, as decide_prune. The engine
// (states/engine.cpp, present()) acts on it:
//   skip_being_deleted  the live object has a deletionTimestamp: nothing is sent (what
//                       is written now would go with it); it is created again once gone.
//   keep_create_only    it exists and the strategy is create-only: never updated.
//   refuse_adoption     it exists, is not kstate's and may not be taken over
//                       (states/adoption.hpp): left unchanged, the state fails saying why.
//   already_good        the server holds what the manifest says: no write.
//   create              absent, and named by the server (generateName) or written
//                       with a strategy other than apply: POST.
//   replace             strategy replace: PUT.
//   apply               server-side apply: PATCH (absent objects too).
// take_over: before an apply to an object kstate did not write (no configuration hash
// of its own), or that `kubectl apply` wrote since, the fields other managers own are
// taken over (states/takeover.hpp).
#pragma once

#include "manifests/state.hpp"

namespace kstate::states {

enum class PresentAction {
  skip_being_deleted,
  keep_create_only,
  refuse_adoption,
  already_good,
  create,
  replace,
  apply
};
const char* to_string(PresentAction action);

struct PresentFacts {
  bool exists = false;
  bool being_deleted = false;  // the live object has a deletionTimestamp
  bool named = true;           // false: generateName, the server picks the name
  manifests::Strategy strategy = manifests::Strategy::apply;
  bool adoption_refused = false;   // decide_adoption refused to take it over
  bool takeover_disabled = false;  // kstate.io/takeover: disabled
  // The live object carries kubectl's last-applied annotation and the manifest does not.
  bool kubectl_applied = false;
  bool live_has_config_hash = false;  // kstate.io/config-hash on the live object
  bool config_hash_matches = false;   // the same hash on the live and the desired object
  bool stored_subset = false;         // the server's stored form holds the manifest (is_stored_subset)
};

struct PresentDecision {
  PresentAction action = PresentAction::apply;
  bool take_over = false;
  friend bool operator==(const PresentDecision&, const PresentDecision&) = default;
};

PresentDecision decide_present(const PresentFacts& facts);

}  // namespace kstate::states
