// ListWatcher: follows a collection without missing a change, as client-go's
// reflector does. It LISTs, then WATCHes from the list's resourceVersion; when the
// stream ends or drops it watches again from the last resourceVersion it saw; when
// the server answers 410 Gone (the history was compacted) it LISTs again and emits
// the differences between the new list and its local copy (ADDED / MODIFIED /
// DELETED), so a change made while it was disconnected is never lost. Bookmarks
// move the resourceVersion forward and are not returned.
//
//   ListWatcher watcher(client, configmaps, "default", ListOptions{});
//   for (;;) { auto event = co_await watcher.next(); ... }   // first: one ADDED per object
//
// With LocalCopy::versions it keeps only each object's resourceVersion (what a relist
// compares), and a synthesized DELETED event carries the object's name, namespace and
// last resourceVersion only: memory then grows by a map entry per object, not by a
// copy of each object (a json::Document with its own allocator, 1 KiB at least).
//
// Coroutine calls take named lvalues (GCC 12 destroys temporaries bound to coroutine
// parameters twice).
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "core/dynamic_client.hpp"

namespace kstate {

struct ListWatchStats {
  std::uint64_t lists = 0;        // LIST requests (1 at start + one per relist)
  std::uint64_t relists = 0;      // relists after 410 Gone
  std::uint64_t watches = 0;      // WATCH requests opened
  std::uint64_t rewatches = 0;    // watches reopened after a drop or a clean end
  std::uint64_t bookmarks = 0;    // bookmarks seen
  std::uint64_t synthesized = 0;  // events made up from a relist's differences
};

enum class LocalCopy { objects, versions };

class ListWatcher {
 public:
  ListWatcher(DynamicClient& client, ApiResource resource, std::string ns, ListOptions options,
              LocalCopy local_copy = LocalCopy::objects);

  // The next change. Errors other than 410 and dropped streams are returned (after the
  // transport's own retries); calling next() again starts over with a LIST.
  asio::awaitable<Result<WatchEvent>> next();

  // The local copy: "namespace/name" -> object, as of the last event returned
  // (LocalCopy::objects; empty with LocalCopy::versions).
  const std::map<std::string, json::Document>& objects() const { return objects_; }
  // How many objects the collection holds, as of the last event returned.
  std::size_t size() const { return local_copy_ == LocalCopy::objects ? objects_.size() : versions_.size(); }
  const std::string& resource_version() const { return resource_version_; }
  const ListWatchStats& stats() const { return stats_; }

 private:
  asio::awaitable<Status> relist();
  void remember(const WatchEvent& event);

  DynamicClient& client_;
  ApiResource resource_;
  std::string namespace_;
  ListOptions options_;
  LocalCopy local_copy_;
  std::map<std::string, json::Document> objects_;
  // LocalCopy::versions: "namespace/name" -> resourceVersion.
  std::map<std::string, std::string> versions_;
  std::deque<WatchEvent> queued_;  // events from a relist, returned before watching again
  std::optional<WatchStream> stream_;
  std::string resource_version_;
  bool listed_ = false;
  ListWatchStats stats_;
};

// "namespace/name" (or "name" for cluster-scoped objects) of an object.
std::string object_key(const json::Value& object);

}  // namespace kstate
