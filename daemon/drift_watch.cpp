// DriftWatcher (see drift_watch.hpp). Each kind's watch is a coroutine holding what it
// needs (the client, its state) by shared pointer: a watch waits on its stream until
// the next event, bookmark or the server's timeout, and only then sees that it was
// stopped, so nothing it touches may have gone away meanwhile.
#include "daemon/drift_watch.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include "core/untrusted_text.hpp"

namespace kstate::daemon {
namespace {

std::string kind_id(const ApiResource& resource) {
  return resource.group + "/" + resource.version + "/" + resource.plural;
}

std::string label_selector_of(const std::map<std::string, std::string>& labels) {
  std::string selector;
  for (const auto& [name, value] : labels) {
    selector += (selector.empty() ? "" : ",") + name + "=" + value;
  }
  return selector;
}

}  // namespace

struct DriftWatcher::Shared {
  asio::any_io_executor executor;
  Options options;
  DriftHandler on_drift;
  ForbiddenHandler on_forbidden;
  struct Kind {
    ApiResource resource;
    bool stopped = false;
    bool forbidden = false;
    // "namespace/name" -> what the watch saw of it last.
    std::map<std::string, ObjectSnapshot> snapshots;
  };
  std::shared_ptr<Client> client;
  std::map<std::string, std::shared_ptr<Kind>> kinds;

  void handle(Kind& kind, const WatchEvent& event) {
    const std::string key = object_key(event.object);
    ObjectSnapshot after = snapshot_of(event.object, options.field_manager, options.ownership_labels);
    auto known = kind.snapshots.find(key);
    const ObjectSnapshot* before = known != kind.snapshots.end() ? &known->second : nullptr;
    const Drift drift = decide_drift(event.type, before, after);
    std::string other_manager = !after.latest_other_manager.empty() ? after.latest_other_manager
                                : before != nullptr                 ? before->latest_other_manager
                                                                    : "";
    if (event.type == WatchEventType::deleted) {
      if (known != kind.snapshots.end()) {
        kind.snapshots.erase(known);
      }
    } else if (known != kind.snapshots.end()) {
      known->second = std::move(after);
    } else {
      kind.snapshots.emplace(key, std::move(after));
    }
    if (!needs_correction(drift) || !on_drift) {
      if (drift != Drift::first_sight) {
        spdlog::debug("watch {}: {} {}: {}", kind.resource.plural, to_string(event.type), key, to_string(drift));
      }
      return;
    }
    const json::Value* metadata = json::find(event.object, "metadata");
    DriftNotice notice;
    notice.object.group = kind.resource.group;
    notice.object.kind = kind.resource.kind;
    notice.object.ns = metadata != nullptr ? std::string(json::string_or(json::find(*metadata, "namespace"), "")) : "";
    notice.object.name = metadata != nullptr ? std::string(json::string_or(json::find(*metadata, "name"), "")) : "";
    notice.drift = drift;
    notice.other_manager = printable(other_manager, 128);
    on_drift(notice);
  }
};

namespace {

asio::awaitable<void> watch_kind(std::shared_ptr<DriftWatcher::Shared> shared,
                                 std::shared_ptr<DriftWatcher::Shared::Kind> kind, std::shared_ptr<Client> client) {
  ListOptions options;
  options.label_selector = label_selector_of(shared->options.ownership_labels);
  options.metadata_only = true;
  options.keep_managed_fields = true;
  options.timeout_seconds = shared->options.watch_timeout_seconds;
  const std::string all_namespaces;
  ListWatcher watcher(*client->dynamic, kind->resource, all_namespaces, options, LocalCopy::versions);
  int failures = 0;
  while (!kind->stopped) {
    auto event = co_await watcher.next();
    if (kind->stopped) {
      break;
    }
    if (!event) {
      const Error& error = event.error();
      if (error.kind == ErrorKind::forbidden) {
        kind->forbidden = true;
        kind->snapshots.clear();
        if (shared->on_forbidden) {
          shared->on_forbidden(kind->resource, error.message);
        }
        break;
      }
      ++failures;
      auto delay = shared->options.retry_initial;
      for (int i = 1; i < failures && delay < shared->options.retry_max; ++i) {
        delay *= 2;
      }
      delay = std::min(delay, shared->options.retry_max);
      spdlog::warn("watch of {}: {}; listing again in {} ms", kind->resource.plural, error.describe(), delay.count());
      const auto clock = shared->options.clock ? shared->options.clock : real_clock();
      auto timer = clock->make_timer(co_await asio::this_coro::executor);
      timer->expires_after(delay);
      co_await timer->wait();
      continue;
    }
    failures = 0;
    shared->handle(*kind, event.value());
  }
}

}  // namespace

DriftWatcher::DriftWatcher(asio::any_io_executor executor, Options options, DriftHandler on_drift,
                           ForbiddenHandler on_forbidden)
    : shared_(std::make_shared<Shared>()) {
  shared_->executor = std::move(executor);
  shared_->options = std::move(options);
  shared_->on_drift = std::move(on_drift);
  shared_->on_forbidden = std::move(on_forbidden);
}

DriftWatcher::~DriftWatcher() {
  stop();
  shared_->on_drift = nullptr;
  shared_->on_forbidden = nullptr;
}

void DriftWatcher::follow(std::shared_ptr<Client> client, const std::vector<ApiResource>& kinds, Follow mode) {
  if (client != shared_->client) {
    stop();
    shared_->client = client;
  }
  std::set<std::string> wanted;
  for (const auto& resource : kinds) {
    const std::string id = kind_id(resource);
    wanted.insert(id);
    if (auto known = shared_->kinds.find(id); known != shared_->kinds.end()) {
      if (!known->second->forbidden || mode == Follow::also) {
        continue;
      }
      shared_->kinds.erase(known);
    }
    auto kind = std::make_shared<Shared::Kind>();
    kind->resource = resource;
    shared_->kinds.emplace(id, kind);
    asio::co_spawn(shared_->executor, watch_kind(shared_, kind, client), asio::detached);
  }
  for (auto it = shared_->kinds.begin(); it != shared_->kinds.end();) {
    if (mode == Follow::exactly && wanted.count(it->first) == 0) {
      it->second->stopped = true;
      it = shared_->kinds.erase(it);
    } else {
      ++it;
    }
  }
}

void DriftWatcher::stop() {
  for (auto& [id, kind] : shared_->kinds) {
    kind->stopped = true;
  }
  shared_->kinds.clear();
}

DriftWatchStats DriftWatcher::stats() const {
  DriftWatchStats stats;
  for (const auto& [id, kind] : shared_->kinds) {
    if (kind->forbidden) {
      ++stats.forbidden;
    } else {
      ++stats.watches;
    }
    stats.objects += kind->snapshots.size();
  }
  return stats;
}

}  // namespace kstate::daemon
