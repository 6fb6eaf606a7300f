// StatesReconciler: see states_reconciler.hpp. Every cycle works on copies of the
// cached states, because check_states() and the engine consume the vector they get.
#include "daemon/states_reconciler.hpp"

#include <malloc.h>
#include <rapidjson/reader.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/crd.hpp"
#include "daemon/file_security.hpp"
#include "daemon/write_gate.hpp"
#include "kstate/build_info.hpp"
#include "manifests/cluster_scope.hpp"
#include "states/reconcile.hpp"

namespace kstate::daemon {
namespace {

std::string normalized(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::absolute(path, ignored).lexically_normal().string();
}

// SHA-256 of the file's content; empty when it cannot be read (it is then reloaded,
// and the loader reports why).
std::string content_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {};
  }
  std::ostringstream content;
  content << in.rdbuf();
  return manifests::sha256_hex(content.str());
}

// A cycle's own copy of a cached state, its object parsed back from the compact JSON
// kept in the cache into `pool`, which the cycle shares among all its states: a
// document with its own allocator takes a 64 KiB chunk however small the object
// (1,000 objects: 66 MB allocated at the cycle's peak instead of 2 MB).
manifests::State copy_state(const manifests::State& state, json::Document object) {
  manifests::State copy;
  static_cast<manifests::StateSettings&>(copy) = state;
  copy.object = std::move(object);
  return copy;
}

manifests::State copy_state(const manifests::State& state, const std::string& object_json, json::Allocator& pool) {
  // json::parse (exact number conversion, depth limit), straight into the shared pool.
  auto parsed = json::parse(object_json, pool);
  return copy_state(state, parsed.ok() ? std::move(parsed).value() : json::Document(&pool));
}

// Reads what identifies an object (apiVersion, kind, metadata name, namespace and
// generateName) from its compact JSON, stopping after `metadata` once both apiVersion
// and kind were seen (manifests put them first): a file event's cycle runs that
// file's states alone, the others only count as declared (prune, references, the
// inventory), and parsing every cached object back whole at each file event was most
// of the cycle (1,000 objects: 1.2 MB of JSON for one changed file).
class IdentityReader : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, IdentityReader> {
 public:
  std::string api_version, kind, name, ns, generate_name;
  bool has_api_version = false, has_kind = false, has_name = false, has_namespace = false, has_generate_name = false;

  bool Default() { return true; }
  bool Key(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    (depth_ == 1 ? top_key_ : metadata_key_).assign(text, length);
    return true;
  }
  bool String(const char* text, rapidjson::SizeType length, bool /*copy*/) {
    if (depth_ == 1) {
      keep(top_key_, "apiVersion", api_version, has_api_version, text, length);
      keep(top_key_, "kind", kind, has_kind, text, length);
    } else if (depth_ == 2 && in_metadata_) {
      keep(metadata_key_, "name", name, has_name, text, length);
      keep(metadata_key_, "namespace", ns, has_namespace, text, length);
      keep(metadata_key_, "generateName", generate_name, has_generate_name, text, length);
    }
    return true;
  }
  bool StartObject() {
    ++depth_;
    in_metadata_ = in_metadata_ || (depth_ == 2 && top_key_ == "metadata");
    return true;
  }
  bool EndObject(rapidjson::SizeType /*members*/) {
    if (depth_-- == 2 && in_metadata_) {
      in_metadata_ = false;
      return !(has_api_version && has_kind);  // false: all found, stop reading
    }
    return true;
  }
  bool StartArray() {
    ++depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType /*elements*/) {
    --depth_;
    return true;
  }

 private:
  static void keep(const std::string& key, const char* wanted, std::string& into, bool& found, const char* text,
                   rapidjson::SizeType length) {
    if (key == wanted) {
      into.assign(text, length);
      found = true;
    }
  }
  int depth_ = 0;
  bool in_metadata_ = false;
  std::string top_key_, metadata_key_;
};

// The object of a state a file event's cycle does not run: its identity, or the whole
// object for a CRD (it tells the kinds it defines: a changed file's custom resources
// wait for it).
json::Document identity_object(const std::string& object_json, json::Allocator& pool) {
  IdentityReader identity;
  rapidjson::Reader reader;
  rapidjson::StringStream stream(object_json.c_str());
  reader.Parse(stream, identity);
  if (is_crd(make_gvk(identity.api_version, identity.kind))) {
    auto parsed = json::parse(object_json, pool);
    return parsed.ok() ? std::move(parsed).value() : json::Document(&pool);
  }
  json::Document object(&pool);
  object.SetObject();
  auto add = [&pool](json::Value& into, const char* key, bool present, const std::string& value) {
    if (present) {
      into.AddMember(rapidjson::StringRef(key),
                     json::Value(value.data(), static_cast<rapidjson::SizeType>(value.size()), pool), pool);
    }
  };
  add(object, "apiVersion", identity.has_api_version, identity.api_version);
  add(object, "kind", identity.has_kind, identity.kind);
  json::Value metadata(rapidjson::kObjectType);
  add(metadata, "name", identity.has_name, identity.name);
  add(metadata, "namespace", identity.has_namespace, identity.ns);
  add(metadata, "generateName", identity.has_generate_name, identity.generate_name);
  object.AddMember("metadata", metadata, pool);
  return object;
}

// Which states may be declared more than once across files (kind, namespace and name,
// so a few more than the loader's own check): a state a cycle does not run keeps its
// whole object when another state may duplicate it, because the duplicate check
// compares the two objects.
std::string duplicate_key(const json::Value& object) {
  std::string key(json::string_or(json::find(object, "kind"), ""));
  for (const char* field : {"namespace", "name"}) {
    key += '/';
    if (const json::Value* metadata = json::find(object, "metadata")) {
      key += json::string_or(json::find(*metadata, field), "");
    }
  }
  return key;
}

// Gives the heap's free pages back to the system. A cycle allocates and frees many
// JSON documents; without this, the pages they touched stay resident until reused.
void release_free_memory() {
  ::malloc_trim(0);
}

std::optional<std::string> environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

// Failures that mean "the API server is not there" rather than "a request was refused".
bool unreachable(const Error& error) {
  return error.kind == ErrorKind::connection || error.kind == ErrorKind::tls || error.kind == ErrorKind::timeout ||
         error.kind == ErrorKind::server_error;
}

}  // namespace

ReconcileSummary summarize(const states::RunReport& report) {
  ReconcileSummary summary;
  for (const auto& result : report.results) {
    ++summary.states;
    if (result.result.has_value() && !*result.result) {
      ++summary.failed;
      continue;
    }
    switch (result.change) {
      case states::Change::none:
        ++summary.unchanged;
        break;
      case states::Change::created:
        ++summary.created;
        break;
      case states::Change::adopted:
        ++summary.adopted;
        break;
      case states::Change::deleted:
      case states::Change::pruned:
        ++summary.deleted;
        break;
      case states::Change::updated:
      case states::Change::recreated:
      case states::Change::applied:
        ++summary.updated;
        break;
    }
  }
  // Objects that exist as declared after this run (run_cycle corrects it for cycles
  // that ran only some files' states).
  summary.managed_objects = report.applied.size();
  summary.prune_deferred = report.prune_deferred;
  summary.writer_conflict = report.writer_conflict;
  if (!report.errors.empty()) {
    summary.error = report.errors.front();
    if (report.errors.size() > 1) {
      summary.error += " (and " + std::to_string(report.errors.size() - 1) + " more)";
    }
  }
  return summary;
}

StatesReconciler::StatesReconciler(boost::asio::io_context& io, DaemonConfig config, DaemonMetrics& metrics,
                                   std::shared_ptr<const Clock> clock)
    : io_(io), config_(std::move(config)), metrics_(metrics), clock_(clock ? std::move(clock) : real_clock()) {}

StatesReconciler::~StatesReconciler() = default;

void StatesReconciler::set_memory_release(std::function<void()> release, std::chrono::milliseconds delay) {
  release_memory_ = std::move(release);
  release_delay_ = delay;
}

void StatesReconciler::release_memory_when_quiet() {
  if (!release_timer_) {
    release_timer_ = clock_->make_timer(io_.get_executor());
  }
  release_timer_->expires_after(release_delay_);  // cancels the wait of the previous cycle
  release_timer_->async_wait([release = release_memory_](const boost::system::error_code& error) {
    if (!error) {
      release ? release() : release_free_memory();
    }
  });
}

void StatesReconciler::prepare_for_cycle() {
  release_memory_when_quiet();
}

Status StatesReconciler::reconfigure(const DaemonConfig& config) {
  const bool reconnect = config.kubeconfig != config_.kubeconfig || config.context != config_.context ||
                         config.qps != config_.qps || config.burst != config_.burst ||
                         config.cache_dir != config_.cache_dir || config.connect_timeout != config_.connect_timeout ||
                         config.request_timeout != config_.request_timeout;
  const bool rescan = config.manifests_dir != config_.manifests_dir;
  const bool restart_drift =
      reconnect || config.watch_drift != config_.watch_drift || config.field_manager != config_.field_manager ||
      config.applyset_name != config_.applyset_name || config.applyset_namespace != config_.applyset_namespace;
  config_ = config;
  if (restart_drift) {
    drift_watcher_.reset();  // started again by the next cycle, with the new settings
  }
  if (reconnect) {
    count_requests();
    resolver_.reset();
    discovery_.reset();
    gated_client_.reset();
    gated_transport_.reset();
    client_.reset();
    api_answered_ = false;
    counted_ = TransportStats{};
    logged_reachability_ = Reachability::unknown;
  }
  if (rescan) {
    files_.clear();
  }
  return ok_status();
}

Status StatesReconciler::connect() {
  if (client_) {
    return ok_status();
  }
  KubeconfigSources sources;
  sources.kubeconfig_flag = config_.kubeconfig;
  sources.context = config_.context;
  sources.getenv = environment;
  TransportOptions transport;
  transport.qps = config_.qps;
  transport.burst = config_.burst;
  transport.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.connect_timeout);
  transport.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.request_timeout);
  transport.on_server_status = [this](const ServerStatus& status) { log_server_status(status); };
  auto client = make_client(io_.get_executor(), sources, transport);
  if (!client) {
    return client.error();
  }
  client_ = std::move(client.value());
  // The gate asks may_write_ at each request, so a gate set later still applies.
  gated_transport_ =
      std::make_unique<WriteGateTransport>(*client_->transport, [this] { return !may_write_ || may_write_(); });
  gated_client_ = std::make_unique<DynamicClient>(*gated_transport_);
  discovery::DiscoveryOptions discovery_options;
  discovery_options.cache_dir = config_.cache_dir;
  discovery_ =
      std::make_unique<discovery::DiscoveryClient>(*client_->transport, client_->config.server, discovery_options);
  resolver_ = std::make_unique<states::DiscoveryResolver>(*discovery_);
  counted_ = TransportStats{};
  return ok_status();
}

void StatesReconciler::log_server_status(const ServerStatus& status) {
  const Reachability before = std::exchange(logged_reachability_, status.reachability);
  const std::string& server = client_ ? client_->config.server : config_.kubeconfig;
  switch (status.reachability) {
    case Reachability::not_answering:
      spdlog::warn("API server {} is not answering: {}", server, status.reason);
      break;
    case Reachability::down:
      spdlog::warn("API server {} is unreachable: {}; requests fail at once until it answers again", server,
                   status.reason);
      break;
    case Reachability::answering:
      if (before == Reachability::not_answering || before == Reachability::down) {
        spdlog::info("API server {} answers again", server);
      }
      break;
    case Reachability::unknown:
      break;
  }
}

std::string StatesReconciler::api_server_problem() const {
  if (!client_) {
    return {};
  }
  const ServerStatus status = client_->transport->server_status();
  if (status.reachability != Reachability::not_answering && status.reachability != Reachability::down) {
    return {};
  }
  return client_->config.server + " " + to_string(status.reachability) + ": " + status.reason;
}

void StatesReconciler::count_requests() {
  if (!client_) {
    return;
  }
  TransportStats now = client_->transport->stats();
  for (const auto& [verb_code, count] : now.requests) {
    const auto before = counted_.requests.find(verb_code);
    const std::uint64_t delta = count - (before == counted_.requests.end() ? 0 : before->second);
    if (delta == 0) {
      continue;
    }
    const auto space = verb_code.find(' ');
    metrics_.api_requests.add({verb_code.substr(0, space), verb_code.substr(space + 1)}, static_cast<double>(delta));
  }
  for (const auto& [verb_failure, count] : now.failures) {
    const auto before = counted_.failures.find(verb_failure);
    const std::uint64_t delta = count - (before == counted_.failures.end() ? 0 : before->second);
    if (delta == 0) {
      continue;
    }
    const auto space = verb_failure.find(' ');
    metrics_.api_request_failures.add({verb_failure.substr(0, space), verb_failure.substr(space + 1)},
                                      static_cast<double>(delta));
  }
  if (now.retries > counted_.retries) {
    metrics_.api_retries.add({}, static_cast<double>(now.retries - counted_.retries));
  }
  counted_ = std::move(now);
}

bool StatesReconciler::refresh_file(const std::string& path) {
  return refresh_file(path, Listed{});
}

bool StatesReconciler::refresh_file(const std::string& path, Listed listed) {
  auto cached = files_.find(path);
  std::optional<std::string> refusal;
  if (config_.check_manifest_permissions) {
    refusal = manifest_permission_problem(path, normalized(config_.manifests_dir), ::geteuid(), folder_verdicts_,
                                          listed.file != nullptr ? &listed.file->link : nullptr);
  }
  const bool refused = refusal.has_value();
  if (cached != files_.end() && !refused && content_unchanged(cached->second, listed)) {
    return false;
  }
  if (!refused) {
    // About to read it: a file still being written (or, in a full cycle, changed a
    // moment ago) would give half a manifest. What was read before stays; prune keeps
    // the objects it declared (sources_held); it is read again later.
    const ManifestSettle settle = classify_manifest(observe_manifest(path), clock_->wall_now(), read_window_);
    if (settle == ManifestSettle::being_written || settle == ManifestSettle::just_changed) {
      unsettled_[path] = settle;
      spdlog::info("{}: {}", path, to_string(settle));
      if (cached == files_.end()) {
        LoadedFile unread;
        unread.contents[path] = {};  // (always read again)
        files_[path] = std::move(unread);
      }
      return false;
    }
  }
  LoadedFile entry;
  if (refused) {
    // Whoever can write the file could act as kstate: refuse it (and so hold prune back).
    manifests::LoadError problem;
    problem.position.file = path;
    problem.message = *refusal;
    spdlog::error("{}", problem.to_string());
    entry.contents[path] = {};  // looked at again on every event and resync, so chmod go-w is enough
    entry.errors.push_back(std::move(problem));
    entry.failed_files.insert(path);
    files_[path] = std::move(entry);
    return true;
  }
  manifests::LoadOptions options;
  options.check_references = false;
  options.quotable_paths = {config_.manifests_dir};
  options.variables = variables_;
  // Taken before the loader reads: a write during or after its read has a later ctime,
  // so the fingerprints below (taken after it) are not trusted (see file_fingerprint.hpp).
  const auto read_at = clock_->wall_now();
  manifests::LoadResult loaded = manifests::load_file(path, options);
  for (auto& [file, hash] : loaded.file_hashes) {
    files_read_.insert(file);
    ReadContent& content = entry.contents[file];
    content.sha256 = std::move(hash);
    if (auto fingerprint = fingerprint_of(file); fingerprint && !content.sha256.empty()) {
      content.read_as = ReadFingerprint{*fingerprint, read_at};
    }
  }
  if (entry.contents.empty()) {
    entry.contents[path] = {};  // unreadable: always retried
  }
  entry.states = std::move(loaded.states);
  // The objects are kept as compact JSON text: a RapidJSON document holds a 64 KiB pool
  // however small the object (~41 kB resident per object before, see bench/RESULTS.md).
  entry.objects.reserve(entry.states.size());
  for (auto& state : entry.states) {
    entry.objects.push_back(json::dump(state.object));
    state.object = json::Document();
  }
  entry.errors = std::move(loaded.errors);
  entry.failed_files = std::move(loaded.failed_files);
  for (const auto& warning : loaded.warnings) {
    spdlog::warn("{}", warning.to_string());
  }
  for (const auto& error : entry.errors) {
    spdlog::error("{}", error.to_string());
  }
  files_[path] = std::move(entry);
  return true;
}

bool StatesReconciler::content_unchanged(LoadedFile& entry, Listed listed) {
  for (auto& [file, content] : entry.contents) {
    // The walk's stat of the listed file was taken after `listed.at`: an earlier time
    // than the stat's own, which can only make the racy-window rule stricter.
    const bool walked = listed.file != nullptr && file == listed.file->path;
    const auto stat_at = walked ? listed.at : clock_->wall_now();
    const std::optional<FileFingerprint> current =
        walked ? std::optional<FileFingerprint>(fingerprint_from(listed.file->target)) : fingerprint_of(file);
    if (!current) {
      return false;
    }
    if (content.read_as && known_unchanged(*content.read_as, *current)) {
      continue;
    }
    files_read_.insert(file);
    const std::string hash = content_hash(file);
    if (hash.empty() || hash != content.sha256) {
      return false;
    }
    // Same content: this stat (taken before the read) may prove it next time.
    content.read_as = ReadFingerprint{*current, stat_at};
  }
  return true;
}

void StatesReconciler::refresh_variables() {
  manifests::VariableMap variables;
  variable_errors_.clear();
  for (const auto& file : config_.vars_from) {
    for (const auto& error : manifests::load_variables_file(file, variables)) {
      spdlog::error("{}", error.to_string());
      variable_errors_.push_back(error.to_string());
    }
  }
  for (const auto& [name, value] : config_.vars) {
    variables[name] = value;
  }
  if (variables != variables_) {
    variables_ = std::move(variables);
    files_.clear();  // their objects were substituted with other values
  }
}

std::chrono::system_clock::time_point StatesReconciler::last_folder_change(
    const std::vector<manifests::ListedFile>& listed, const std::string& dir, bool with_events) const {
  const auto time_of = [](const struct stat& info) {
    const auto at = [](const struct timespec& spec) {
      return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(spec.tv_sec) + std::chrono::nanoseconds(spec.tv_nsec)));
    };
    return std::max(at(info.st_mtim), at(info.st_ctim));
  };
  auto newest = with_events ? last_file_event_ : std::chrono::system_clock::time_point{};
  std::set<std::string> folders{dir};
  for (const auto& file : listed) {
    if (file.stated) {
      newest = std::max({newest, time_of(file.link), time_of(file.target)});
    }
    // (A file removed or renamed shows in its folder's times.)
    for (auto folder = std::filesystem::path(file.path).parent_path();
         folder.string().size() > dir.size() && folders.insert(folder.string()).second; folder = folder.parent_path()) {
    }
  }
  for (const auto& folder : folders) {
    struct stat info {};
    if (::stat(folder.c_str(), &info) == 0) {
      newest = std::max(newest, time_of(info));
    }
  }
  return newest;
}

std::map<std::string, std::string> StatesReconciler::sources_held(const std::set<std::string>& sources) {
  const auto known = [this](const std::string& source) -> std::optional<ManifestSettle> {
    auto found = unsettled_.find(source);
    return found != unsettled_.end() ? std::optional<ManifestSettle>(found->second) : std::nullopt;
  };
  const std::map<std::string, ManifestSettle> held = held_manifests(sources, clock_->wall_now(), settle_window_, known);
  for (const auto& [source, settle] : held) {
    if (settle == ManifestSettle::empty || settle == ManifestSettle::not_a_file) {
      spdlog::warn("{}: {}", source, to_string(settle));
    }
    // (A file judged unsettled when it was read is counted with the others.)
    sources_settling_ += settle == ManifestSettle::just_changed && unsettled_.count(source) == 0 ? 1 : 0;
  }
  return reasons(held);
}

boost::asio::awaitable<ReconcileSummary> StatesReconciler::full_reconcile(FullPrune prune) {
  folder_verdicts_.clear();
  files_read_.clear();
  unsettled_.clear();
  sources_settling_ = 0;
  read_window_ = settle_window_;
  refresh_variables();
  std::vector<manifests::LoadError> list_errors;
  const std::string dir = normalized(config_.manifests_dir);
  bool quiet = true;
  {
    // (A block: the listing, ~300 bytes a file, is freed before the cycle runs and the
    // heap is trimmed.)
    std::chrono::system_clock::time_point listed_at;
    std::vector<manifests::ListedFile> listed;
    // A folder changed a moment ago (a start-up during a `git pull`, a resync right
    // after an edit) is given the settle window before it is read, twice at most: half
    // a write read now would be applied, and would hide objects from prune.
    for (int waited = 0;; ++waited) {
      list_errors.clear();
      listed_at = clock_->wall_now();
      // One lstat per file (and a stat per symbolic link), which the permission check
      // and the fingerprint use too: a resync of 1,000 files made 3,000 stat calls before.
      listed = manifests::list_manifest_files_with_stat({dir}, list_errors);
      const auto age = listed_at - last_folder_change(listed, dir, false);
      if (age >= settle_window_ || waited == 2 || stopping_) {
        break;
      }
      const auto wait = std::min(settle_window_ - age, settle_window_);  // (a change "in the future" too)
      spdlog::debug("the manifests changed {:.0f} ms ago: reading them {:.0f} ms later",
                    std::chrono::duration<double, std::milli>(age).count(),
                    std::chrono::duration<double, std::milli>(wait).count());
      auto timer = clock_->make_timer(io_.get_executor());
      timer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait));
      co_await timer->wait();
    }
    // The walk joins plain names to the normalized folder: its paths are normalized.
    std::map<std::string, const manifests::ListedFile*> present;
    for (const auto& file : listed) {
      present.emplace(file.path, &file);
    }
    for (auto it = files_.begin(); it != files_.end();) {
      it = present.count(it->first) != 0 ? std::next(it) : files_.erase(it);
    }
    for (const auto& [file, stats] : present) {
      refresh_file(file, Listed{stats->stated ? stats : nullptr, listed_at});
    }
    // prune-delay counts from the last change in the folder, for a resync or a start-up
    // as for a file event: an object cut from one file is not deleted before the
    // write that pastes it into another has had its time.
    quiet = prune == FullPrune::now || listed_at - last_folder_change(listed, dir, true) >= config_.prune_delay;
    spdlog::debug("{} manifest files, {} read (the others' stat proved them unchanged)", present.size(),
                  files_read_.size());
  }
  manifests_listed_ = list_errors.empty();
  list_errors_.clear();
  for (const auto& error : list_errors) {
    spdlog::warn("{}", error.to_string());
    list_errors_.push_back(error.to_string());
  }
  ReconcileSummary summary = co_await run_cycle(std::nullopt, true, !quiet);
  summary.files_read = files_read_.size();
  release_memory_when_quiet();
  co_return summary;
}

boost::asio::awaitable<ReconcileSummary> StatesReconciler::reconcile_files(std::vector<std::string> changed,
                                                                           std::vector<std::string> removed) {
  folder_verdicts_.clear();
  files_read_.clear();
  unsettled_.clear();
  sources_settling_ = 0;
  read_window_ = {};  // the watcher waited for the writes to end already
  last_file_event_ = clock_->wall_now();
  std::set<std::string> to_run;
  bool any_removed = false;
  for (const auto& raw : removed) {
    const std::string path = normalized(raw);
    if (files_.erase(path) != 0) {
      any_removed = true;
      spdlog::info("manifest removed: {}", path);
    }
    // A removed included file: reload the files that include it (they now fail).
    for (auto& [file, entry] : files_) {
      if (entry.contents.count(path) != 0 && refresh_file(file)) {
        to_run.insert(file);
      }
    }
  }
  std::vector<std::string> changed_paths;
  changed_paths.reserve(changed.size());
  for (const auto& raw : changed) {
    changed_paths.push_back(normalized(raw));
  }
  // Whether a changed path is a manifest file is the walk's answer (hidden folders,
  // extensions, symlinks, two links to one file). A file the last walk listed that is
  // still a regular file still is one: the tree's shape changes only through paths
  // created, moved or removed, which are new here, come as removals, or make the
  // watcher ask for a full rescan. So the walk (a stat per file of the whole tree,
  // most of a one-file change's time with 1,000 files) runs only for a path not seen yet.
  const bool all_known = std::all_of(changed_paths.begin(), changed_paths.end(), [this](const std::string& path) {
    std::error_code error;
    return files_.count(path) != 0 && std::filesystem::is_regular_file(path, error);
  });
  std::set<std::string> manifest_files;
  if (all_known) {
    manifest_files.insert(changed_paths.begin(), changed_paths.end());
  } else {
    std::vector<manifests::LoadError> list_errors;
    for (auto& file : manifests::list_manifest_files({normalized(config_.manifests_dir)}, list_errors)) {
      manifest_files.insert(normalized(file));
    }
  }
  for (const auto& path : changed_paths) {
    if (manifest_files.count(path) != 0 && refresh_file(path)) {
      to_run.insert(path);
    }
    for (auto& [file, entry] : files_) {
      if (file != path && entry.contents.count(path) != 0 && refresh_file(file)) {
        to_run.insert(file);
      }
    }
  }
  if (to_run.empty() && !any_removed) {
    ReconcileSummary nothing;
    nothing.files_read = files_read_.size();
    spdlog::debug("file events without content changes: nothing to do");
    co_return nothing;
  }
  // States carry the file they were written in: a file's includes run with it.
  std::set<std::string> only_files;
  for (const auto& file : to_run) {
    only_files.insert(file);
    if (auto entry = files_.find(file); entry != files_.end()) {
      for (const auto& [included, content] : entry->second.contents) {
        only_files.insert(included);
      }
    }
  }
  ReconcileSummary summary = co_await run_cycle(std::move(only_files), false);
  summary.files_read = files_read_.size();
  release_memory_when_quiet();
  co_return summary;
}

boost::asio::awaitable<ReconcileSummary> StatesReconciler::run_cycle(std::optional<std::set<std::string>> only_files,
                                                                     bool probe, bool defer_prune) {
  if (stopping_) {
    co_return ReconcileSummary();  // shutting down: start nothing new
  }
  if (auto stopped = co_await check_cluster(probe)) {
    co_return *stopped;
  }
  // Declared before `cycle`, so it outlives every document allocated from it.
  json::Allocator pool;
  CycleStates cycle = cycle_states(only_files, pool);
  const bool only_files_ran = only_files.has_value();
  states::ReconcileOptions options = cycle_options(std::move(only_files), defer_prune, cycle.failed_files);
  states::RunReport report = co_await states::reconcile(*gated_client_, *resolver_, cycle.states, options);
  count_requests();
  follow_drift(report.applied, !only_files_ran);
  if (options.prune && !options.defer_prune) {
    kept_for_cause_ = std::move(report.kept_for_cause);  // (empty when prune was held back)
  }
  co_return co_await conclude_cycle(std::move(report), cycle.load_errors, only_files_ran);
}

bool StatesReconciler::logs_diffs() const {
  return config_.state_output == states::StateOutput::changes || config_.state_output == states::StateOutput::full;
}

boost::asio::awaitable<std::optional<ReconcileSummary>> StatesReconciler::check_cluster(bool probe) {
  if (auto connected = connect(); !connected) {
    // No usable kubeconfig yet (kubeadm writes admin.conf late): retried like an unreachable server.
    ReconcileSummary summary;
    summary.api_reachable = false;
    summary.error = connected.error().describe();
    co_return summary;
  }
  if (probe && !api_answered_) {
    // At start-up, or after the API server was found unreachable: one cheap request
    // tells "API server down" from "states failed" before the states send theirs.
    // Once it answers, resyncs skip it (a resync costs one read per (kind, namespace)
    // and the ApplySet parent); a failed cycle is classified afterwards instead.
    auto answer = co_await probe_version(true);
    if (!answer && unreachable(answer.error())) {
      count_requests();
      ReconcileSummary summary;
      summary.api_reachable = false;
      summary.error = answer.error().describe();
      co_return summary;
    }
  }
  if (probe) {
    // Every full reconcile (start-up, resync, SIGHUP, retry) asks the server whether its
    // discovery changed: two requests answered 304 when it did not, and a CRD's new
    // plural, scope or versions are seen without a restart. Loaded from the disk cache
    // at start-up, it is revalidated at once too: the cache may be hours old.
    const bool known_before = discovery_->loaded();
    Status loaded = co_await discovery_->revalidate();
    if (loaded.ok() && discovery_->stats().from_cache && !discovery_->stats().revalidated) {
      loaded = co_await discovery_->revalidate();
    }
    (discovery_->stats().from_cache ? metrics_.discovery_cache_hits : metrics_.discovery_cache_misses).add({});
    if (!loaded && known_before && !unreachable(loaded.error())) {
      // What was known still resolves the kinds; prune asks again before it relies on it.
      spdlog::warn("discovery could not be revalidated, using what it said before: {}", loaded.error().describe());
    } else if (!loaded) {
      count_requests();
      ReconcileSummary summary;
      summary.api_reachable = !unreachable(loaded.error());
      api_answered_ = api_answered_ && summary.api_reachable;
      summary.error = "discovery: " + loaded.error().describe();
      co_return summary;
    }
  }
  co_return std::nullopt;
}

StatesReconciler::CycleStates StatesReconciler::cycle_states(const std::optional<std::set<std::string>>& only_files,
                                                             json::Allocator& pool) {
  CycleStates cycle;
  std::vector<manifests::State>& states = cycle.states;
  std::set<std::string>& failed_files = cycle.failed_files;
  std::vector<std::string>& load_errors = cycle.load_errors;
  load_errors = list_errors_;
  load_errors.insert(load_errors.end(), variable_errors_.begin(), variable_errors_.end());
  // A file event's cycle: the states it does not run get their identity only, unless
  // another state may duplicate them (second pass).
  const auto runs = [&only_files](const manifests::State& state) {
    return !only_files || only_files->count(state.source.file) > 0;
  };
  struct IdentityOnly {
    std::size_t index;  // in `states`
    const LoadedFile* entry;
    std::size_t in_entry;
  };
  std::vector<IdentityOnly> identity_only;
  std::unordered_map<std::string, int> declared_keys;
  for (const auto& [file, entry] : files_) {
    for (std::size_t i = 0; i < entry.states.size(); ++i) {
      const bool whole = runs(entry.states[i]);
      states.push_back(whole ? copy_state(entry.states[i], entry.objects[i], pool)
                             : copy_state(entry.states[i], identity_object(entry.objects[i], pool)));
      if (only_files) {
        ++declared_keys[duplicate_key(states.back().object)];
        if (!whole) {
          identity_only.push_back({states.size() - 1, &entry, i});
        }
      }
    }
    failed_files.insert(entry.failed_files.begin(), entry.failed_files.end());
    for (const auto& error : entry.errors) {
      load_errors.push_back(error.to_string());
    }
  }
  for (const IdentityOnly& state : identity_only) {
    if (declared_keys[duplicate_key(states[state.index].object)] > 1) {
      states[state.index] = copy_state(state.entry->states[state.in_entry], state.entry->objects[state.in_entry], pool);
    }
  }
  // Which kinds are cluster-scoped, as the server says (custom resources of a CRD in
  // another file or only on the server): before duplicates are compared.
  const manifests::NamespacedLookup known_scope = [this](std::string_view group,
                                                         std::string_view kind) -> std::optional<bool> {
    const ApiResource* resource = discovery_->loaded() ? discovery_->mapper().find_preferred(group, kind) : nullptr;
    return resource != nullptr ? std::optional<bool>(resource->namespaced) : std::nullopt;
  };
  std::set<std::string> warned;
  for (const auto& warning : manifests::drop_cluster_scoped_namespaces(states, known_scope)) {
    std::string text = warning.to_string();
    if (namespace_warnings_.count(text) == 0) {
      spdlog::warn("{}", text);  // once, not at every cycle
    }
    warned.insert(std::move(text));
  }
  namespace_warnings_ = std::move(warned);
  for (const auto& error : manifests::check_states(states, failed_files)) {
    spdlog::error("{}", error.to_string());
    load_errors.push_back(error.to_string());
  }
  return cycle;
}

states::ReconcileOptions StatesReconciler::cycle_options(std::optional<std::set<std::string>> only_files,
                                                         bool defer_prune, const std::set<std::string>& failed_files) {
  states::ReconcileOptions options;
  options.engine.concurrency = config_.concurrency;
  options.engine.field_manager = config_.field_manager;
  options.engine.default_namespace = client_->config.default_namespace;
  options.parent = states::ApplySetParent{config_.applyset_name, config_.applyset_namespace};
  options.engine.ownership_labels = states::ownership_labels(options.parent);
  options.writer = states::Writer{states::Writer::Mode::daemon, host_name_, normalized(config_.manifests_dir)};
  options.leader_elected = config_.leader_election.enabled;
  options.engine.adopt = config_.adopt;
  options.engine.adopt_objects = config_.adopt_objects;
  options.engine.ignore_fields = config_.ignore_fields;
  // summarize() counts changes; a diff is kept only where the log shows it.
  options.engine.record_diffs = logs_diffs();
  options.prune = config_.prune;
  options.allow_empty_prune = config_.allow_empty_prune;
  options.load_failed = !failed_files.empty() || !manifests_listed_ || !variable_errors_.empty();
  options.manifests_empty = files_.empty();
  options.kstate_version = std::string(build_info::version);
  // Only the changed files' states run; every state still counts as declared for prune.
  const bool only_files_ran = only_files.has_value();
  options.only_files = std::move(only_files);
  options.only_states = std::exchange(only_states_, std::nullopt);
  // A file change's reconcile applies at once and leaves pruning to the full reconcile
  // the runner starts once the folder is quiet (DaemonConfig::prune_delay).
  options.defer_prune = (only_files_ran && config_.prune_delay > Duration::zero()) || defer_prune;
  if (options.defer_prune) {
    options.kept_before = kept_for_cause_;
  }
  options.check_sources = [this](const std::set<std::string>& sources) { return sources_held(sources); };
  return options;
}

boost::asio::awaitable<ReconcileSummary> StatesReconciler::conclude_cycle(states::RunReport report,
                                                                          const std::vector<std::string>& load_errors,
                                                                          bool only_files_ran) {
  for (const auto& note : report.notes) {
    spdlog::info("{}", note);
  }
  if (logs_diffs()) {
    // (the engine logged each change's line; these follow it)
    for (const auto& result : report.results) {
      if (std::string_view diff = json::string_or(json::find(result.changes, "diff"), ""); !diff.empty()) {
        if (diff.ends_with('\n')) {
          diff.remove_suffix(1);
        }
        spdlog::info("diff of {} ({}):\n{}", result.name, result.source.to_string(), diff);
      }
    }
  }
  for (const auto& error : report.errors) {
    spdlog::error("{}", error);
  }
  report.errors.insert(report.errors.begin(), load_errors.begin(), load_errors.end());
  ReconcileSummary summary = summarize(report);
  summary.files_settling = sources_settling_;
  for (const auto& [file, settle] : unsettled_) {
    summary.files_settling += settle == ManifestSettle::just_changed ? 1 : 0;
  }
  if (only_files_ran) {
    // Only some states ran: the others' objects are still managed.
    const std::size_t gained = summary.created + summary.adopted;
    summary.managed_objects =
        managed_objects_ + gained >= summary.deleted ? managed_objects_ + gained - summary.deleted : 0;
  }
  managed_objects_ = summary.managed_objects;
  if (report.discovery_failed && summary.error.empty()) {
    summary.error = "discovery failed";
  }
  api_answered_ = true;
  if (!summary.succeeded()) {
    // Failed states may mean the API server went away: ask it, so that /readyz says so.
    // Once: the cycle's own requests were already retried.
    auto answer = co_await probe_version(false);
    count_requests();
    if (!answer && unreachable(answer.error())) {
      summary.api_reachable = false;
      api_answered_ = false;
      if (summary.error.empty()) {
        summary.error = answer.error().describe();
      }
    }
  }
  co_return summary;
}

boost::asio::awaitable<Result<Response>> StatesReconciler::probe_version(bool retry) {
  Request version;
  version.retry = retry;
  version.verb = "GET";
  version.path = "/version";
  version.idempotent = true;
  co_return co_await client_->transport->send(std::move(version));
}

Result<std::unique_ptr<AsyncLeaseStore>> StatesReconciler::lease_store(const LeaderElectionConfig& config) {
  // Asks for the client at each call: it is built lazily and rebuilt when a reload
  // changes how the cluster is reached.
  auto client = [this]() -> Result<DynamicClient*> {
    if (auto connected = connect(); !connected) {
      return connected.error();
    }
    return client_->dynamic.get();
  };
  return std::unique_ptr<AsyncLeaseStore>(
      std::make_unique<KubernetesLeaseStore>(client, config.lease_name, config.lease_namespace));
}

Result<std::unique_ptr<Reconciler>> make_states_reconciler(boost::asio::io_context& io, const DaemonConfig& config,
                                                           DaemonMetrics& metrics) {
  return std::unique_ptr<Reconciler>(std::make_unique<StatesReconciler>(io, config, metrics));
}

}  // namespace kstate::daemon
