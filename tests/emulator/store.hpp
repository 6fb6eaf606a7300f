// The emulator's object store: every object under one ordered key
// ("<group>/<resource>/<namespace>/<name>"), one global resourceVersion counter
// like etcd's revision, and a bounded history of watch events (older versions
// answer 410 Expired, as after etcd compaction). Snapshots serialise the whole
// store for --data-dir; the file I/O lives in persistence.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace kstate::emulator {

using ObjectPtr = std::shared_ptr<const json::Document>;

struct WatchEvent {
  std::uint64_t resource_version = 0;
  std::string type;    // ADDED, MODIFIED, DELETED
  std::string prefix;  // "<group>/<resource>/"
  std::string namespace_name;
  ObjectPtr object;
  // The object before this change (MODIFIED only): a watch with a label selector sends
  // an object that stops matching as DELETED and one that starts matching as ADDED, as
  // kube-apiserver's watch cache does (cacher.go, convertToWatchEvent).
  ObjectPtr previous;
};

std::string object_key(std::string_view group, std::string_view resource, std::string_view namespace_name,
                       std::string_view name);
std::string collection_prefix(std::string_view group, std::string_view resource);

class Store {
 public:
  explicit Store(std::size_t history_limit = 20000) : history_limit_(history_limit) {}

  ObjectPtr get(const std::string& key) const;
  // Objects whose key starts with prefix, in key order, starting after `after_key` (exclusive, "" for the start).
  std::vector<std::pair<std::string, ObjectPtr>> range(const std::string& prefix,
                                                       const std::string& after_key = {}) const;
  const std::map<std::string, ObjectPtr>& all() const { return objects_; }

  std::uint64_t current_version() const { return version_; }
  // Takes the next resourceVersion (the caller stamps it into the object it then puts).
  std::uint64_t next_version() { return ++version_; }
  void put(const std::string& key, ObjectPtr object, std::string event_type);
  void erase(const std::string& key, ObjectPtr final_object);

  // Watch history; events with resource_version > after are returned in order.
  std::vector<const WatchEvent*> events_after(std::uint64_t after) const;
  // The oldest version a watch may start from (older ones are "too old").
  std::uint64_t oldest_watchable() const { return oldest_watchable_; }
  // Forgets the history, as etcd compaction does (tests use it to provoke 410).
  void compact();
  // Forgets the events up to and including `revision` (etcd's compaction to a revision).
  void compact_to(std::uint64_t revision);
  std::size_t history_size() const { return history_.size(); }

  // Called after every change (watchers wake up, persistence writes).
  std::function<void()> on_change;

  std::string snapshot() const;
  Status restore(std::string_view snapshot);
  // Journal lines for --data-dir: one change each; replay applies those newer than the store.
  static std::string journal_line(const WatchEvent& event);
  // Applies journal lines in order; stops quietly at a torn (unparsable) last line.
  void replay(std::string_view journal);

 private:
  void record(WatchEvent event);

  std::map<std::string, ObjectPtr> objects_;
  std::uint64_t version_ = 1;
  std::deque<WatchEvent> history_;
  std::size_t history_limit_;
  std::uint64_t oldest_watchable_ = 1;
};

}  // namespace kstate::emulator
