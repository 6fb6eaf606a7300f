// One writer per ApplySet. The parent Secret records which writer last reconciled the
// set (annotation kstate.io/writer: "daemon <host>:<manifests-dir>" or "apply
// <host>:<paths>"), and every cycle decides, from that record alone, whether it may
// write: two daemons whose folders differ must never prune and re-create each other's
// objects, and a standby that takes over with an older folder must never prune what
// only the previous leader declared. The decision is a pure function (decide_writer)
// with table tests; states/reconcile acts on it:
//   same       this writer wrote the set last: a cycle as usual.
//   claim      no writer is recorded (a new set, or one written before kstate recorded
//              writers) or this one may take the set over (leader election: the Lease
//              proves there is one writer): the cycle records itself as the writer, and
//              every inventory entry it does not declare becomes inherited (never pruned
//              until this writer declares the object itself, see states/prune.hpp).
//   conflict   another writer reconciles the set: nothing is written (no apply, no
//              prune, no inventory), so the two never fight; the daemon says so in its
//              log, /readyz and kstate_applyset_writer_conflict until an operator
//              resolves it (docs/ownership.md).
// One-shot `kstate apply` runs named with --applyset-name count as one writer among
// themselves (a CI job's host and checkout path change from run to run; the set was
// named on purpose, as kubectl's --applyset): they never write into a set a daemon
// reconciles.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kstate::states {

inline constexpr std::string_view writer_annotation = "kstate.io/writer";

struct Writer {
  enum class Mode { daemon, apply };
  Mode mode = Mode::daemon;
  std::string host;
  std::string folder;  // the daemon's manifests-dir; apply: its paths, made absolute, comma-separated
  // "daemon <host>:<folder>": what the annotation holds.
  std::string to_string() const;
  // The writer an annotation names; nullopt when it is not one kstate wrote.
  static std::optional<Writer> parse(std::string_view text);
  friend bool operator==(const Writer&, const Writer&) = default;
};

enum class WriterVerdict {
  same,      // this writer reconciled the set last
  claim,     // no writer recorded, or this one takes over: what it does not declare is inherited
  conflict,  // another writer reconciles the set: write nothing
};
const char* to_string(WriterVerdict verdict);

// `recorded`: the parent's annotation (nullopt: no parent, or no annotation).
// `leader_elected`: the daemon runs with leader election on and holds the Lease.
WriterVerdict decide_writer(const std::optional<std::string>& recorded, const Writer& self, bool leader_elected);

// This machine's host name (gethostname), or "localhost" when it has none.
std::string local_host_name();

}  // namespace kstate::states
