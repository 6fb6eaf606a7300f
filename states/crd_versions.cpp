// The run's CRDs and discovery's lag behind them (see crd_versions.hpp).
#include "states/crd_versions.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/this_coro.hpp>

#include "states/engine.hpp"

namespace kstate::states {
namespace {

using json::string_at;

std::string kind_key(const std::string& group, const std::string& kind) {
  return group + "/" + kind;
}

// "group/Kind" of the kind a CRD defines.
std::string defined_kind(const json::Value& crd) {
  return kind_key(string_at(crd, {"spec", "group"}), string_at(crd, {"spec", "names", "kind"}));
}

const json::Value* find_crd(const std::map<std::string, json::Document>& crds, const GroupVersionKind& gvk) {
  auto found = crds.find(kind_key(gvk.group, gvk.kind));
  return found == crds.end() ? nullptr : &found->second;
}

}  // namespace

CrdVersions::CrdVersions(DynamicClient& client, KindResolver& resolver, SleepFunction sleep)
    : client_(client), resolver_(resolver), sleep_(std::move(sleep)) {}

void CrdVersions::created(const json::Value& crd) {
  created_[defined_kind(crd)] = json::copy(crd);
}

void CrdVersions::updated(const json::Value& crd) {
  updated_[defined_kind(crd)] = json::copy(crd);
}

const json::Value* CrdVersions::created_crd(const GroupVersionKind& gvk) const {
  return find_crd(created_, gvk);
}

const json::Value* CrdVersions::updated_crd(const GroupVersionKind& gvk) const {
  return find_crd(updated_, gvk);
}

bool CrdVersions::serves_version(const json::Value& crd, const std::string& version) {
  const json::Value* versions = json::find_path(crd, {"spec", "versions"});
  if (versions == nullptr || !versions->IsArray()) {
    return false;
  }
  for (const auto& listed : versions->GetArray()) {
    if (string_at(listed, {"name"}) == version) {
      const json::Value* served = json::find(listed, "served");
      return served != nullptr && served->IsBool() && served->GetBool();
    }
  }
  return false;
}

bool CrdVersions::serves_kinds(const json::Value& crd) {
  if (json::find_path(crd, {"metadata", "deletionTimestamp"}) != nullptr) {
    return false;
  }
  if (const json::Value* conditions = json::find_path(crd, {"status", "conditions"});
      conditions != nullptr && conditions->IsArray()) {
    for (const auto& condition : conditions->GetArray()) {
      if (string_at(condition, {"type"}) == "Established") {
        return string_at(condition, {"status"}) == "True";
      }
    }
  }
  return false;
}

asio::awaitable<Result<const json::Value*>> CrdVersions::live_crd(const std::string& group, const std::string& kind) {
  const Result<json::Document>* listed = co_await crd_list_.get([this]() -> asio::awaitable<Result<json::Document>> {
    try {
      GroupVersionKind crds{"apiextensions.k8s.io", "v1", "CustomResourceDefinition"};
      auto resource = co_await resolver_.resolve(crds);
      if (!resource.ok()) {
        co_return resource.error();
      }
      ListOptions everything;
      std::string cluster_scope;
      co_return co_await client_.list(*resource, cluster_scope, everything);
    } catch (const std::exception& failure) {
      co_return Error(ErrorKind::internal, failure.what());  // the waiters must not wait forever
    }
  });
  if (!listed->ok()) {
    co_return listed->error();
  }
  // (a second CRD claiming the same kind is never Established: the serving one wins)
  const json::Value* found = nullptr;
  if (const json::Value* items = json::find(listed->value(), "items"); items != nullptr && items->IsArray()) {
    for (const auto& crd : items->GetArray()) {
      if (string_at(crd, {"spec", "group"}) == group && string_at(crd, {"spec", "names", "kind"}) == kind &&
          (found == nullptr || serves_kinds(crd))) {
        found = &crd;
      }
    }
  }
  co_return found;
}

asio::awaitable<bool> CrdVersions::listed_in_another_version(const GroupVersionKind& gvk) {
  auto listed = co_await resolver_.resources();
  if (!listed.ok()) {
    co_return true;  // cannot tell: look the CRD up
  }
  for (const ApiResource& resource : *listed) {
    if (resource.group == gvk.group && resource.kind == gvk.kind && resource.version != gvk.version) {
      co_return true;
    }
  }
  co_return false;
}

bool CrdVersions::awaits_discovery(const GroupVersionKind& gvk) const {
  const json::Value* crd = updated_crd(gvk);
  return crd != nullptr && serves_version(*crd, gvk.version);
}

asio::awaitable<Status> CrdVersions::until_discovery_lists(const GroupVersionKind& gvk) {
  const json::Value* crd = updated_crd(gvk);
  const std::string crd_name = crd != nullptr ? string_at(*crd, {"metadata", "name"}) : "";
  // One deadline per version, set by its first state: the others do not wait again.
  const auto [deadline, first] = discovery_wait_deadlines_.try_emplace(gvk.api_version() + "/" + gvk.kind,
                                                                       Clock::now() + discovery_catch_up_timeout);
  if (first) {
    spdlog::info("waiting for the API server's discovery to list {} (CustomResourceDefinition {} serves it)",
                 gvk.qualified_kind(), crd_name);
  }
  std::chrono::milliseconds pause{50};
  while (true) {
    auto resource = co_await resolver_.resolve_known(gvk);
    if (resource.ok()) {
      co_return ok_status();
    }
    if (Clock::now() >= deadline->second) {
      break;
    }
    co_await pause_for(sleep_, pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    if (!discovery_reading_ && Clock::now() - discovery_read_at_ >= pause / 2) {
      discovery_reading_ = true;  // one read at a time, shared by every waiting state
      auto refreshed = co_await resolver_.refresh();
      discovery_reading_ = false;
      discovery_read_at_ = Clock::now();
      if (!refreshed.ok()) {
        co_return refreshed.error();  // the cause, not "not listed yet"
      }
    }
  }
  co_return Error(ErrorKind::not_found, "version " + gvk.version + " of " + gvk.qualified_kind() +
                                            ", which CustomResourceDefinition " + crd_name +
                                            " serves, is not in the API server's discovery after " +
                                            duration_text(discovery_catch_up_timeout) + ": run again once it lists it");
}

}  // namespace kstate::states
