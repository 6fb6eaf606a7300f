// Watches on what kstate manages (issue 41): one watch per kind the ApplySet
// inventory records, across namespaces, selected by kstate's ownership labels and
// metadata-only (PartialObjectMetadata, full objects from a server without it), each a
// ListWatcher (core/list_watch.hpp: listed once, watched from that list's
// resourceVersion, re-watched after a drop, listed again after a 410 with the
// differences as events, bookmarks). Each event goes through decide_drift
// (drift_decision.hpp) against what the watch saw of the object before; drift to
// correct is handed to `on_drift`. What is kept per object is a small snapshot (uid,
// kstate's managedFields entry with its fields as a digest, whether the labels are
// there), so memory grows with the objects kstate manages, never with the cluster.
// A kind whose watch is forbidden (403) is left to the periodic resync, said once
// through `on_forbidden`; other failures are retried with a doubling delay.
#pragma once

#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/api_resource.hpp"
#include "core/clock.hpp"
#include "core/dynamic_client.hpp"
#include "core/list_watch.hpp"
#include "daemon/drift_decision.hpp"
#include "states/inventory.hpp"

namespace kstate::daemon {

struct DriftNotice {
  states::ObjectKey object;
  Drift drift = Drift::none;
  // The field manager that changed the object last, other than kstate ("" unknown):
  // named in fight metrics and logs.
  std::string other_manager;
};

struct DriftWatchStats {
  std::size_t watches = 0;    // kinds watched now
  std::size_t forbidden = 0;  // kinds whose watch is forbidden (left to the resync)
  std::size_t objects = 0;    // objects the watches keep a snapshot of
};

class DriftWatcher {
 public:
  struct Options {
    std::string field_manager = "kstate";
    std::map<std::string, std::string> ownership_labels;  // the selector, and what decide_drift checks
    // Server-side end of each watch (re-watched from the last resourceVersion after it).
    std::int64_t watch_timeout_seconds = 300;
    std::chrono::milliseconds retry_initial{500};
    std::chrono::milliseconds retry_max{30000};
    std::shared_ptr<const Clock> clock;  // the pause before listing again; the real clock when null
  };
  using DriftHandler = std::function<void(const DriftNotice&)>;
  // The kind whose watch was refused, and the server's words.
  using ForbiddenHandler = std::function<void(const ApiResource&, const std::string& message)>;

  DriftWatcher(asio::any_io_executor executor, Options options, DriftHandler on_drift, ForbiddenHandler on_forbidden);
  ~DriftWatcher();
  DriftWatcher(const DriftWatcher&) = delete;
  DriftWatcher& operator=(const DriftWatcher&) = delete;

  // How follow() treats the kinds it is not given.
  enum class Follow {
    // These are all the kinds managed (after a full reconcile): the others' watches
    // stop, and kinds whose watch was forbidden are tried again (permissions change).
    exactly,
    // These kinds are managed too (after a file's cycle, which sees its own objects only).
    also,
  };
  // Watches these kinds through `client` (kept alive by the watches). A different
  // client (the configuration changed how the cluster is reached) restarts every watch.
  void follow(std::shared_ptr<Client> client, const std::vector<ApiResource>& kinds, Follow mode);
  // Stops every watch (shutdown, leadership lost).
  void stop();
  DriftWatchStats stats() const;

  // (The watches' shared state: drift_watch.cpp.)
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace kstate::daemon
