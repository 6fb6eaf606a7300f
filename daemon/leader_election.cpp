// tryAcquireOrRenew as in client-go's leaderelection.go: get (create if absent), judge
// expiry on the local observation time, keep acquireTime/transitions when renewing our
// own lease, bump transitions when taking over, and update with the resourceVersion we
// read so that two candidates cannot both win.
#include "daemon/leader_election.hpp"

namespace kstate::daemon {

LeaderElector::LeaderElector(LeaderElectionConfig config, std::string identity, std::function<double()> random01)
    : config_(std::move(config)), identity_(std::move(identity)), random01_(std::move(random01)) {}

bool LeaderElector::is_leader(TimePoint now) const {
  return leader_ && last_renew_ && now - *last_renew_ < config_.renew_deadline;
}

void LeaderElector::begin_attempt(TimePoint now) {
  was_leader_ = is_leader(now);
}

std::optional<LeaderElector::Write> LeaderElector::plan(const std::optional<LeaseRecord>& current, TimePoint now,
                                                        WallTime wall_now) {
  LeaseRecord desired;
  desired.holder_identity = identity_;
  desired.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration);
  desired.acquire_time = wall_now;
  desired.renew_time = wall_now;
  if (!current) {
    return Write{true, desired};
  }
  const LeaseRecord& existing = *current;
  if (!observed_time_ || !existing.same_record(observed_)) {
    observed_ = existing;
    observed_time_ = now;
  }
  observed_.resource_version = existing.resource_version;
  const bool held_by_other = !existing.holder_identity.empty() && existing.holder_identity != identity_;
  const auto observed_lease = std::max<Duration>(existing.lease_duration, Duration::zero());
  if (held_by_other && *observed_time_ + observed_lease > now) {
    return std::nullopt;  // another holder's lease is still valid
  }
  if (existing.holder_identity == identity_) {
    desired.acquire_time = existing.acquire_time;
    desired.lease_transitions = existing.lease_transitions;
  } else {
    desired.lease_transitions = existing.lease_transitions + 1;
  }
  desired.resource_version = existing.resource_version;
  return Write{false, desired};
}

LeaderElector::Step LeaderElector::conclude(TimePoint now, const std::optional<LeaseRecord>& written,
                                            std::string error) {
  if (written) {
    observed_ = *written;
    observed_time_ = now;
    leader_ = true;
    last_renew_ = now;
  } else if (leader_ && (!is_leader(now) || observed_.holder_identity != identity_)) {
    leader_ = false;  // lost: renew deadline passed, or someone else holds the lease now
  }
  Step result;
  result.leader = is_leader(now);
  result.changed = result.leader != was_leader_;
  result.error = std::move(error);
  // Leaders renew every retryPeriod; candidates retry with client-go's jitter (factor 1.2).
  result.next_attempt =
      result.leader
          ? config_.retry_period
          : config_.retry_period + std::chrono::duration_cast<Duration>(config_.retry_period * 1.2 * random01_());
  return result;
}

LeaderElector::Step LeaderElector::step(LeaseStore& store, TimePoint now, WallTime wall_now) {
  begin_attempt(now);
  auto current = store.get();
  if (!current) {
    return conclude(now, std::nullopt, "get lease: " + current.error().message);
  }
  auto write = plan(*current, now, wall_now);
  if (!write) {
    return conclude(now, std::nullopt, "");
  }
  auto written = write->create ? store.create(write->record) : store.update(write->record);
  if (!written) {
    return conclude(now, std::nullopt,
                    std::string(write->create ? "create lease: " : "update lease: ") + written.error().message);
  }
  return conclude(now, *written, "");
}

std::optional<LeaseRecord> LeaderElector::release_record(TimePoint now, WallTime wall_now) {
  if (!is_leader(now)) {
    leader_ = false;
    return std::nullopt;
  }
  LeaseRecord released = observed_;
  released.holder_identity.clear();
  released.lease_duration = std::chrono::seconds(1);
  released.renew_time = wall_now;
  leader_ = false;  // whatever the outcome of the write, we stop writing
  return released;
}

Status LeaderElector::release(LeaseStore& store, TimePoint now, WallTime wall_now) {
  auto released = release_record(now, wall_now);
  if (!released) {
    return ok_status();
  }
  auto updated = store.update(*released);
  if (!updated) {
    return updated.error();
  }
  observed_ = *updated;
  observed_time_ = now;
  return ok_status();
}

}  // namespace kstate::daemon
