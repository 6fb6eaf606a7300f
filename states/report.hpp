// Run reports in the three formats of `-o`: text (coloured on a terminal, as much of
// each state as --state-output asks: kubectl-like lines by default, Salt's highstate
// blocks with `full`), json (Salt's return structure) and junit (one testcase per
// state, for CI). Reports only ever see masked diffs; they never touch objects.
#pragma once

#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
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
  // Failed states and the errors attached to none (a file that did not load): what
  // makes the exit code 2, so the summary's "Failed" agrees with it.
  int failures() const;
  int unchanged() const;  // succeeded without a change
  int changed() const;    // succeeded with changes (or pending)
  int pending() const;    // result null (test mode)
  // DESIGN exit codes: apply 0/2; test 0 nothing would change, 1 changes pending, 2 errors.
  int exit_code() const;
};

// How much of each state the text report shows (--state-output, the daemon's
// `state-output`), with Salt's names for Salt's modes (its state_output) and kstate's
// default, concise: what changed or failed, one line each, as kubectl apply.
enum class StateOutput {
  concise,  // changes and failures one line each (test: each pending change's diff too), unchanged counted only
  terse,    // every state one line (Salt's terse)
  mixed,    // failures in full, the others one line (Salt's mixed)
  changes,  // changes and failures in full, the others one line (Salt's changes)
  full,     // every state in full (Salt's default highstate output)
};
inline constexpr StateOutput all_state_outputs[] = {StateOutput::concise, StateOutput::terse, StateOutput::mixed,
                                                    StateOutput::changes, StateOutput::full};
std::optional<StateOutput> parse_state_output(std::string_view name);
std::string_view to_string(StateOutput output);

// What the text report shows of one state.
enum class Detail {
  hidden,         // counted in the summary only
  line,           // "Kind/ns/name created (file:line)"; a failure's comment follows it
  line_and_diff,  // the line, then the change's diff
  block,          // Salt's block: ID, Function, Name, Result, Comment, Source, Duration, Changes
};
Detail detail_of(StateOutput output, const StateResult& result);

struct TextOptions {
  bool color = false;
  StateOutput state_output = StateOutput::concise;
};

void write_text(std::ostream& out, const RunReport& report, const TextOptions& options = {});
void write_json(std::ostream& out, const RunReport& report);
void write_junit(std::ostream& out, const RunReport& report);

// True when `out` is a terminal and NO_COLOR is not set.
bool want_color(int file_descriptor);

}  // namespace kstate::states
