// ListWatcher (see list_watch.hpp): list, watch, re-watch after a drop, relist after
// 410 Gone with the differences emitted as events.
#include "core/list_watch.hpp"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <set>

namespace kstate {
namespace {

std::string version_of(const json::Value& object) {
  return std::string(json::string_or(json::find_path(object, {"metadata", "resourceVersion"}), ""));
}

WatchEvent make_event(WatchEventType type, const json::Value& object) {
  WatchEvent event;
  event.type = type;
  event.object = json::copy(object);
  return event;
}

// An event whose object has only the name, namespace and resourceVersion of `key`.
WatchEvent identity_event(WatchEventType type, const std::string& key, const std::string& version) {
  WatchEvent event;
  event.type = type;
  auto& allocator = event.object.GetAllocator();
  event.object.SetObject();
  json::Value metadata(rapidjson::kObjectType);
  const auto slash = key.find('/');
  if (slash != std::string::npos) {
    json::set_string(metadata, "namespace", key.substr(0, slash), allocator);
  }
  json::set_string(metadata, "name", slash == std::string::npos ? key : key.substr(slash + 1), allocator);
  json::set_string(metadata, "resourceVersion", version, allocator);
  json::set(event.object, "metadata", std::move(metadata), allocator);
  return event;
}

}  // namespace

std::string object_key(const json::Value& object) {
  auto ns = json::string_or(json::find_path(object, {"metadata", "namespace"}), "");
  auto name = json::string_or(json::find_path(object, {"metadata", "name"}), "");
  return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}

ListWatcher::ListWatcher(DynamicClient& client, ApiResource resource, std::string ns, ListOptions options,
                         LocalCopy local_copy)
    : client_(client),
      resource_(std::move(resource)),
      namespace_(std::move(ns)),
      options_(std::move(options)),
      local_copy_(local_copy) {
  options_.continue_token.clear();
  options_.resource_version.clear();
}

void ListWatcher::remember(const WatchEvent& event) {
  auto key = object_key(event.object);
  if (local_copy_ == LocalCopy::versions) {
    if (event.type == WatchEventType::deleted) {
      versions_.erase(key);
    } else {
      versions_[key] = version_of(event.object);
    }
    return;
  }
  if (event.type == WatchEventType::deleted) {
    objects_.erase(key);
  } else {
    objects_[key] = json::copy(event.object);
  }
}

asio::awaitable<Status> ListWatcher::relist() {
  stream_.reset();
  ListOptions list_options = options_;
  list_options.timeout_seconds = 0;  // the watch's, not the list's
  auto listed = co_await client_.list(resource_, namespace_, list_options);
  if (!listed) {
    co_return listed.error();
  }
  ++stats_.lists;
  bool first = !listed_ && stats_.lists == 1;
  std::set<std::string> present;
  // The version of the local copy's object under `key`; nullopt when there is none.
  auto known_version = [this](const std::string& key) -> std::optional<std::string> {
    if (local_copy_ == LocalCopy::versions) {
      auto known = versions_.find(key);
      return known == versions_.end() ? std::nullopt : std::optional<std::string>(known->second);
    }
    auto known = objects_.find(key);
    return known == objects_.end() ? std::nullopt : std::optional<std::string>(version_of(known->second));
  };
  if (const auto* items = json::find(*listed, "items"); items != nullptr && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      auto key = object_key(item);
      present.insert(key);
      auto known = known_version(key);
      if (!known) {
        queued_.push_back(make_event(WatchEventType::added, item));
      } else if (*known != version_of(item)) {
        queued_.push_back(make_event(WatchEventType::modified, item));
      }
    }
  }
  // Deleted while we were away.
  for (const auto& [key, object] : objects_) {
    if (present.count(key) == 0) {
      queued_.push_back(make_event(WatchEventType::deleted, object));
    }
  }
  for (const auto& [key, version] : versions_) {
    if (present.count(key) == 0) {
      queued_.push_back(identity_event(WatchEventType::deleted, key, version));
    }
  }
  if (!first) {
    stats_.synthesized += queued_.size();
  }
  resource_version_ = version_of(*listed);
  listed_ = true;
  co_return ok_status();
}

asio::awaitable<Result<WatchEvent>> ListWatcher::next() {
  int empty_watches = 0;  // watches in a row that ended without an event: back off
  for (;;) {
    if (!queued_.empty()) {
      WatchEvent event = std::move(queued_.front());
      queued_.pop_front();
      remember(event);
      co_return std::move(event);
    }
    if (!listed_) {
      auto listed = co_await relist();
      if (!listed) {
        co_return listed.error();
      }
      continue;
    }
    if (!stream_) {
      if (empty_watches > 1) {
        auto delay = std::min(std::chrono::milliseconds(50) * (1 << std::min(empty_watches, 7)),
                              std::chrono::milliseconds(5000));
        asio::steady_timer timer(co_await asio::this_coro::executor, delay);
        boost::system::error_code ignored;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      }
      ListOptions watch_options = options_;
      watch_options.limit = 0;
      watch_options.resource_version = resource_version_;
      watch_options.allow_watch_bookmarks = true;
      auto opened = co_await client_.watch(resource_, namespace_, watch_options);
      if (!opened) {
        listed_ = false;
        if (opened.error().kind == ErrorKind::gone) {
          ++stats_.relists;
          continue;
        }
        co_return std::move(opened).error();
      }
      ++stats_.watches;
      stream_.emplace(std::move(opened.value()));
      ++empty_watches;
    }
    auto event = co_await stream_->next();
    if (!event) {
      stream_.reset();
      auto kind = event.error().kind;
      if (kind == ErrorKind::connection || kind == ErrorKind::timeout) {
        ++stats_.rewatches;  // dropped: watch again from the last resourceVersion seen
        continue;
      }
      listed_ = false;
      co_return std::move(event).error();
    }
    if (!event.value()) {
      stream_.reset();  // the server ended the watch (timeoutSeconds): watch again
      ++stats_.rewatches;
      continue;
    }
    WatchEvent& received = *event.value();
    if (received.type == WatchEventType::error) {
      stream_.reset();
      listed_ = false;
      auto error = received.error_of();
      if (error.kind == ErrorKind::gone) {
        ++stats_.relists;  // the history is gone: list again and emit what changed
        continue;
      }
      co_return error;
    }
    empty_watches = 0;
    if (auto version = version_of(received.object); !version.empty()) {
      resource_version_ = version;
    }
    if (received.type == WatchEventType::bookmark) {
      ++stats_.bookmarks;
      continue;
    }
    remember(received);
    co_return std::move(received);
  }
}

}  // namespace kstate
