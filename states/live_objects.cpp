// The engine's reads of live objects (see live_objects.hpp): the plan of pair reads,
// the background reads (a pair's GET or LIST, a kind's LIST across namespaces, a
// Namespace's existence check), and a state's object from them or from a GET.
#include "states/live_objects.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include "states/read_ahead.hpp"
#include "states/scheduler.hpp"

namespace kstate::states {

using json::string_at;

LiveObjects::LiveObjects(DynamicClient& client, const EngineOptions& options, std::size_t state_count)
    : client_(client), options_(options), members_(state_count) {}

const json::Value& LiveObjects::absent() {
  static const json::Value absent_object;
  return absent_object;
}

std::string LiveObjects::pair_key(const ApiResource& resource, const std::string& ns) {
  return resource.group + "/" + resource.version + "/" + resource.plural + "|" + ns;
}

// A namespaced kind whose objects are all recorded in the inventory (options.recorded:
// kstate wrote them, so they carry its ownership labels) and spread over several
// namespaces is read with one LIST across namespaces selected by those labels, as
// `kubectl get -A -l` would: a re-apply of 8 kinds in 10 namespaces sends 8 LISTs
// instead of 80. A pair in which that LIST lacks one of the objects (deleted, or its
// labels removed, by someone else) is then read on its own, so "absent" is only ever
// concluded from a complete read.
void LiveObjects::plan(const std::vector<Target>& targets, const std::vector<std::size_t>& order) {
  const std::size_t count = std::min(targets.size(), members_.size());
  std::vector<std::size_t> position(count, count);
  for (std::size_t at = 0; at < order.size(); ++at) {
    if (order[at] < count) {
      position[order[at]] = at;
    }
  }
  std::map<std::string, std::vector<std::size_t>> pairs;
  for (std::size_t i = 0; i < count; ++i) {
    const Target& target = targets[i];
    members_[i].resource = target.resource;
    members_[i].ref = target.ref;
    if (target.selected && target.resource && !target.ref.name.empty()) {
      pairs[pair_key(*target.resource, target.ref.ns)].push_back(i);
    }
  }
  // Pairs grouped by kind (the key without its namespace).
  std::map<std::string, std::vector<std::vector<std::size_t>>> kinds;
  for (auto& [key, members] : pairs) {
    sets_[key].phase = LiveSet::Phase::reading;
    const Member& first = members_[members.front()];
    if (first.resource->group.empty() && first.resource->plural == "namespaces" && !first.resource->namespaced) {
      namespaces_resource_ = *first.resource;
      namespaces_key_ = key;
      namespaces_read_by_name_ = members.size() == 1;
      for (std::size_t i : members) {
        namespace_checks_[members_[i].ref.name].member = i;
      }
    }
    kinds[pair_key(*first.resource, "")].push_back(std::move(members));
  }
  for (auto& [kind, kind_pairs] : kinds) {
    if (read_across_namespaces(kind_pairs) || listed_ahead(kind_pairs)) {
      work_.push_back(Work{std::move(kind_pairs), true});
      continue;
    }
    for (auto& members : kind_pairs) {
      work_.push_back(Work{{std::move(members)}, false});
    }
  }
  auto first_position = [&](const Work& read) {
    std::size_t first = count;
    for (const auto& members : read.pairs) {
      for (std::size_t i : members) {
        first = std::min(first, position[i]);
      }
    }
    return first;
  };
  std::stable_sort(work_.begin(), work_.end(),
                   [&](const auto& a, const auto& b) { return first_position(a) < first_position(b); });
}

bool LiveObjects::read_across_namespaces(const std::vector<std::vector<std::size_t>>& kind_pairs) const {
  if (kind_pairs.size() < 2 || !options_.recorded || options_.ownership_labels.empty() ||
      !members_[kind_pairs.front().front()].resource->namespaced) {
    return false;
  }
  for (const auto& members : kind_pairs) {
    for (std::size_t i : members) {
      if (!options_.recorded(members_[i].ref)) {
        return false;
      }
    }
  }
  return true;
}

bool LiveObjects::listed_ahead(const std::vector<std::vector<std::size_t>>& kind_pairs) const {
  const ApiResource& resource = *members_[kind_pairs.front().front()].resource;
  return options_.read_ahead && resource.namespaced && options_.read_ahead->started(resource.gvk());
}

void LiveObjects::start(const asio::any_io_executor& executor) {
  running_ = true;
  done_ = std::make_unique<Signal>(executor);
  asio::co_spawn(executor, read_everything(), [this](std::exception_ptr failure) {
    if (failure) {
      spdlog::error("internal error while reading live objects");
    }
    running_ = false;
    done_->notify();
  });
}

asio::awaitable<void> LiveObjects::finished() {
  while (running_) {
    co_await done_->wait();
  }
}

asio::awaitable<void> LiveObjects::read_everything() {
  co_await for_each_bounded(work_.size(), options_.concurrency, [&](std::size_t w) -> asio::awaitable<void> {
    const Work& read = work_[w];
    if (read.across_namespaces) {
      co_await read_kind(read.pairs);
    } else {
      co_await read_pair(read.pairs.front());
    }
  });
}

Result<json::Document> LiveObjects::served(const ApiResource& resource, Result<json::Document> answer) {
  if (answer.ok() || !answer.error().resource_not_served) {
    return answer;
  }
  discovery_stale_ = true;
  return Error(ErrorKind::unsupported,
               "the API server does not serve " + resource.plural + " in " + resource.api_version() +
                   (resource.namespaced ? " (namespaced)" : " (cluster-scoped)") +
                   " as discovery said (404 page not found): discovery is read again for the next cycle");
}

// The warnings of a read shared by several states (a pair's, a kind's LIST) are each
// one's: a deprecated API's warning belongs to every object read through it.
void LiveObjects::share_warnings(const std::vector<std::string>& warnings, const std::vector<std::size_t>& members) {
  for (std::size_t i : members) {
    members_[i].warnings.insert(members_[i].warnings.end(), warnings.begin(), warnings.end());
  }
}

std::vector<std::string> LiveObjects::take_warnings(std::size_t index) {
  if (index >= members_.size()) {
    return {};
  }
  return std::exchange(members_[index].warnings, {});
}

// Marks a pair read (or unread: its states then read their objects one by one and
// report) and wakes the states waiting for it. Objects remembered meanwhile
// (generateName look-ups) are newer than the read, so they are kept.
void LiveObjects::finish_pair_read(const std::string& key, Found& found, bool read_ok) {
  LiveSet& set = sets_[key];
  for (auto& [name, object] : found) {
    set.objects.emplace(std::move(name), object);
  }
  set.phase = read_ok ? LiveSet::Phase::read : LiveSet::Phase::unread;
  if (set.read_done) {
    set.read_done->notify();
  }
}

bool LiveObjects::made_in_every_namespace(const ApiResource& resource, const std::string& name) {
  return resource.group.empty() && ((resource.kind == "ServiceAccount" && name == "default") ||
                                    (resource.kind == "ConfigMap" && name == "kube-root-ca.crt"));
}

void LiveObjects::namespace_created(const std::string& name) {
  namespaces_created_.insert(name);
}

bool LiveObjects::made_by_the_cluster_here(const ApiResource& resource, const ObjectRef& ref) const {
  return !ref.ns.empty() && namespaces_created_.count(ref.ns) > 0 && made_in_every_namespace(resource, ref.name);
}

void LiveObjects::read_when_run(std::size_t index) {
  members_.at(index).read_when_run = true;
}

bool LiveObjects::read_with_managed_fields(std::size_t index) const {
  return index < members_.size() && members_[index].read_with_managed_fields;
}

asio::awaitable<void> LiveObjects::check_finished(NamespaceCheck& check) {
  if (check.done) {
    co_return;
  }
  if (!check.finished) {
    check.finished = std::make_unique<Signal>(co_await asio::this_coro::executor);
  }
  while (!check.done) {
    co_await check.finished->wait();
  }
}

asio::awaitable<void> LiveObjects::namespace_checked(const ApiResource& resource, const ObjectRef& ref) {
  if (namespaces_key_.empty() || pair_key(resource, ref.ns) != namespaces_key_) {
    co_return;
  }
  auto check = namespace_checks_.find(ref.name);
  if (check != namespace_checks_.end() && check->second.started) {
    co_await check_finished(check->second);
  }
}

// Whether the declared Namespace `ns` does not exist: read once, by the first caller
// (the others wait for that read). False when it is not declared, or its GET failed
// (e.g. 403: kstate cannot tell, so its pairs are read).
asio::awaitable<bool> LiveObjects::namespace_absent(const std::string& ns) {
  auto check = namespace_checks_.find(ns);
  if (check == namespace_checks_.end() || !namespaces_resource_) {
    co_return false;
  }
  const bool likely_new =
      !namespaces_read_by_name_ && options_.recorded && !options_.recorded(members_[check->second.member].ref);
  if (namespaces_read_started_) {
    // (never waited for before it started: it may be waiting for a free slot)
    LiveSet& namespaces = sets_[namespaces_key_];
    if (!likely_new) {
      co_await read_finished(namespaces);
    }
    if (namespaces.phase == LiveSet::Phase::read) {
      if (namespaces.objects.count(ns) > 0) {
        co_return false;
      }
      if (namespaces_read_by_name_) {
        co_return true;
      }
    }
  }
  NamespaceCheck& state = check->second;
  if (state.started) {
    co_await check_finished(state);
    co_return state.absent;
  }
  state.started = true;
  // Done however the read ends (an exception too), so that no pair waits forever.
  struct MarkDone {
    NamespaceCheck& state;
    ~MarkDone() {
      state.done = true;
      if (state.finished) {
        state.finished->notify();
      }
    }
  } mark_done{state};
  std::string subresource;
  std::string cluster_scope;
  auto got = co_await client_.get(*namespaces_resource_, cluster_scope, ns, subresource);
  state.absent = !got.ok() && got.error().kind == ErrorKind::not_found;
  co_return state.absent;
}

asio::awaitable<void> LiveObjects::read_finished(LiveSet& set) {
  if (set.phase != LiveSet::Phase::reading) {
    co_return;
  }
  if (!set.read_done) {
    set.read_done = std::make_unique<Signal>(co_await asio::this_coro::executor);
  }
  while (set.phase == LiveSet::Phase::reading) {
    co_await set.read_done->wait();
  }
}

// One pair on its own: a GET for a single object, else a LIST of the namespace;
// nothing when its namespace was just found absent (it then holds no object; one
// created meanwhile is the same race as one created after any read).
// Every DynamicClient call passes named lvalues: GCC 12 mis-destroys temporaries and
// default arguments bound to coroutine parameters (a double free seen in practice).
asio::awaitable<void> LiveObjects::read_pair(const std::vector<std::size_t>& members) {
  Member& first = members_[members.front()];
  const ApiResource& resource = *first.resource;
  const std::size_t warned_before = first.warnings.size();
  const std::string key = pair_key(resource, first.ref.ns);
  bool read_ok = false;
  Found found;
  if (key == namespaces_key_) {
    namespaces_read_started_ = true;
  } else if (resource.namespaced) {
    const bool absent_namespace = co_await namespace_absent(first.ref.ns);
    if (absent_namespace) {
      for (std::size_t i : members) {
        members_[i].read_when_run = made_in_every_namespace(*members_[i].resource, members_[i].ref.name);
      }
      finish_pair_read(key, found, true);
      co_return;
    }
  }
  DynamicClient warned = client_.collecting_warnings(first.warnings);
  if (members.size() == 1) {
    std::string subresource;
    auto got = served(resource, co_await warned.get(resource, first.ref.ns, first.ref.name, subresource));
    if (got.ok()) {
      documents_.push_back(std::move(got).value());
      found.emplace_back(first.ref.name, &documents_.back());
      read_ok = true;
    } else if (got.error().kind == ErrorKind::not_found) {
      read_ok = true;
    }
  } else {
    ListOptions everything;
    auto listed = served(resource, co_await warned.list(resource, first.ref.ns, everything));
    if (listed.ok()) {
      documents_.push_back(std::move(listed).value());
      const json::Value* items = json::find(documents_.back(), "items");
      if (items != nullptr && items->IsArray()) {
        for (const auto& item : items->GetArray()) {
          found.emplace_back(string_at(item, {"metadata", "name"}), &item);
        }
      }
      read_ok = true;
    }
  }
  if (first.warnings.size() > warned_before) {
    const std::vector<std::string> warnings(first.warnings.begin() + static_cast<std::ptrdiff_t>(warned_before),
                                            first.warnings.end());
    share_warnings(warnings, std::vector<std::size_t>(members.begin() + 1, members.end()));
  }
  finish_pair_read(key, found, read_ok);
}

// Every pair of one kind: one LIST across namespaces selected by the ownership
// labels (or the one read_ahead started); the pairs it does not fully answer (or all,
// when it fails: e.g. no permission to list across namespaces) are then read on their
// own.
asio::awaitable<void> LiveObjects::read_kind(const std::vector<std::vector<std::size_t>>& kind_pairs) {
  ListOptions owned;
  owned.label_selector = label_selector(options_.ownership_labels);
  ApiResource resource = *members_[kind_pairs.front().front()].resource;
  std::optional<Result<json::Document>> ahead;
  if (options_.read_ahead) {
    ahead = co_await options_.read_ahead->take(resource);
  }
  std::string all_namespaces;
  Result<json::Document> listed = Error(ErrorKind::internal, "not listed");
  if (ahead) {
    listed = std::move(*ahead);
  } else {
    std::vector<std::string> warnings;
    DynamicClient warned = client_.collecting_warnings(warnings);
    listed = co_await warned.list(resource, all_namespaces, owned);
    for (const auto& members : kind_pairs) {
      share_warnings(warnings, members);
    }
  }
  std::vector<const std::vector<std::size_t>*> unanswered;
  if (!listed.ok()) {
    for (const auto& members : kind_pairs) {
      unanswered.push_back(&members);
    }
  } else {
    documents_.push_back(std::move(listed).value());
    // namespace -> name -> object
    std::map<std::string, std::map<std::string, const json::Value*>, std::less<>> by_namespace;
    if (const json::Value* items = json::find(documents_.back(), "items"); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        by_namespace[string_at(item, {"metadata", "namespace"})][string_at(item, {"metadata", "name"})] = &item;
      }
    }
    for (const auto& members : kind_pairs) {
      const std::string& ns = members_[members.front()].ref.ns;
      auto listed_here = by_namespace.find(ns);
      bool complete = listed_here != by_namespace.end();
      for (std::size_t i = 0; complete && i < members.size(); ++i) {
        complete = listed_here->second.count(members_[members[i]].ref.name) != 0;
      }
      if (!complete) {
        unanswered.push_back(&members);
        continue;
      }
      Found found(listed_here->second.begin(), listed_here->second.end());
      finish_pair_read(pair_key(resource, ns), found, true);
    }
  }
  for (const auto* members : unanswered) {
    co_await read_pair(*members);
  }
}

asio::awaitable<Result<const json::Value*>> LiveObjects::object(std::size_t index, const ApiResource& resource,
                                                                const ObjectRef& ref, bool fresh) {
  Member& member = members_.at(index);
  member.read_with_managed_fields = false;
  const std::string key = pair_key(resource, ref.ns);
  if (!fresh) {
    auto it = sets_.find(key);
    if (it != sets_.end()) {
      co_await read_finished(it->second);
    }
    // (after the wait: the pair's read may have found its namespace absent meanwhile)
    fresh = member.read_when_run;
    if (!fresh && it != sets_.end() && it->second.phase == LiveSet::Phase::read) {
      auto object = it->second.objects.find(ref.name);
      co_return object == it->second.objects.end() ? &absent() : object->second;
    }
  }
  member.read_when_run = false;
  // With its managedFields: an object read on its own is often one to take over (made
  // by someone else meanwhile), and then no second read is needed (take_over).
  auto got = co_await client_.get_with_managed_fields(resource, ref.ns, ref.name);
  member.read_with_managed_fields = got.ok();
  if (!got.ok() && got.error().kind == ErrorKind::not_found) {
    co_return &absent();
  }
  if (!got.ok()) {
    co_return got.error();
  }
  documents_.push_back(std::move(got).value());
  const json::Value* object = &documents_.back();
  sets_[key].objects[ref.name] = object;
  co_return object;
}

void LiveObjects::remember(const ApiResource& resource, const ObjectRef& ref, const json::Value& object) {
  json::Document copy(&pool_);
  copy.CopyFrom(object, pool_);
  remember(resource, ref, std::move(copy));
}

const json::Value& LiveObjects::remember(const ApiResource& resource, const ObjectRef& ref, json::Document&& object) {
  documents_.push_back(std::move(object));
  sets_[pair_key(resource, ref.ns)].objects[ref.name] = &documents_.back();
  return documents_.back();
}

}  // namespace kstate::states
