// StatesReconciler's drift correction (issue 41; states_reconciler.hpp): after each
// cycle the kinds the inventory records are watched (drift_watch.hpp); each drift
// decided there is queued per object (drift_queue.hpp: debounce, fight back-off) and
// the runner calls correct_drift() when it is due, which runs the drifted objects'
// states alone, as a file event's cycle runs one file's.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/duration.hpp"
#include "daemon/states_reconciler.hpp"
#include "states/reconcile.hpp"

namespace kstate::daemon {
namespace {

std::string group_of(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string() : std::string(api_version.substr(0, slash));
}

}  // namespace

void StatesReconciler::follow_drift(const std::vector<states::InventoryEntry>& applied, bool full_cycle) {
  if (!config_.watch_drift || !client_ || !discovery_ || !discovery_->loaded() || stopping_) {
    if (!config_.watch_drift) {
      drift_watcher_.reset();
    }
    return;
  }
  if (!drift_watcher_) {
    DriftWatcher::Options options;
    options.field_manager = config_.field_manager;
    options.ownership_labels =
        states::ownership_labels(states::ApplySetParent{config_.applyset_name, config_.applyset_namespace});
    options.clock = clock_;
    drift_watcher_ = std::make_unique<DriftWatcher>(
        io_.get_executor(), std::move(options), [this](const DriftNotice& notice) { on_drift(notice); },
        [this](const ApiResource& resource, const std::string& message) {
          const std::string id = resource.plural + (resource.group.empty() ? "" : "." + resource.group);
          if (watch_forbidden_said_.insert(id).second) {
            spdlog::warn(
                "drift: no permission to watch {} ({}): their drift is corrected by the periodic resync only, "
                "every {}",
                id, message, format_duration(config_.resync_interval));
          }
          const DriftWatchStats stats = drift_watcher_ ? drift_watcher_->stats() : DriftWatchStats{};
          metrics_.drift_watches.set({"watching"}, static_cast<double>(stats.watches));
          metrics_.drift_watches.set({"forbidden"}, static_cast<double>(stats.forbidden));
        });
  }
  if (!full_cycle && applied.empty()) {
    return;  // a file cycle reports the objects it ran only; the kinds stay as they were
  }
  std::vector<ApiResource> kinds;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& entry : applied) {
    if (!seen.emplace(entry.group, entry.kind).second) {
      continue;
    }
    if (const ApiResource* resource = discovery_->mapper().find_preferred(entry.group, entry.kind)) {
      kinds.push_back(*resource);
    }
  }
  // A file's cycle may add kinds; only a full one tells which are no longer managed.
  drift_watcher_->follow(client_, kinds, full_cycle ? DriftWatcher::Follow::exactly : DriftWatcher::Follow::also);
  const DriftWatchStats stats = drift_watcher_->stats();
  metrics_.drift_watches.set({"watching"}, static_cast<double>(stats.watches));
  metrics_.drift_watches.set({"forbidden"}, static_cast<double>(stats.forbidden));
}

void StatesReconciler::on_drift(const DriftNotice& notice) {
  const std::string key = notice.object.to_string();
  const auto now = clock_->steady_now();
  if (auto round = drift_queue_.record(key, now)) {
    // A deletion does not say who deleted (the object is gone with its managedFields).
    const bool deleted = notice.drift == Drift::deleted;
    const std::string manager = deleted || notice.other_manager.empty() ? "unknown" : notice.other_manager;
    metrics_.drift_fights.add({manager});
    if (round->log && deleted) {
      spdlog::warn(
          "drift: {} was deleted again {} time(s) in a row after kstate corrected it; kstate now waits {} "
          "before each correction. Find what deletes it (a controller, a cleanup job) and stop it, or take "
          "the object out of the manifests",
          key, round->rounds, format_duration(round->backoff));
    } else if (round->log) {
      spdlog::warn(
          "drift: {} was changed again by {} {} time(s) in a row after kstate corrected it; kstate now waits {} "
          "before each correction. If {} should own those fields, list them in the object's "
          "kstate.io/ignore-fields annotation; otherwise stop the other writer",
          key, manager, round->rounds, format_duration(round->backoff), manager);
    }
  }
  drift_waiting_[key] = notice;
  spdlog::debug("drift: {} {}{}", key, to_string(notice.drift),
                notice.other_manager.empty() ? "" : " (last changed by " + notice.other_manager + ")");
  if (drift_wake_) {
    drift_wake_();
  }
}

std::optional<std::chrono::steady_clock::time_point> StatesReconciler::drift_due() const {
  return drift_queue_.deadline();
}

void StatesReconciler::states_declaring(const states::ObjectKey& object, std::set<std::string>& ids,
                                        std::set<std::string>& files) {
  const std::string default_namespace = client_ ? client_->config.default_namespace : "default";
  const std::string quoted_name = "\"" + object.name + "\"";
  for (const auto& [file, entry] : files_) {
    for (std::size_t i = 0; i < entry.states.size(); ++i) {
      if (entry.objects[i].find(quoted_name) == std::string::npos) {
        continue;  // (most states: not parsed)
      }
      auto parsed = json::parse(entry.objects[i]);
      if (!parsed) {
        continue;
      }
      const json::Value* metadata = json::find(*parsed, "metadata");
      if (metadata == nullptr || json::string_or(json::find(*metadata, "name"), "") != object.name ||
          json::string_or(json::find(*parsed, "kind"), "") != object.kind ||
          group_of(json::string_or(json::find(*parsed, "apiVersion"), "")) != object.group) {
        continue;
      }
      const std::string_view ns = json::string_or(json::find(*metadata, "namespace"), "");
      const bool same_namespace =
          ns == object.ns || (ns.empty() && (object.ns == default_namespace || object.ns.empty()));
      if (same_namespace) {
        ids.insert(entry.states[i].id);
        files.insert(entry.states[i].source.file);
      }
    }
  }
}

boost::asio::awaitable<ReconcileSummary> StatesReconciler::correct_drift() {
  const auto now = clock_->steady_now();
  std::vector<std::string> due = drift_queue_.take_due(now);
  std::set<std::string> ids;
  std::set<std::string> files;
  std::vector<std::string> running;
  for (const auto& key : due) {
    auto waiting = drift_waiting_.find(key);
    if (waiting == drift_waiting_.end()) {
      continue;
    }
    const DriftNotice notice = std::move(waiting->second);
    drift_waiting_.erase(waiting);
    const std::size_t before = ids.size();
    states_declaring(notice.object, ids, files);
    if (ids.size() == before) {
      spdlog::debug("drift: {} is declared by no manifest any more: left to prune", key);
      continue;
    }
    metrics_.drift_corrections.add({to_string(notice.drift)});
    spdlog::info("drift: {} {}{}: running its state", key,
                 notice.drift == Drift::deleted          ? "was deleted"
                 : notice.drift == Drift::labels_removed ? "lost kstate's labels"
                 : notice.drift == Drift::replaced       ? "was replaced"
                                                         : "had fields kstate applies changed",
                 notice.other_manager.empty() || notice.drift == Drift::deleted ? "" : " by " + notice.other_manager);
    running.push_back(key);
  }
  if (running.empty()) {
    co_return ReconcileSummary{};
  }
  only_states_ = std::move(ids);
  files_read_.clear();
  unsettled_.clear();
  sources_settling_ = 0;
  ReconcileSummary summary = co_await run_cycle(std::move(files), false);
  const auto finished = clock_->steady_now();
  for (const auto& key : running) {
    drift_queue_.corrected(key, finished);
  }
  release_memory_when_quiet();  // as after any cycle (bench scenario 10: 5 MB kept resident without it)
  co_return summary;
}

}  // namespace kstate::daemon
