// One reconcile cycle (see reconcile.hpp): the ApplySet parent read, the writer check,
// the pending record sent while the states are planned, the engine run, then prune
// and the inventory written back. The bookkeeping steps live in cycle_inventory.cpp,
// prune's reads and deletes in prune_server.cpp, its rules in prune.cpp.
#include "states/reconcile.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>

#include "core/signal.hpp"
#include "core/strings.hpp"
#include "states/cycle_inventory.hpp"
#include "states/inventory.hpp"
#include "states/prune.hpp"
#include "states/prune_server.hpp"

namespace kstate::states {

struct CycleStart::Parent {
  std::optional<ApiResource> secrets;
  json::Document object;  // Null when it does not exist yet
  Error error;
  bool readable = false;
  bool none = false;       // the run has no ApplySet (ReconcileOptions::parent unset)
  LoadedInventory loaded;  // when readable
};

namespace {

using Clock = std::chrono::steady_clock;

using ParentSecret = CycleStart::Parent;

asio::awaitable<ParentSecret> read_parent(DynamicClient& client, KindResolver& resolver, const ApplySetParent& parent) {
  ParentSecret result;
  GroupVersionKind secret_kind{"", "v1", "Secret"};
  auto secrets = co_await resolver.resolve(secret_kind);
  if (!secrets.ok()) {
    result.error = secrets.error();
    co_return result;
  }
  result.secrets = *secrets;
  // (named lvalues: GCC 12 mis-destroys temporaries bound to coroutine parameters)
  std::string ns = parent.ns;
  std::string name = parent.name;
  std::string subresource;
  auto got = co_await client.get(*secrets, ns, name, subresource);
  if (got.ok()) {
    result.object = std::move(got).value();
    result.readable = true;
  } else if (got.error().object_missing()) {
    result.readable = true;
  } else {
    // Includes "404 page not found" (a path not served, no Status naming the Secret):
    // it says nothing about the parent, and read as "none" the run would record a
    // fresh set and forget what the old record named.
    result.error = got.error();
  }
  co_return result;
}

// Writes the parent Secret with this inventory (server-side apply, idempotent).
asio::awaitable<Status> write_parent(DynamicClient& client, const ParentSecret& parent, const ReconcileOptions& options,
                                     const Inventory& inventory) {
  const std::string encoded = encode_inventory(inventory);
  if (encoded.size() > max_secret_data_bytes) {
    // The API server would refuse it ("data: Too long"); say why, and what to do.
    co_return Error(ErrorKind::invalid_input,
                    "the inventory of " + std::to_string(inventory.entries.size() + inventory.pending.size()) +
                        " objects takes " + std::to_string(encoded.size()) + " bytes, more than the " +
                        std::to_string(max_secret_data_bytes) +
                        " a Secret can hold (about 10,000 objects fit): split the manifests over several "
                        "folders, each with its own ApplySet parent (kstate apply --applyset-name, or "
                        "applyset.name in the daemon config)");
  }
  const std::string writer = options.writer ? options.writer->to_string() : std::string();
  json::Document secret = make_parent_secret(*options.parent, options.kstate_version, inventory, encoded, writer);
  WriteOptions write;
  write.field_manager = options.engine.field_manager;
  write.force = true;
  std::string ns = options.parent->ns;
  std::string name = options.parent->name;
  std::string body = json::dump(secret);
  std::string subresource;
  auto written = co_await client.patch(*parent.secrets, ns, name, PatchType::apply, body, write, subresource);
  if (!written.ok()) {
    co_return written.error();
  }
  co_return ok_status();
}

// A write started now and awaited later, on this thread's executor: the cycle sends
// its pending inventory entries, then plans while they travel. finished() returns
// however the write ended (an exception too, as an error).
class InFlightWrite {
 public:
  explicit InFlightWrite(const asio::any_io_executor& executor)
      : executor_(executor), ended_(std::make_shared<Signal>(executor)) {}

  void start(asio::awaitable<Status> write) {
    auto wait_for = [](asio::awaitable<Status> pending,
                       std::shared_ptr<std::optional<Status>> into) -> asio::awaitable<void> {
      *into = co_await std::move(pending);
    };
    asio::co_spawn(executor_, wait_for(std::move(write), result_),
                   [result = result_, ended = ended_](std::exception_ptr failure) {
                     if (failure) {
                       *result = Status(Error(ErrorKind::internal, "internal error while writing the ApplySet parent"));
                     }
                     ended->notify();
                   });
  }

  asio::awaitable<Status> finished() {
    while (!result_->has_value()) {
      co_await ended_->wait();
    }
    co_return std::move(**result_);
  }

 private:
  asio::any_io_executor executor_;
  std::shared_ptr<Signal> ended_;
  std::shared_ptr<std::optional<Status>> result_ = std::make_shared<std::optional<Status>>();
};

// The writer the parent records (kstate.io/writer), if any.
std::optional<std::string> recorded_writer_of(const ParentSecret& parent) {
  if (parent.object.IsNull()) {
    return std::nullopt;
  }
  const json::Value* annotation =
      json::find_path(parent.object, {"metadata", "annotations", std::string(writer_annotation)});
  if (annotation == nullptr || !annotation->IsString()) {
    return std::nullopt;
  }
  return std::string(annotation->GetString(), annotation->GetStringLength());
}

}  // namespace

std::map<std::string, std::string> ownership_labels(const ApplySetParent& parent) {
  return {{std::string(managed_by_label), std::string(managed_by_value)},
          {std::string(applyset_part_of_label), applyset_id(parent)}};
}

std::map<std::string, std::string> ownership_labels(const std::optional<ApplySetParent>& parent) {
  return parent ? ownership_labels(*parent) : std::map<std::string, std::string>();
}

asio::awaitable<CycleStart> begin_cycle(DynamicClient& client, KindResolver& resolver,
                                        const ReconcileOptions& options) {
  CycleStart start;
  if (!options.parent) {
    start.parent = std::make_shared<CycleStart::Parent>();
    start.parent->none = true;
    start.parent->readable = true;
    co_return start;
  }
  start.parent = std::make_shared<CycleStart::Parent>(co_await read_parent(client, resolver, *options.parent));
  ParentSecret& parent = *start.parent;
  if (parent.readable) {
    parent.loaded = load_inventory(parent.object.IsNull() ? nullptr : &parent.object);
  }
  // The same condition as reconcile's reads across namespaces (`recorded` below).
  if (options.read_ahead && !options.only_files && parent.readable &&
      parent.loaded.status != InventoryStatus::corrupt) {
    std::vector<GroupVersionKind> kinds = ReadAhead::kinds_to_list(parent.loaded.inventory);
    if (!kinds.empty()) {
      start.read_ahead = ReadAhead::start(client, resolver, kinds, label_selector(options.engine.ownership_labels),
                                          co_await asio::this_coro::executor);
    }
  }
  co_return start;
}

asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options) {
  CycleStart start = co_await begin_cycle(client, resolver, options);
  RunReport report = co_await reconcile(client, resolver, states, options, start);
  if (start.read_ahead) {
    co_await start.read_ahead->finished();
  }
  co_return report;
}

asio::awaitable<RunReport> reconcile(DynamicClient& client, KindResolver& resolver,
                                     std::vector<manifests::State>& states, const ReconcileOptions& options,
                                     CycleStart& start) {
  auto started = Clock::now();
  const bool test_mode = options.engine.test_mode;
  const std::string id = options.parent ? applyset_id(*options.parent) : std::string();
  const std::string parent_name = options.parent ? options.parent->ns + "/" + options.parent->name : std::string();

  if (!start.parent) {
    start = co_await begin_cycle(client, resolver, options);
  }
  ParentSecret& parent = *start.parent;
  LoadedInventory loaded = std::move(parent.loaded);
  const Inventory original = loaded.inventory;
  // What the parent holds, as far as this cycle knows: the original, or the inventory
  // with this cycle's pending entries once they are written (not modified after that).
  const Inventory* on_server = &original;
  const bool tracking = parent.readable && !parent.none && loaded.status != InventoryStatus::corrupt;

  // Before anything is applied, record what this cycle may create or take over
  // (pending entries), so that a cycle that dies half-way never leaves an object that
  // kstate created but did not record, and so could never prune.
  if (!test_mode && !parent.readable) {
    RunReport report;
    report.errors.push_back("inventory: cannot read the ApplySet parent Secret " + parent_name + ": " +
                            parent.error.describe() + " (nothing applied, nothing pruned)");
    report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    co_return report;
  }
  // Who may write the set: another writer's set is left alone (states/writer.hpp).
  WriterVerdict verdict = WriterVerdict::same;
  std::vector<std::string> report_notes_before;
  std::string recorded_writer;
  if (options.writer && parent.readable && !parent.none) {
    std::optional<std::string> recorded = recorded_writer_of(parent);
    recorded_writer = recorded.value_or("");
    verdict = decide_writer(recorded, *options.writer, options.leader_elected);
    if (verdict == WriterVerdict::conflict && !test_mode) {
      RunReport report;
      report.writer_conflict = recorded_writer;
      report.errors.push_back("ApplySet " + parent_name + " is reconciled by " + recorded_writer +
                              ", not by this writer (" + options.writer->to_string() +
                              "): nothing applied, nothing pruned, so that the two never undo each other's work "
                              "(to resolve it, see docs/ownership.md)");
      report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
      co_return report;
    }
    if (verdict == WriterVerdict::conflict) {  // (test mode: shown, nothing would be pruned)
      report_notes_before.push_back("ApplySet " + parent_name + " is reconciled by " + recorded_writer +
                                    ": a real run of this writer would write nothing");
    }
    if (verdict == WriterVerdict::claim && !recorded_writer.empty() && !test_mode) {
      spdlog::warn(
          "ApplySet {}: taking over from {} (leader election): objects this writer does not declare are "
          "kept, never pruned by it",
          parent_name, recorded_writer);
    }
  }
  EngineOptions engine_options = options.engine;
  if (options.only_files) {
    const std::set<std::string>& files = *options.only_files;
    const auto* only_states = options.only_states ? &*options.only_states : nullptr;
    engine_options.selected = [&files, only_states](const manifests::State& state) {
      return files.count(state.source.file) > 0 && (only_states == nullptr || only_states->count(state.id) > 0);
    };
  }
  if (tracking && !options.only_files) {
    // Objects the inventory records are read per kind across namespaces (engine.hpp).
    // Not when only some files' states run: that LIST would return every object of the
    // kind kstate owns, most of them not needed.
    const Inventory& recorded = loaded.inventory;
    engine_options.recorded = [&recorded](const ObjectRef& ref) {
      return recorded.find(ObjectKey{ref.gvk.group, ref.gvk.kind, ref.ns, ref.name}) != nullptr;
    };
    engine_options.read_ahead = start.read_ahead;
  }
  Engine engine(client, resolver, engine_options);
  // Before anything is applied, the pending entries are sent, then the states are
  // planned and their live objects read while that record is on its way: reads may go
  // first, no write goes before the record is on the server (engine.run). The record's
  // round trip hides the planning (1.2 ms for 1,000 states here, more on a slow CPU).
  const auto preparing = Clock::now();
  std::optional<InFlightWrite> record;
  if (!test_mode && tracking) {
    // What the states declare matters to earlier cycles' pending entries only.
    const bool earlier_pending = !loaded.inventory.pending.empty();
    std::set<ObjectKey> declared_now;
    std::vector<InventoryEntry> intents;
    NamespacedKinds kinds;
    for (const auto& state : states) {
      const bool runs = (!options.only_files || options.only_files->count(state.source.file) > 0) &&
                        (!options.only_states || options.only_states->count(state.id) > 0);
      if (!runs && !earlier_pending) {
        continue;  // (a daemon's one-file cycle: the other files' states)
      }
      auto entry = co_await declared_entry(resolver, state, options.engine.default_namespace, kinds);
      if (!entry) {
        continue;
      }
      ObjectKey key = entry->key();
      if (runs && loaded.inventory.find(key) == nullptr) {
        intents.push_back(std::move(*entry));
      }
      if (earlier_pending) {
        declared_now.insert(std::move(key));
      }
    }
    // Whole seconds, as the inventory stores them, so that what this cycle writes
    // compares equal to what it reads back.
    const std::chrono::system_clock::time_point now = std::chrono::floor<std::chrono::seconds>(options.now());
    co_await recover_pending(client, resolver, loaded.inventory, declared_now, id, options.engine.default_namespace,
                             now);
    // Pending from now on, unless recorded meanwhile (recover_pending) or already pending
    // from an earlier cycle. Sorted first, so that both lists are walked once: a cold
    // apply of N objects has N intents.
    add_pending(loaded.inventory, std::move(intents), earlier_pending, now);
    if (!(loaded.inventory == original)) {
      // loaded.inventory is not changed until the record is answered.
      record.emplace(co_await asio::this_coro::executor);
      record->start(write_parent(client, parent, options, loaded.inventory));
      // Lets the write run until it waits for the network (it is queued first), so that
      // the request is on its way before the planning starts.
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
  }
  const auto planning = Clock::now();
  // Not left while the record is in flight: it refers to this frame.
  std::exception_ptr planning_failed;
  try {
    co_await engine.start(states);
  } catch (...) {
    planning_failed = std::current_exception();
  }
  const auto plan_made = Clock::now();
  if (record) {
    Status written = co_await record->finished();
    if (planning_failed) {
      std::rethrow_exception(planning_failed);
    }
    spdlog::debug(
        "timing: {} pending inventory entries prepared in {:.1f} ms, states planned in {:.1f} ms, the entries "
        "recorded before any write {:.1f} ms after they were sent",
        loaded.inventory.pending.size(), std::chrono::duration<double, std::milli>(planning - preparing).count(),
        std::chrono::duration<double, std::milli>(plan_made - planning).count(),
        std::chrono::duration<double, std::milli>(Clock::now() - planning).count());
    if (written.ok()) {
      on_server = &loaded.inventory;
    } else {
      RunReport report;
      report.errors.push_back(
          "inventory: cannot record the objects about to be applied in the ApplySet parent "
          "Secret " +
          parent_name + ": " + written.error().describe() + " (nothing applied, nothing pruned)");
      report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
      co_await engine.abandon();
      co_return report;
    }
  } else if (planning_failed) {
    std::rethrow_exception(planning_failed);
  }

  const auto running = Clock::now();
  RunReport report = co_await engine.run(states);
  report.notes.insert(report.notes.begin(), report_notes_before.begin(), report_notes_before.end());
  spdlog::debug("timing: {} states run in {:.1f} ms", report.results.size(),
                std::chrono::duration<double, std::milli>(Clock::now() - running).count());
  if (report.discovery_stale) {
    // Read once, so that the next cycle (the daemon's retry, the next `kstate apply`,
    // whose disk cache this rewrites) resolves the kinds as the server now serves them.
    if (auto refreshed = co_await resolver.refresh(); !refreshed.ok()) {
      report.notes.push_back("discovery could not be read again: " + refreshed.error().describe());
    }
  }

  if (!parent.readable) {
    report.errors.push_back("inventory: cannot read the ApplySet parent Secret " + parent_name + ": " +
                            parent.error.describe() + " (nothing pruned)");
    co_return report;
  }
  if (loaded.status == InventoryStatus::corrupt) {
    report.notes.push_back("inventory in Secret " + parent_name + " is unreadable (" + loaded.problem +
                           "): prune refused");
  }

  if (verdict == WriterVerdict::claim && tracking) {
    // This writer takes the set: what it does not declare was another writer's (or is
    // from before kstate recorded writers), and it never prunes that.
    std::set<ObjectKey> declared = report.declared;
    declare_generated(states, loaded.inventory, declared);
    const std::size_t inherited = inherit_undeclared(loaded.inventory, declared);
    if (inherited > 0) {
      report.notes.push_back("ApplySet " + parent_name + ": " + std::to_string(inherited) +
                             " recorded object(s) this writer does not declare were recorded by " +
                             (recorded_writer.empty() ? std::string("an earlier writer") : recorded_writer) +
                             ": kept, and never pruned unless this writer declares them");
    }
  }

  std::vector<ObjectKey> removed;
  if (options.prune && options.defer_prune && !parent.none) {
    std::set<ObjectKey> declared = report.declared;
    declare_generated(states, loaded.inventory, declared);
    for (const InventoryEntry& entry : loaded.inventory.entries) {
      const ObjectKey key = entry.key();
      report.prune_deferred +=
          declared.count(key) == 0 && options.kept_before.count(key) == 0 && !is_inherited(entry) ? 1 : 0;
    }
  } else if (options.prune && !parent.none) {
    PruneInput input;
    // Lent to the prune decision (not copied) and taken back right after it.
    input.inventory = std::move(loaded.inventory);
    input.declared = report.declared;
    declare_generated(states, input.inventory, input.declared);
    input.applyset_id = id;
    input.guards.prune_enabled = true;
    input.guards.load_failed = options.load_failed;
    input.guards.state_failed = report.failed() > 0;
    input.guards.discovery_failed = report.discovery_failed;
    input.guards.manifests_empty = options.manifests_empty;
    input.guards.allow_empty_prune = options.allow_empty_prune;
    input.guards.inventory_corrupt = loaded.status == InventoryStatus::corrupt;
    input.guards.other_writer = verdict == WriterVerdict::conflict;
    if (held_guards(input.guards).empty()) {
      if (options.check_sources) {
        std::set<std::string> sources;
        for (const InventoryEntry& entry : input.inventory.entries) {
          if (input.declared.count(entry.key()) == 0 && !is_inherited(entry)) {
            sources.insert(entry.source);
          }
        }
        if (!sources.empty()) {
          input.sources_held = options.check_sources(sources);
        }
      }
      input.live = co_await read_prune_candidates(client, resolver, input.inventory, input.declared);
      input.containers_held = co_await containers_held(client, resolver, input.inventory, input.live, input.declared);
    }
    PruneDecision decision = decide_prune(input);
    loaded.inventory = std::move(input.inventory);
    if (!decision.held_back_by.empty()) {
      report.notes.push_back("prune held back: " + strings::join(decision.held_back_by, "; "));
    }
    report_kept(decision, report);
    removed = decision.forget;
    co_await delete_pruned(client, resolver, decision.deletes, test_mode, report, removed);
  }

  if (!test_mode && tracking) {
    Inventory next = next_inventory(loaded.inventory, report.applied, removed, options.engine.default_namespace);
    if (parent.object.IsNull() || !(next == *on_server) || verdict == WriterVerdict::claim) {
      if (auto written = co_await write_parent(client, parent, options, next); !written.ok()) {
        report.errors.push_back("inventory: cannot write the ApplySet parent Secret " + parent_name + ": " +
                                written.error().describe());
      }
    }
  }
  report.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  co_return report;
}

}  // namespace kstate::states
