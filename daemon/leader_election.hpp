// Lease-based leader election with client-go's semantics (tools/leaderelection), as a
// state machine driven by explicit time: each step() is one tryAcquireOrRenew against a
// LeaseStore (a coordination.k8s.io/v1 Lease in production, memory in tests). Whether
// another holder's lease has expired is judged on *our* monotonic clock from when we
// last saw the record change, never on the timestamps inside it, so clock skew between
// nodes does not matter. A leader that could not renew within renewDeadline stops
// being leader at once (is_leader() turns false), before any further I/O.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "daemon/config.hpp"

namespace kstate::daemon {

// The Lease spec fields client-go uses (LeaderElectionRecord), plus the object's
// resourceVersion for optimistic concurrency.
struct LeaseRecord {
  std::string holder_identity;
  std::chrono::seconds lease_duration{0};
  std::chrono::system_clock::time_point acquire_time{};
  std::chrono::system_clock::time_point renew_time{};
  int lease_transitions = 0;
  std::string resource_version;

  bool same_record(const LeaseRecord& other) const {
    return holder_identity == other.holder_identity && lease_duration == other.lease_duration &&
           acquire_time == other.acquire_time && renew_time == other.renew_time &&
           lease_transitions == other.lease_transitions;
  }
};

// Where the Lease lives. update() must fail with ErrorKind::conflict when the record's
// resource_version is stale (as the API server does).
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  virtual Result<std::optional<LeaseRecord>> get() = 0;
  virtual Result<LeaseRecord> create(const LeaseRecord& record) = 0;
  virtual Result<LeaseRecord> update(const LeaseRecord& record) = 0;
};

class LeaderElector {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  // `random01` in [0, 1) jitters the acquire retry like client-go's JitterFactor 1.2.
  LeaderElector(LeaderElectionConfig config, std::string identity, std::function<double()> random01);

  struct Step {
    bool leader = false;
    bool changed = false;     // leadership gained or lost by this step
    Duration next_attempt{};  // when to call step() again
    std::string error;        // why the attempt failed (logged), empty on success
  };
  // One tryAcquireOrRenew at monotonic `now` (`wall_now` goes into the record).
  Step step(LeaseStore& store, TimePoint now, WallTime wall_now);

  // The same attempt in three pure parts, for a driver whose Lease store is asynchronous
  // (the API client): begin_attempt(); GET the lease; plan() says what to create or
  // update (nullopt: another holder's lease is still valid); write it; conclude() with
  // the written record, or nullopt and the error.
  struct Write {
    bool create = false;  // no Lease yet: POST; else PUT with record.resource_version
    LeaseRecord record;
  };
  void begin_attempt(TimePoint now);
  std::optional<Write> plan(const std::optional<LeaseRecord>& current, TimePoint now, WallTime wall_now);
  Step conclude(TimePoint now, const std::optional<LeaseRecord>& written, std::string error);

  // True while we hold the lease and last renewed it less than renewDeadline ago.
  bool is_leader(TimePoint now) const;
  // The holder we last observed (ours or another's); empty when none.
  const std::string& observed_holder() const { return observed_.holder_identity; }
  const std::string& identity() const { return identity_; }

  // On shutdown: gives the lease up (holder cleared, 1s duration) so another instance
  // takes over without waiting for expiry. Only when we are the leader.
  Status release(LeaseStore& store, TimePoint now, WallTime wall_now);
  // The same for an asynchronous store: stops being leader at once and returns the
  // record to write (nullopt when we are not the leader, so there is nothing to give up).
  std::optional<LeaseRecord> release_record(TimePoint now, WallTime wall_now);

 private:
  LeaderElectionConfig config_;
  std::string identity_;
  std::function<double()> random01_;
  LeaseRecord observed_;
  std::optional<TimePoint> observed_time_;
  std::optional<TimePoint> last_renew_;  // our last successful acquire/renew
  bool leader_ = false;
  bool was_leader_ = false;
};

}  // namespace kstate::daemon
