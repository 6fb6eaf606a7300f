// What the engine knows, during one run, of the CustomResourceDefinitions behind the
// kinds its states name, and the lag between a CRD and the API server's discovery:
//  - the CRDs this run creates (test mode: their kinds exist only once it runs for
//    real, so their custom resources are checked against the CRD's schema locally)
//    and updates (the versions an update adds are served, and listed by discovery, a
//    moment later: test mode validates against the update, real mode waits for
//    discovery or reads through another served version);
//  - the CRDs the server has now, from one LIST per run shared by every state that
//    asks (an object_absent whose kind discovery does not list in its version);
//  - the wait until discovery lists a version this run's update serves, one read of
//    discovery at a time for every state waiting, with a growing pause.
// CRDs are keyed by "group/Kind": a kind has one CRD, whatever the version named.
#pragma once

#include <utility>
// (keep <utility> first for Boost 1.74's awaitable.hpp)

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/dynamic_client.hpp"
#include "core/gvk.hpp"
#include "core/json.hpp"
#include "core/signal.hpp"
#include "states/waits.hpp"

namespace kstate::states {

class KindResolver;

class CrdVersions {
 public:
  // How long a state naming a version this run's CRD update serves waits for the API
  // server's discovery to list it.
  static constexpr std::chrono::milliseconds discovery_catch_up_timeout{30000};

  // `client`, `resolver` must outlive this.
  CrdVersions(DynamicClient& client, KindResolver& resolver, SleepFunction sleep);

  // Test mode: `crd` (the dry run's answer) would be created by this run.
  void created(const json::Value& crd);
  // `crd` as this run would update it (test mode: the dry run's answer) or updated it.
  void updated(const json::Value& crd);
  // The CRD of gvk's kind that this run would create (test mode) or updates; nullptr:
  // none.
  const json::Value* created_crd(const GroupVersionKind& gvk) const;
  const json::Value* updated_crd(const GroupVersionKind& gvk) const;

  // Whether a CRD serves `version` (listed with served: true).
  static bool serves_version(const json::Value& crd, const std::string& version);
  // Whether a CRD read from the server serves its kinds: Established, and not being
  // deleted (its custom resources go with it). One that does not holds none to delete.
  static bool serves_kinds(const json::Value& crd);

  // The CRD that defines group/kind as the server has it now (nullptr: none), from one
  // LIST of CustomResourceDefinitions per run, made by the first caller while the
  // others wait. When two claim the kind, the one serving it.
  asio::awaitable<Result<const json::Value*>> live_crd(const std::string& group, const std::string& kind);

  // Whether discovery lists gvk's kind in a version other than gvk's (true when it
  // cannot tell: the caller then looks the CRD up).
  asio::awaitable<bool> listed_in_another_version(const GroupVersionKind& gvk);

  // Whether gvk's version is one this run's update of its CRD serves, so that a state
  // naming it waits for discovery (until_discovery_lists) rather than failing.
  bool awaits_discovery(const GroupVersionKind& gvk) const;
  // Waits until the resolver resolves gvk from what discovery answered, reading
  // discovery again with a growing pause (50 ms doubling to 1 s), one read at a time
  // for every waiting state, up to discovery_catch_up_timeout from the first state that
  // waited for this version. An error says why it is not listed: the read of discovery
  // failed, or (ErrorKind::not_found) the wait ran out.
  asio::awaitable<Status> until_discovery_lists(const GroupVersionKind& gvk);

 private:
  using Clock = std::chrono::steady_clock;

  DynamicClient& client_;
  KindResolver& resolver_;
  SleepFunction sleep_;
  std::map<std::string, json::Document> created_;  // "group/Kind" -> the CRD
  std::map<std::string, json::Document> updated_;
  // live_crd: the LIST of CustomResourceDefinitions, once per run.
  SharedResult<Result<json::Document>> crd_list_;
  // until_discovery_lists: the last read of discovery, whether one is under way, and
  // when each version's wait ends ("group/version/Kind").
  Clock::time_point discovery_read_at_;
  bool discovery_reading_ = false;
  std::map<std::string, Clock::time_point> discovery_wait_deadlines_;
};

}  // namespace kstate::states
