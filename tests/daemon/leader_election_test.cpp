// Leader election with client-go semantics, driven by an injected clock against an
// in-memory Lease store that enforces resourceVersion like the API server.
#include "daemon/leader_election.hpp"

#include <catch2/catch.hpp>

namespace leader_election_test {

using namespace std::chrono_literals;
using kstate::daemon::LeaderElector;
using kstate::daemon::LeaseRecord;

namespace {

class MemoryLeaseStore final : public kstate::daemon::LeaseStore {
 public:
  std::optional<LeaseRecord> lease;
  bool unreachable = false;
  int writes = 0;

  kstate::Result<std::optional<LeaseRecord>> get() override {
    if (unreachable) {
      return kstate::Error(kstate::ErrorKind::connection, "connection refused");
    }
    return lease;
  }
  kstate::Result<LeaseRecord> create(const LeaseRecord& record) override {
    if (unreachable) {
      return kstate::Error(kstate::ErrorKind::connection, "connection refused");
    }
    if (lease) {
      return kstate::Error(kstate::ErrorKind::already_exists, "leases \"kstate\" already exists");
    }
    lease = record;
    lease->resource_version = std::to_string(++version_);
    ++writes;
    return *lease;
  }
  kstate::Result<LeaseRecord> update(const LeaseRecord& record) override {
    if (unreachable) {
      return kstate::Error(kstate::ErrorKind::connection, "connection refused");
    }
    if (!lease || record.resource_version != lease->resource_version) {
      return kstate::Error(kstate::ErrorKind::conflict, "the object has been modified");
    }
    lease = record;
    lease->resource_version = std::to_string(++version_);
    ++writes;
    return *lease;
  }
  // Another process writes the lease (its own renewals, or an operator's edit).
  void write_as(const std::string& holder, std::chrono::system_clock::time_point renew) {
    if (!lease) {
      lease = LeaseRecord{};
    }
    lease->holder_identity = holder;
    lease->lease_duration = 15s;
    lease->renew_time = renew;
    lease->resource_version = std::to_string(++version_);
  }

 private:
  int version_ = 0;
};

kstate::daemon::LeaderElectionConfig election() {
  kstate::daemon::LeaderElectionConfig config;
  config.enabled = true;
  return config;  // client-go defaults: 15s / 10s / 2s
}

struct Clocks {
  LeaderElector::TimePoint now{};
  std::chrono::system_clock::time_point wall = std::chrono::system_clock::time_point{} + 1000h;
  void advance(std::chrono::milliseconds by) {
    now += by;
    wall += by;
  }
};

}  // namespace

TEST_CASE("leader election: the first candidate creates the lease and leads") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  auto step = node_a.step(store, clock.now, clock.wall);
  CHECK(step.leader);
  CHECK(step.changed);
  CHECK(step.next_attempt == 2s);
  REQUIRE(store.lease);
  CHECK(store.lease->holder_identity == "node-a");
  CHECK(store.lease->lease_duration == 15s);
  CHECK(store.lease->lease_transitions == 0);
  CHECK(node_a.is_leader(clock.now));
}

TEST_CASE("leader election: a candidate follows a live leader and takes over only after leaseDuration of silence") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  LeaderElector node_b(election(), "node-b", [] { return 0.5; });
  REQUIRE(node_a.step(store, clock.now, clock.wall).leader);

  auto follower = node_b.step(store, clock.now, clock.wall);
  CHECK_FALSE(follower.leader);
  CHECK(node_b.observed_holder() == "node-a");
  CHECK(follower.next_attempt == 2s + 1200ms);  // retryPeriod + 1.2 * 0.5 * retryPeriod

  // node-a keeps renewing: node-b never takes over, however long it waits.
  for (int i = 0; i < 20; ++i) {
    clock.advance(2s);
    REQUIRE(node_a.step(store, clock.now, clock.wall).leader);
    CHECK_FALSE(node_b.step(store, clock.now, clock.wall).leader);
  }

  // node-a goes silent: node-b waits a full leaseDuration from when it last saw a change.
  clock.advance(14s);
  CHECK_FALSE(node_b.step(store, clock.now, clock.wall).leader);
  clock.advance(2s);
  auto takeover = node_b.step(store, clock.now, clock.wall);
  CHECK(takeover.leader);
  CHECK(takeover.changed);
  CHECK(store.lease->holder_identity == "node-b");
  CHECK(store.lease->lease_transitions == 1);
}

TEST_CASE("leader election: renewing keeps acquireTime and transitions") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  REQUIRE(node_a.step(store, clock.now, clock.wall).leader);
  const auto acquired = store.lease->acquire_time;
  clock.advance(2s);
  auto renew = node_a.step(store, clock.now, clock.wall);
  CHECK(renew.leader);
  CHECK_FALSE(renew.changed);
  CHECK(store.lease->acquire_time == acquired);
  CHECK(store.lease->renew_time == clock.wall);
  CHECK(store.lease->lease_transitions == 0);
}

TEST_CASE("leader election: a leader that cannot renew within renewDeadline stops leading at once") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  REQUIRE(node_a.step(store, clock.now, clock.wall).leader);
  store.unreachable = true;
  clock.advance(2s);
  auto failed = node_a.step(store, clock.now, clock.wall);
  CHECK(failed.leader);  // still within renewDeadline (10s)
  CHECK_THAT(failed.error, Catch::Contains("connection refused"));
  clock.advance(7900ms);
  CHECK(node_a.is_leader(clock.now));
  clock.advance(100ms);
  // Exactly renewDeadline after the last renew: no more writes, even before the next step.
  CHECK_FALSE(node_a.is_leader(clock.now));
  auto lost = node_a.step(store, clock.now, clock.wall);
  CHECK_FALSE(lost.leader);
  CHECK(lost.changed == false);  // is_leader() was already false: the loss was immediate
}

TEST_CASE("leader election: a lease taken by someone else ends leadership on the next step") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  REQUIRE(node_a.step(store, clock.now, clock.wall).leader);
  store.write_as("node-c", clock.wall);  // e.g. an operator hands the lease over
  clock.advance(2s);
  auto step = node_a.step(store, clock.now, clock.wall);
  CHECK_FALSE(step.leader);
  CHECK(step.changed);
  CHECK_FALSE(node_a.is_leader(clock.now));
  CHECK(node_a.observed_holder() == "node-c");
}

TEST_CASE("leader election: a stale resourceVersion cannot win (two candidates, one lease)") {
  MemoryLeaseStore store;
  Clocks clock;
  store.write_as("old-node", clock.wall);
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  LeaderElector node_b(election(), "node-b", [] { return 0.0; });
  CHECK_FALSE(node_a.step(store, clock.now, clock.wall).leader);
  CHECK_FALSE(node_b.step(store, clock.now, clock.wall).leader);
  clock.advance(16s);
  // Both read the expired lease; node-a writes first, node-b's write carries the old version.
  const LeaseRecord read_by_both = *store.lease;
  CHECK(node_a.step(store, clock.now, clock.wall).leader);
  class RacingStore final : public kstate::daemon::LeaseStore {
   public:
    RacingStore(MemoryLeaseStore& real, LeaseRecord stale) : real_(real), stale_(std::move(stale)) {}
    kstate::Result<std::optional<LeaseRecord>> get() override { return std::optional<LeaseRecord>(stale_); }
    kstate::Result<LeaseRecord> create(const LeaseRecord& r) override { return real_.create(r); }
    kstate::Result<LeaseRecord> update(const LeaseRecord& r) override { return real_.update(r); }

   private:
    MemoryLeaseStore& real_;
    LeaseRecord stale_;
  };
  RacingStore racing(store, read_by_both);
  auto step = node_b.step(racing, clock.now, clock.wall);
  CHECK_FALSE(step.leader);
  CHECK_THAT(step.error, Catch::Contains("modified"));
  CHECK(store.lease->holder_identity == "node-a");
}

TEST_CASE("leader election: release on shutdown lets another node take over without waiting") {
  MemoryLeaseStore store;
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  LeaderElector node_b(election(), "node-b", [] { return 0.0; });
  REQUIRE(node_a.step(store, clock.now, clock.wall).leader);
  CHECK_FALSE(node_b.step(store, clock.now, clock.wall).leader);
  REQUIRE(node_a.release(store, clock.now, clock.wall).ok());
  CHECK_FALSE(node_a.is_leader(clock.now));
  CHECK(store.lease->holder_identity.empty());
  clock.advance(2s);
  CHECK(node_b.step(store, clock.now, clock.wall).leader);
  CHECK(store.lease->lease_transitions == 1);
}

TEST_CASE("leader election: the pure plan/conclude halves give the same decisions as step()") {
  Clocks clock;
  LeaderElector node_a(election(), "node-a", [] { return 0.0; });
  node_a.begin_attempt(clock.now);
  auto first = node_a.plan(std::nullopt, clock.now, clock.wall);
  REQUIRE(first);
  CHECK(first->create);
  CHECK(first->record.holder_identity == "node-a");
  // As the API server answers the POST: the record with its first resourceVersion.
  MemoryLeaseStore server;
  auto created = server.create(first->record);
  REQUIRE(created.ok());
  const LeaseRecord stored = *created;
  auto step = node_a.conclude(clock.now, stored, "");
  CHECK(step.leader);
  CHECK(step.changed);

  // Held by another, fresh: nothing to write.
  LeaderElector node_b(election(), "node-b", [] { return 0.0; });
  node_b.begin_attempt(clock.now);
  CHECK_FALSE(node_b.plan(stored, clock.now, clock.wall).has_value());
  CHECK_FALSE(node_b.conclude(clock.now, std::nullopt, "").leader);

  // Renewal is a PUT carrying the version read.
  clock.advance(2s);
  node_a.begin_attempt(clock.now);
  auto renew = node_a.plan(stored, clock.now, clock.wall);
  REQUIRE(renew);
  CHECK_FALSE(renew->create);
  CHECK(renew->record.resource_version == stored.resource_version);
  CHECK(renew->record.acquire_time == stored.acquire_time);
}

}  // namespace leader_election_test
