// KubernetesLeaseStore and the Lease <-> LeaseRecord conversions (see lease_store.hpp).
// Every coroutine call passes named lvalues (GCC 12 destroys temporaries bound to
// coroutine parameters twice).
#include "daemon/lease_store.hpp"

#include <cstdio>
#include <ctime>

#include "core/credentials.hpp"

namespace kstate::daemon {
namespace {

using SystemClock = std::chrono::system_clock;
using json::string_at;

}  // namespace

ApiResource lease_resource() {
  ApiResource resource;
  resource.group = "coordination.k8s.io";
  resource.version = "v1";
  resource.kind = "Lease";
  resource.plural = "leases";
  resource.singular = "lease";
  resource.namespaced = true;
  resource.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  return resource;
}

std::string format_micro_time(SystemClock::time_point time) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  auto seconds = static_cast<std::time_t>(micros / 1'000'000);
  long fraction = static_cast<long>(micros % 1'000'000);
  if (fraction < 0) {
    fraction += 1'000'000;
    --seconds;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[128];  // large enough for any int fields (GCC checks the worst case)
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, fraction);
  return text;
}

std::optional<SystemClock::time_point> parse_micro_time(std::string_view text) {
  // The whole seconds through core's RFC 3339 parser, the fraction (up to microseconds) here.
  std::string whole(text);
  long micros = 0;
  if (const auto dot = whole.find('.'); dot != std::string::npos) {
    std::size_t end = dot + 1;
    int digits = 0;
    while (end < whole.size() && whole[end] >= '0' && whole[end] <= '9') {
      if (digits < 6) {
        micros = micros * 10 + (whole[end] - '0');
        ++digits;
      }
      ++end;
    }
    for (; digits < 6; ++digits) {
      micros *= 10;
    }
    whole.erase(dot, end - dot);
  }
  auto seconds = parse_rfc3339(whole);
  if (!seconds) {
    return std::nullopt;
  }
  return *seconds + std::chrono::microseconds(micros);
}

json::Document lease_object(const LeaseRecord& record, const std::string& name, const std::string& ns) {
  json::Document lease(rapidjson::kObjectType);
  auto& allocator = lease.GetAllocator();
  json::set_string(lease, "apiVersion", "coordination.k8s.io/v1", allocator);
  json::set_string(lease, "kind", "Lease", allocator);
  json::Value& metadata = json::ensure_object(lease, "metadata", allocator);
  json::set_string(metadata, "name", name, allocator);
  json::set_string(metadata, "namespace", ns, allocator);
  if (!record.resource_version.empty()) {
    json::set_string(metadata, "resourceVersion", record.resource_version, allocator);
  }
  json::Value& spec = json::ensure_object(lease, "spec", allocator);
  // An empty holder is written as "" (client-go's release writes it so), not omitted.
  json::set_string(spec, "holderIdentity", record.holder_identity, allocator);
  json::set(spec, "leaseDurationSeconds", json::Value(static_cast<int>(record.lease_duration.count())), allocator);
  if (record.acquire_time != SystemClock::time_point{}) {
    json::set_string(spec, "acquireTime", format_micro_time(record.acquire_time), allocator);
  }
  if (record.renew_time != SystemClock::time_point{}) {
    json::set_string(spec, "renewTime", format_micro_time(record.renew_time), allocator);
  }
  json::set(spec, "leaseTransitions", json::Value(record.lease_transitions), allocator);
  return lease;
}

Result<LeaseRecord> lease_record(const json::Value& lease) {
  if (!lease.IsObject() || string_at(lease, {"kind"}) != "Lease") {
    return Error(ErrorKind::invalid, "not a Lease object");
  }
  LeaseRecord record;
  record.resource_version = string_at(lease, {"metadata", "resourceVersion"});
  record.holder_identity = string_at(lease, {"spec", "holderIdentity"});
  if (const json::Value* duration = json::find_path(lease, {"spec", "leaseDurationSeconds"});
      duration != nullptr && duration->IsInt()) {
    record.lease_duration = std::chrono::seconds(duration->GetInt());
  }
  if (const json::Value* transitions = json::find_path(lease, {"spec", "leaseTransitions"});
      transitions != nullptr && transitions->IsInt()) {
    record.lease_transitions = transitions->GetInt();
  }
  for (auto [field, target] :
       {std::pair{"acquireTime", &record.acquire_time}, std::pair{"renewTime", &record.renew_time}}) {
    const std::string text = string_at(lease, {"spec", field});
    if (text.empty()) {
      continue;
    }
    auto parsed = parse_micro_time(text);
    if (!parsed) {
      return Error(ErrorKind::invalid, std::string("Lease spec.") + field + ": invalid time \"" + text + "\"");
    }
    *target = *parsed;
  }
  return record;
}

KubernetesLeaseStore::KubernetesLeaseStore(std::function<Result<DynamicClient*>()> client, std::string name,
                                           std::string ns)
    : client_(std::move(client)), name_(std::move(name)), ns_(std::move(ns)), resource_(lease_resource()) {}

boost::asio::awaitable<Result<std::optional<LeaseRecord>>> KubernetesLeaseStore::get() {
  auto client = client_();
  if (!client) {
    co_return client.error();
  }
  std::string ns = ns_;
  std::string name = name_;
  std::string subresource;
  auto got = co_await (*client)->get(resource_, ns, name, subresource);
  if (!got) {
    if (got.error().object_missing()) {
      co_return std::optional<LeaseRecord>();
    }
    co_return got.error();
  }
  auto record = lease_record(*got);
  if (!record) {
    co_return record.error();
  }
  co_return std::optional<LeaseRecord>(std::move(*record));
}

boost::asio::awaitable<Result<LeaseRecord>> KubernetesLeaseStore::create(LeaseRecord record) {
  auto client = client_();
  if (!client) {
    co_return client.error();
  }
  record.resource_version.clear();
  json::Document object = lease_object(record, name_, ns_);
  std::string ns = ns_;
  WriteOptions write;
  auto created = co_await (*client)->create(resource_, ns, object, write);
  if (!created) {
    co_return created.error();
  }
  co_return lease_record(*created);
}

boost::asio::awaitable<Result<LeaseRecord>> KubernetesLeaseStore::update(LeaseRecord record) {
  auto client = client_();
  if (!client) {
    co_return client.error();
  }
  json::Document object = lease_object(record, name_, ns_);
  std::string ns = ns_;
  std::string name = name_;
  WriteOptions write;
  std::string subresource;
  auto replaced = co_await (*client)->replace(resource_, ns, name, object, write, subresource);
  if (!replaced) {
    co_return replaced.error();
  }
  co_return lease_record(*replaced);
}

}  // namespace kstate::daemon
