// Run reports in the three formats of `-o`: text (Salt highstate-like summary,
// coloured on a terminal), json (Salt's return structure) and junit (one testcase
// per state, for CI). Reports only ever see masked diffs; they never touch objects.
#pragma once

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "states/inventory.hpp"
#include "states/state_result.hpp"

namespace kstate::states {

struct RunReport {
  std::vector<StateResult> results;  // in manifest order
  bool test_mode = false;
  double total_ms = 0;
  // Load errors, prune notes and other problems not attached to a state ("file:line: message").
  std::vector<std::string> errors;
  int failed_files = 0;
  // Information that is not an error (e.g. why prune was held back).
  std::vector<std::string> notes;
  // For inventory and prune (real mode): objects that exist as declared after this
  // run, with their UIDs, and every object the manifests declare present.
  std::vector<InventoryEntry> applied;
  std::set<ObjectKey> declared;
  bool discovery_failed = false;
  // A request found a path discovery listed not served (a CRD's plural, scope or versions
  // changed): reconcile reads discovery again before it returns.
  bool discovery_stale = false;
  // With ReconcileOptions::defer_prune: inventory entries no manifest declares any more,
  // left for a later cycle to prune (none is deleted by this one).
  std::size_t prune_deferred = 0;
  // Entries no manifest declares that this cycle's prune kept in the inventory for a
  // cause of their own (a Namespace or CRD still holding objects, prune disabled on
  // it); not those kept because prune was held back or their object could not be
  // looked at.
  std::set<ObjectKey> kept_for_cause;
  // The writer (states/writer.hpp) that reconciles the ApplySet, when it is not this
  // one and this run therefore wrote nothing; empty otherwise.
  std::string writer_conflict;

  int succeeded() const;  // result true or pending
  int failed() const;     // result false
  int changed() const;    // succeeded with changes (or pending)
  int pending() const;    // result null (test mode)
  // DESIGN exit codes: apply 0/2; test 0 nothing would change, 1 changes pending, 2 errors.
  int exit_code() const;
};

struct TextOptions {
  bool color = false;
  bool show_unchanged = true;  // list states that succeeded without changes
};

void write_text(std::ostream& out, const RunReport& report, const TextOptions& options = {});
void write_json(std::ostream& out, const RunReport& report);
void write_junit(std::ostream& out, const RunReport& report);

// True when `out` is a terminal and NO_COLOR is not set.
bool want_color(int file_descriptor);

}  // namespace kstate::states
