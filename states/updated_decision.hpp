// What object_updated and object_absent do with the object they find, decided before
// any write from facts the engine gathered: pure functions with table tests, as
// decide_present (present_decision.hpp) and decide_prune. The engine's state
// functions act on them.
//
// object_updated changes fields of an object that must already exist; it never
// creates one:
//   refuse_strategy       a strategy other than apply (create-only, replace are
//                         object_present's): the state fails saying so, nothing read.
//   would_update_created  test mode, not found, but an object_present of this run
//                         would create it: the update is shown on what it would create.
//   wait_for_the_cluster  not found, in a Namespace this run created, and one
//                         kube-controller-manager makes in each new namespace (the
//                         default ServiceAccount, kube-root-ca.crt): waited for, then
//                         decided again as found.
//   fail_missing          not found: the state fails ("does not exist").
//   already_good          the server's stored form holds the fields: no write.
//   apply                 `strategy: apply`: server-side apply under the state's own
//                         field manager.
//   merge_patch           no strategy: a JSON merge patch.
//
// object_absent deletes an object when it exists:
//   already_absent   not found: nothing sent.
//   remove           a DELETE (dryRun=All in test mode).
//   remove_and_wait  a DELETE, then wait until that object (its UID) is gone (`wait`,
//                    real mode only: a dry run deletes nothing to wait for).
#pragma once

#include "manifests/state.hpp"

namespace kstate::states {

enum class UpdatedAction {
  refuse_strategy,
  would_update_created,
  wait_for_the_cluster,
  fail_missing,
  already_good,
  apply,
  merge_patch
};
const char* to_string(UpdatedAction action);

struct UpdatedFacts {
  bool strategy_given = false;  // the state names a strategy
  manifests::Strategy strategy = manifests::Strategy::apply;
  bool test_mode = false;
  bool exists = false;
  bool created_by_this_run = false;       // test mode: an object_present of this run would create it
  bool made_by_the_cluster_here = false;  // in a Namespace this run created, and made in each new one
  bool stored_subset = false;             // (when it exists) the server's stored form holds the state's fields
};

UpdatedAction decide_updated(const UpdatedFacts& facts);

enum class AbsentAction { already_absent, remove, remove_and_wait };
const char* to_string(AbsentAction action);

struct AbsentFacts {
  bool exists = false;
  bool test_mode = false;
  bool wait = false;  // the state asks to wait until the object is gone
};

AbsentAction decide_absent(const AbsentFacts& facts);

}  // namespace kstate::states
