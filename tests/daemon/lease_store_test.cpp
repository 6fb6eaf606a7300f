// The Lease store of leader election: the Lease <-> LeaseRecord conversions
// (metav1.MicroTime with microseconds, missing fields as client-go reads them) and
// KubernetesLeaseStore against kstate-emulator (absent -> create, update with the
// resourceVersion read, a stale resourceVersion refused with a conflict).
#include "daemon/lease_store.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "tests/support/emulator.hpp"

namespace lease_store_test {

using namespace std::chrono_literals;
using kstate::daemon::LeaseRecord;
namespace json = kstate::json;

TEST_CASE("lease store: MicroTime round trip keeps microseconds") {
  using kstate::daemon::format_micro_time;
  using kstate::daemon::parse_micro_time;
  const auto time = std::chrono::system_clock::time_point(std::chrono::microseconds(1795784645123456LL));
  CHECK(format_micro_time(time) == "2026-11-27T13:04:05.123456Z");
  CHECK(parse_micro_time("2026-11-27T13:04:05.123456Z") == time);
  CHECK(parse_micro_time("2026-11-27T13:04:05Z") == std::chrono::system_clock::time_point(1795784645s));
  CHECK(parse_micro_time("2026-11-27T13:04:05.5Z") == std::chrono::system_clock::time_point(1795784645s) + 500ms);
  CHECK_FALSE(parse_micro_time("yesterday"));
}

TEST_CASE("lease store: a record becomes a Lease object and back") {
  LeaseRecord record;
  record.holder_identity = "node-a_1234";
  record.lease_duration = 15s;
  record.acquire_time = std::chrono::system_clock::time_point(1795784645s);
  record.renew_time = record.acquire_time + 2500ms;
  record.lease_transitions = 3;
  record.resource_version = "42";
  json::Document lease = kstate::daemon::lease_object(record, "kstate", "kube-system");
  CHECK(
      json::dump(lease) ==
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kstate","namespace":"kube-system",)"
      R"("resourceVersion":"42"},"spec":{"holderIdentity":"node-a_1234","leaseDurationSeconds":15,)"
      R"("acquireTime":"2026-11-27T13:04:05.000000Z","renewTime":"2026-11-27T13:04:07.500000Z","leaseTransitions":3}})");
  auto back = kstate::daemon::lease_record(lease);
  REQUIRE(back);
  CHECK(back->same_record(record));
  CHECK(back->resource_version == "42");

  auto empty = json::parse(R"({"kind":"Lease","metadata":{"resourceVersion":"7"},"spec":{}})");
  REQUIRE(empty.ok());
  auto bare = kstate::daemon::lease_record(*empty);
  REQUIRE(bare);
  CHECK(bare->holder_identity.empty());
  CHECK(bare->lease_duration == 0s);
  CHECK(bare->resource_version == "7");

  auto bad = json::parse(R"({"kind":"Lease","spec":{"renewTime":"soon"}})");
  REQUIRE(bad.ok());
  auto refused = kstate::daemon::lease_record(*bad);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "Lease spec.renewTime: invalid time \"soon\"");
}

namespace {

// A Lease store on a fresh emulator, reached as the daemon reaches it.
struct LeaseStoreFixture {
  kstate::testing::Emulator emulator;
  boost::asio::io_context io;
  kstate::Result<std::unique_ptr<kstate::Client>> client = connect();
  kstate::daemon::KubernetesLeaseStore store{
      [this]() -> kstate::Result<kstate::DynamicClient*> { return client.value()->dynamic.get(); }, "kstate-test",
      "default"};

  kstate::Result<std::unique_ptr<kstate::Client>> connect() {
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    return kstate::make_client(io.get_executor(), sources, kstate::TransportOptions{});
  }
};

}  // namespace

TEST_CASE("lease store: create, update with the resourceVersion read, stale writes refused (emulator)") {
  LeaseStoreFixture fixture;
  auto& [emulator, io, client, store] = fixture;
  REQUIRE(client);

  auto absent = kstate::run_sync(io, store.get());
  REQUIRE(absent);
  CHECK_FALSE(absent->has_value());

  LeaseRecord mine;
  mine.holder_identity = "node-a";
  mine.lease_duration = 15s;
  mine.acquire_time = mine.renew_time = std::chrono::system_clock::now();
  auto created = kstate::run_sync(io, store.create(mine));
  REQUIRE(created);
  CHECK(created->holder_identity == "node-a");
  CHECK_FALSE(created->resource_version.empty());

  LeaseRecord renewed = *created;
  renewed.renew_time += 2s;
  auto updated = kstate::run_sync(io, store.update(renewed));
  REQUIRE(updated);
  CHECK(updated->renew_time == renewed.renew_time);
  CHECK(updated->resource_version != created->resource_version);

  // A second candidate still holding the first resourceVersion loses.
  LeaseRecord stale = *created;
  stale.holder_identity = "node-b";
  auto refused = kstate::run_sync(io, store.update(stale));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().kind == kstate::ErrorKind::conflict);
  auto current = kstate::run_sync(io, store.get());
  REQUIRE(current);
  REQUIRE(current->has_value());
  CHECK((*current)->holder_identity == "node-a");

  // Creating a Lease that exists fails too (two candidates starting together).
  auto again = kstate::run_sync(io, store.create(mine));
  REQUIRE_FALSE(again);
  CHECK(again.error().kind == kstate::ErrorKind::already_exists);
}

TEST_CASE("lease store: a Lease read answered 404 page not found is an error, not a free Lease (emulator)") {
  // "404 page not found" is about the path (coordination.k8s.io not served there, a
  // proxy in between): read as "no Lease", a standby would create one and lead.
  LeaseStoreFixture fixture;
  auto& [emulator, io, client, store] = fixture;
  REQUIRE(client);
  emulator.set_faults(
      R"({"failNext": 1, "failCode": 404, "method": "GET", "pathPrefix": "/apis/coordination.k8s.io/"})");
  auto unserved = kstate::run_sync(io, store.get());
  REQUIRE_FALSE(unserved);
  CHECK(unserved.error().resource_not_served);
  // A Lease that really does not exist is still "none".
  auto absent = kstate::run_sync(io, store.get());
  REQUIRE(absent);
  CHECK_FALSE(absent->has_value());
}

}  // namespace lease_store_test
