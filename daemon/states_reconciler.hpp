// The daemon's real Reconciler (daemon/reconciler.hpp) on top of the states layer:
// manifests are loaded per file and cached with the SHA-256 of their content (and of
// the files they include), so a file event whose content did not change costs nothing,
// and with a stat fingerprint of each (daemon/file_fingerprint.hpp), so a resync reads
// again only the files whose stat says they may have changed;
// references are re-checked across the whole set on every cycle; states run through
// states::reconcile (engine + inventory + prune with every guard). The client and the
// discovery (disk cache) are built lazily and rebuilt when a reload changes how the
// cluster is reached. Counters of the transport and discovery go to DaemonMetrics.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/dynamic_client.hpp"
#include "daemon/config.hpp"
#include "daemon/drift_queue.hpp"
#include "daemon/drift_watch.hpp"
#include "daemon/file_fingerprint.hpp"
#include "daemon/file_security.hpp"
#include "daemon/manifest_settle.hpp"
#include "daemon/metrics.hpp"
#include "daemon/reconciler.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/reconcile.hpp"
#include "states/report.hpp"
#include "states/writer.hpp"

namespace kstate::daemon {

// Pure: the ReconcileSummary of a cycle's report (engine verbs -> created/updated/deleted).
ReconcileSummary summarize(const states::RunReport& report);

class StatesReconciler : public Reconciler {
 public:
  // `clock` (the real one when null): its wall time is what file times are compared
  // with, its monotonic time and timers pace drift corrections, the wait for files to
  // settle and the memory release.
  StatesReconciler(boost::asio::io_context& io, DaemonConfig config, DaemonMetrics& metrics,
                   std::shared_ptr<const Clock> clock = nullptr);
  ~StatesReconciler() override;

  boost::asio::awaitable<ReconcileSummary> full_reconcile(FullPrune prune) override;
  boost::asio::awaitable<ReconcileSummary> reconcile_files(std::vector<std::string> changed,
                                                           std::vector<std::string> removed) override;
  Status reconfigure(const DaemonConfig& config) override;
  // Restarts the wait before free memory is given back, so that a batch that runs no
  // cycle (only files that are not manifests) does not leave it resident.
  void prepare_for_cycle() override;
  void request_stop() override { stopping_ = true; }
  Result<std::unique_ptr<AsyncLeaseStore>> lease_store(const LeaderElectionConfig& config) override;
  void set_write_gate(std::function<bool()> may_write) override { may_write_ = std::move(may_write); }
  std::string api_server_problem() const override;
  // Drift (states_reconciler_drift.cpp): watches started after each cycle on the kinds
  // the inventory records; corrections run the drifted objects' states alone.
  void set_drift_wakeup(std::function<void()> wake) override { drift_wake_ = std::move(wake); }
  std::optional<std::chrono::steady_clock::time_point> drift_due() const override;
  boost::asio::awaitable<ReconcileSummary> correct_drift() override;

  // Free memory goes back to the system once no cycle has run for `delay` (1 s), not
  // right after each cycle: the next cycle of a burst (a `git pull`, an editor's
  // write-then-rename) would fault the same pages in again, which on the bench VMs was
  // half of a one-file cycle (bench/RESULTS.md, sixteenth round). Tests pass their own
  // `release` (malloc_trim by default) and delay.
  void set_memory_release(std::function<void()> release, std::chrono::milliseconds delay);
  // How long a file must have been unchanged to be read by a full cycle or trusted by
  // prune (manifest_settle.hpp's settle_window; tests that write and resync at once
  // set zero).
  void set_settle_window(std::chrono::system_clock::duration window) { settle_window_ = window; }

 private:
  struct ReadContent {
    std::string sha256;                      // empty: could not be read (always read again)
    std::optional<ReadFingerprint> read_as;  // its stat before that content was read
  };
  // One top-level manifest file as last loaded.
  struct LoadedFile {
    // This file and every file it includes: what was read of each.
    std::map<std::string, ReadContent> contents;
    std::vector<manifests::State> states;  // with a null object: see `objects`
    std::vector<std::string> objects;      // states[i]'s object as compact JSON
    std::vector<manifests::LoadError> errors;
    std::set<std::string> failed_files;
  };

  // What the folder walk learnt of a file, and when it started (before any of its stats).
  struct Listed {
    const manifests::ListedFile* file = nullptr;
    std::chrono::system_clock::time_point at;
  };
  // Loads `path` unless its content (and includes) are unchanged. True when (re)loaded.
  // `listed`: the walk's stats of `path`, used instead of stat'ing it again.
  bool refresh_file(const std::string& path, Listed listed);
  bool refresh_file(const std::string& path);
  // Whether the files in `entry.contents` still have that content: a stat each (the
  // walk's for the listed file), and a read only of those whose stat cannot prove it
  // (updating their fingerprints).
  bool content_unchanged(LoadedFile& entry, Listed listed);
  // Reads the variables again (config `vars`, `vars-from` files); when they changed,
  // every file is loaded again at its next refresh.
  void refresh_variables();
  // Connects when not connected yet; false (with `error`) when the client cannot be built.
  Status connect();
  // Runs the states of `only_files` (all when nullopt) with prune per config; a full
  // cycle with `defer_prune` prunes nothing (the folder changed within prune-delay).
  boost::asio::awaitable<ReconcileSummary> run_cycle(std::optional<std::set<std::string>> only_files, bool probe,
                                                     bool defer_prune = false);
  // run_cycle's steps. 1: connected, and (`probe`, a full reconcile) the API server
  // answering and discovery revalidated; otherwise the summary that ends the cycle.
  boost::asio::awaitable<std::optional<ReconcileSummary>> check_cluster(bool probe);
  // 2: the states the cycle runs (copies allocated from `pool`), with the files that
  // failed to load and every load error.
  struct CycleStates {
    std::vector<manifests::State> states;
    std::set<std::string> failed_files;
    std::vector<std::string> load_errors;
  };
  CycleStates cycle_states(const std::optional<std::set<std::string>>& only_files, json::Allocator& pool);
  // 3: what states::reconcile is asked to do.
  states::ReconcileOptions cycle_options(std::optional<std::set<std::string>> only_files, bool defer_prune,
                                         const std::set<std::string>& failed_files);
  // Whether each change's diff is logged (state-output changes or full).
  bool logs_diffs() const;
  // 4: the report logged and counted; a failed cycle asks whether the API server went away.
  boost::asio::awaitable<ReconcileSummary> conclude_cycle(states::RunReport report,
                                                          const std::vector<std::string>& load_errors,
                                                          bool only_files_ran);
  // The sources prune must not use, and why (ReconcileOptions::check_sources).
  std::map<std::string, std::string> sources_held(const std::set<std::string>& sources);
  // When the manifests folder last changed, as far as a full scan can tell: the newest
  // mtime or ctime of the listed files and of the folders they are in, and (with
  // `with_events`) the last file event this reconciler was given.
  std::chrono::system_clock::time_point last_folder_change(const std::vector<manifests::ListedFile>& listed,
                                                           const std::string& dir, bool with_events) const;
  void count_requests();
  // After a cycle: watches on the kinds of `applied` (drift_watch.hpp), when watch-drift is on.
  void follow_drift(const std::vector<states::InventoryEntry>& applied, bool full_cycle);
  void on_drift(const DriftNotice& notice);
  // The IDs and files of the states that declare `object`.
  void states_declaring(const states::ObjectKey& object, std::set<std::string>& ids, std::set<std::string>& files);
  // GET /version: whether the API server answers at all.
  // `retry` false: one attempt (after a failed cycle, whose requests were retried).
  boost::asio::awaitable<Result<Response>> probe_version(bool retry);
  // After a cycle: (re)starts the wait before memory is released (set_memory_release).
  void release_memory_when_quiet();
  // Logs a change of the API server's reachability (the transport's ServerStatus).
  void log_server_status(const ServerStatus& status);

  boost::asio::io_context& io_;
  DaemonConfig config_;
  DaemonMetrics& metrics_;
  bool stopping_ = false;
  bool api_answered_ = false;                                 // the last cycle reached the API server
  Reachability logged_reachability_ = Reachability::unknown;  // what log_server_status said last
  // Files of the manifests folder that existed at the last full scan.
  bool manifests_listed_ = false;
  std::size_t managed_objects_ = 0;  // as of the last cycle
  // What the last cycle that pruned kept for a cause of its own (ReconcileOptions::kept_before).
  std::set<states::ObjectKey> kept_for_cause_;
  std::vector<std::string> list_errors_;  // why the folder could not be listed (missing, unreadable)
  // The variables the cached files were loaded with, and why a vars-from file could not
  // be read (a failed cycle: prune is held back while there are any).
  manifests::VariableMap variables_;
  std::vector<std::string> variable_errors_;
  std::map<std::string, LoadedFile> files_;
  std::shared_ptr<const Clock> clock_;
  std::string host_name_ = states::local_host_name();  // the writer's host (states/writer.hpp)
  // Files this cycle did not read because they were not settled (being written, or
  // changed within the window), with why; cleared when a cycle starts.
  std::map<std::string, ManifestSettle> unsettled_;
  // How long a file read by this cycle must have been unchanged (manifest_settle.hpp):
  // settle_window in full cycles; none in a file event's (the watcher waited already).
  std::chrono::system_clock::duration read_window_{};
  std::chrono::system_clock::duration settle_window_ = settle_window;
  std::size_t sources_settling_ = 0;  // sources prune found changed moments ago, this cycle
  // When reconcile_files was last called: a file event (the folder changed then).
  std::chrono::system_clock::time_point last_file_event_{};
  std::set<std::string> files_read_;  // manifest files read since the current cycle started
  // Namespaces of cluster-scoped objects dropped by the last cycle, as warned: each is
  // said once, not at every cycle.
  std::set<std::string> namespace_warnings_;
  // Permission verdicts of folders during one scan (cleared when a scan starts).
  FolderVerdicts folder_verdicts_;

  // Shared with the drift watches, which keep the client they started with alive.
  std::shared_ptr<Client> client_;
  // The reconcile writes through the leader election's gate; the Lease store does not.
  std::function<bool()> may_write_;
  std::unique_ptr<Transport> gated_transport_;
  std::unique_ptr<DynamicClient> gated_client_;
  std::unique_ptr<discovery::DiscoveryClient> discovery_;
  std::unique_ptr<states::DiscoveryResolver> resolver_;
  TransportStats counted_;  // transport counters already added to the metrics
  std::function<void()> release_memory_;
  std::chrono::milliseconds release_delay_{1000};
  std::unique_ptr<Timer> release_timer_;

  // Drift (issue 41).
  std::unique_ptr<DriftWatcher> drift_watcher_;
  DriftQueue drift_queue_;
  std::map<std::string, DriftNotice> drift_waiting_;  // by ObjectKey::to_string(), what each correction is for
  std::function<void()> drift_wake_;
  std::set<std::string> watch_forbidden_said_;  // kinds whose 403 was logged
  // The states a drift correction runs (ReconcileOptions::only_states), for run_cycle.
  std::optional<std::set<std::string>> only_states_;
};

// The factory `kstate daemon` uses (daemon_command.hpp's ReconcilerFactory).
Result<std::unique_ptr<Reconciler>> make_states_reconciler(boost::asio::io_context& io, const DaemonConfig& config,
                                                           DaemonMetrics& metrics);

}  // namespace kstate::daemon
