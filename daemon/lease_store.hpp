// Where the daemon's leader election keeps its lock: a coordination.k8s.io/v1 Lease,
// read and written like client-go's resourcelock.LeaseLock (GET; POST when absent; PUT
// with the resourceVersion that was read, so a stale writer gets 409 Conflict). The
// store is asynchronous (it runs on the daemon's event loop); the conversions between
// a Lease object and a LeaseRecord are pure functions, tested on their own.
#pragma once

#include <utility>
// (Boost 1.74's awaitable.hpp needs <utility> first.)
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>
#include <string>

#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "daemon/leader_election.hpp"

namespace kstate::daemon {

class AsyncLeaseStore {
 public:
  virtual ~AsyncLeaseStore() = default;
  // nullopt when the Lease does not exist.
  virtual boost::asio::awaitable<Result<std::optional<LeaseRecord>>> get() = 0;
  virtual boost::asio::awaitable<Result<LeaseRecord>> create(LeaseRecord record) = 0;
  // Fails with ErrorKind::conflict when record.resource_version is stale.
  virtual boost::asio::awaitable<Result<LeaseRecord>> update(LeaseRecord record) = 0;
};

// The Lease resource, without discovery (coordination.k8s.io/v1 is in every supported
// Kubernetes version).
ApiResource lease_resource();

// metav1.MicroTime: RFC 3339 in UTC with microseconds ("2026-11-21T13:04:05.123456Z").
std::string format_micro_time(std::chrono::system_clock::time_point time);
std::optional<std::chrono::system_clock::time_point> parse_micro_time(std::string_view text);

// The Lease object for `record` (metadata.resourceVersion set when the record has one).
json::Document lease_object(const LeaseRecord& record, const std::string& name, const std::string& ns);
// The record in a Lease object (missing spec fields are zero, as client-go reads them).
Result<LeaseRecord> lease_record(const json::Value& lease);

// A Lease store on the API server. `client` is asked for on every call, so that a
// reconnect (SIGHUP changing the kubeconfig) is followed; it returns nullptr (and the
// store an error) when there is no usable client yet.
class KubernetesLeaseStore final : public AsyncLeaseStore {
 public:
  KubernetesLeaseStore(std::function<Result<DynamicClient*>()> client, std::string name, std::string ns);

  boost::asio::awaitable<Result<std::optional<LeaseRecord>>> get() override;
  boost::asio::awaitable<Result<LeaseRecord>> create(LeaseRecord record) override;
  boost::asio::awaitable<Result<LeaseRecord>> update(LeaseRecord record) override;

 private:
  std::function<Result<DynamicClient*>()> client_;
  std::string name_;
  std::string ns_;
  ApiResource resource_;
};

}  // namespace kstate::daemon
