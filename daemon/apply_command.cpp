// `kstate apply` and `kstate test`: one reconcile of the given files and
// directories (test: every write dryRun=All), then a report in the chosen format and
// the exit code of DESIGN.md. Load errors are reported with file:line and never stop
// the other files' states from running. As with kubectl, `-` reads YAML documents from
// stdin (named <stdin> in messages), and namespaced objects that name no namespace
// go to -n's, else to the kubeconfig context's.
#include "daemon/apply_command.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>

#include "core/dynamic_client.hpp"
#include "daemon/client_options.hpp"
#include "daemon/logging.hpp"
#include "daemon/manifest_settle.hpp"
#include "daemon/short_run_heap.hpp"
#include "kstate/build_info.hpp"
#include "manifests/cluster_scope.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/reconcile.hpp"
#include "states/report.hpp"

namespace kstate::daemon {
namespace {

constexpr const char* stdin_name = "<stdin>";

// Stdin whole, up to the size limit of a manifest file.
manifests::LoadResult load_stdin(const manifests::LoadOptions& options) {
  std::string text;
  char buffer[65536];
  while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(std::cin.gcount()));
    if (text.size() > options.limits.max_file_bytes) {
      manifests::LoadResult refused;
      refused.errors.push_back({{stdin_name, 0, 0},
                                "",
                                "larger than the limit of " + std::to_string(options.limits.max_file_bytes >> 20) +
                                    " MiB for a manifest file; not loaded"});
      refused.failed_files.insert(stdin_name);
      refused.files.push_back(stdin_name);
      return refused;
    }
  }
  return manifests::load_text(text, stdin_name, options);
}

// `from`'s states, errors and files after `into`'s.
void append(manifests::LoadResult& into, manifests::LoadResult from) {
  std::move(from.states.begin(), from.states.end(), std::back_inserter(into.states));
  std::move(from.errors.begin(), from.errors.end(), std::back_inserter(into.errors));
  into.failed_files.merge(from.failed_files);
  std::move(from.files.begin(), from.files.end(), std::back_inserter(into.files));
  into.file_hashes.merge(from.file_hashes);
  into.included_by.merge(from.included_by);
}

// With -n given, an object that names another namespace is an error, as with kubectl
// ("the namespace from the provided object does not match"): it is left out.
void check_namespace_flag(manifests::LoadResult& loaded, const std::string& namespace_name) {
  std::vector<manifests::State> kept;
  kept.reserve(loaded.states.size());
  for (auto& state : loaded.states) {
    const json::Value* given = json::find_path(state.object, {"metadata", "namespace"});
    if (given != nullptr && given->IsString() && given->GetString() != namespace_name) {
      loaded.errors.push_back({state.source, state.id,
                               "the object's namespace \"" + std::string(given->GetString()) +
                                   "\" does not match -n/--namespace \"" + namespace_name +
                                   "\" (as kubectl: leave -n out, or give -n " + given->GetString() + ")"});
      loaded.failed_files.insert(state.source.file);
      continue;
    }
    kept.push_back(std::move(state));
  }
  loaded.states = std::move(kept);
}

void write_report(std::ostream& out, const cli::CommonOptions& common, const states::RunReport& report) {
  if (common.output == "json") {
    states::write_json(out, report);
  } else if (common.output == "junit") {
    states::write_junit(out, report);
  } else {
    states::TextOptions text;
    text.color = &out == &std::cout && states::want_color(STDOUT_FILENO);
    text.state_output = states::parse_state_output(common.state_output).value_or(states::StateOutput::concise);
    states::write_text(out, report, text);
  }
}

// The writer's folder (states/writer.hpp): the paths given, made absolute.
std::string absolute_paths(const std::vector<std::string>& paths) {
  std::string joined;
  for (const auto& path : paths) {
    std::error_code ignored;
    joined += (joined.empty() ? "" : ",") + std::filesystem::absolute(path, ignored).lexically_normal().string();
  }
  return joined;
}

}  // namespace

int run_apply_command(const cli::Invocation& invocation, std::ostream& out, std::ostream& err, bool test_mode,
                      bool exit_when_reported) {
  const auto& common = invocation.common;
  const char* name = test_mode ? "kstate test" : "kstate apply";
  if (auto logging = setup_logging(common.log_level, LogFormat::text); !logging.ok()) {
    err << name << ": " << logging.error().message << "\n";
    return cli::exit_failed;
  }
  if (invocation.paths.empty()) {
    err << name << ": no manifest file or directory given (usage: " << name << " PATH...)\n";
    return cli::exit_failed;
  }

  // Where the time of a run goes, at debug level (-v debug): what bench/RESULTS.md's
  // analysis of a cold apply reads.
  const auto command_started = std::chrono::steady_clock::now();
  const auto since_start = [&command_started] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - command_started).count();
  };

  // The manifests start loading on the other CPUs while this thread connects to the API
  // server and reads the ApplySet parent (neither needs the other), then it helps.
  tune_heap_for_short_run();
  const int other_cpus = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  const std::function<void()> reserve_heap = [] { reserve_thread_heap(std::size_t{16} << 20, std::size_t{4} << 20); };
  std::vector<std::string> paths;
  bool read_stdin = false;
  for (const auto& path : invocation.paths) {
    if (path == "-") {
      read_stdin = true;  // kubectl's `-f -`
    } else {
      paths.push_back(path);
    }
  }
  // The cross-state checks run once discovery is known (which kinds are cluster-scoped
  // decides which states name one object: manifests/cluster_scope.hpp), over the
  // files' and stdin's states together.
  manifests::LoadOptions load_options;
  load_options.check_references = false;
  manifests::BackgroundLoad loading(paths, load_options, std::max(other_cpus, 1), reserve_heap);
  // With LISTs started ahead (begin_cycle), this thread runs the io_context a moment
  // between the files it loads and while it waits for the other threads: those LISTs
  // are sent and answered during the load instead of after it.
  boost::asio::io_context io;
  auto finish_loading = [&](bool requests_in_flight) {
    std::function<bool()> run_io_until_woken;
    std::function<void()> wake_io;
    if (requests_in_flight) {
      io.restart();
      run_io_until_woken = [&io] {
        io.run_one();
        return !io.stopped();  // stopped: out of work, every request answered
      };
      wake_io = [&io] { boost::asio::post(io, [] {}); };
    }
    manifests::LoadResult loaded = loading.finish(run_io_until_woken, wake_io);
    if (read_stdin) {
      append(loaded, load_stdin(load_options));
    }
    if (!common.namespace_name.empty()) {
      check_namespace_flag(loaded, common.namespace_name);
    }
    return loaded;
  };

  auto client = make_client(io.get_executor(), kubeconfig_sources(common), transport_options(common));
  if (!client.ok()) {
    finish_loading(false);
    err << name << ": " << client.error().message << "\n";
    return cli::exit_failed;
  }

  discovery::DiscoveryOptions discovery_options;
  discovery_options.cache_dir = common.cache_dir;
  discovery::DiscoveryClient discovery(*(*client)->transport, (*client)->config.server, discovery_options);
  states::DiscoveryResolver resolver(discovery);

  states::ReconcileOptions options;
  options.engine.test_mode = test_mode;
  options.engine.concurrency = common.concurrency;
  options.engine.field_manager = common.field_manager;
  options.engine.prepare_ahead = true;
  // As kubectl: -n, else the kubeconfig context's namespace, else "default".
  options.engine.default_namespace =
      common.namespace_name.empty() ? (*client)->config.default_namespace : common.namespace_name;
  if (common.applyset_name.empty()) {
    options.parent.reset();  // no membership recorded, nothing pruned (cli.cpp refuses --prune)
  } else {
    options.parent = states::ApplySetParent{common.applyset_name, common.applyset_namespace};
    options.writer = states::Writer{states::Writer::Mode::apply, states::local_host_name(), absolute_paths(paths)};
  }
  // Every object kstate writes for a set carries managed-by and the ApplySet
  // membership label (KEP-3659) of the parent, so `kubectl --applyset` and prune
  // recognise it.
  options.engine.ownership_labels = states::ownership_labels(options.parent);
  options.engine.adopt = common.adopt;
  options.engine.adopt_objects = common.adopt_objects;
  options.prune = common.prune.value_or(false);  // `kstate apply` prunes only when asked
  options.allow_empty_prune = common.allow_empty_prune;
  options.kstate_version = build_info::version;
  options.read_ahead = true;
  // A 0-byte file, a FIFO or a file open for writing where a manifest was keeps its
  // objects (no changed-recently window: a CI job has just checked its files out).
  options.check_sources = [](const std::set<std::string>& manifest_files) {
    auto held =
        held_manifests(manifest_files, std::chrono::system_clock::now(), std::chrono::system_clock::duration::zero());
    for (const auto& [source, settle] : held) {
      spdlog::warn("{}: {}", source, to_string(settle));
    }
    return reasons(held);
  };

  states::CycleStart start = run_until_complete(io, states::begin_cycle(*(*client)->dynamic, resolver, options));
  if (!options.parent) {
    // No ApplySet parent to read: /version is the first contact instead, so that an
    // unreachable server is one line below, not one failure per state.
    Request version;
    version.verb = "GET";
    version.path = "/version";
    version.idempotent = true;
    (void)run_until_complete(io, (*client)->transport->send(std::move(version)));
  }
  if (const ServerStatus server = (*client)->transport->server_status(); server.reachability == Reachability::down) {
    // The first contact failed (retried once): one line, not one failure per state.
    if (start.read_ahead) {
      run_sync(io, start.read_ahead->finished());
    }
    loading.finish();
    err << name << ": cannot reach the API server " << (*client)->config.server << ": " << server.reason << "\n";
    return cli::exit_failed;
  }
  spdlog::debug("timing: API server reached, kinds discovered, ApplySet parent read at {:.1f} ms", since_start());
  manifests::LoadResult loaded = finish_loading(start.read_ahead != nullptr);
  if (!discovery.loaded()) {
    (void)run_sync(io, discovery.load());  // (a failure shows again when the states resolve)
  }
  const manifests::NamespacedLookup known_scope = [&discovery](std::string_view group,
                                                               std::string_view kind) -> std::optional<bool> {
    const ApiResource* resource = discovery.loaded() ? discovery.mapper().find_preferred(group, kind) : nullptr;
    return resource != nullptr ? std::optional<bool>(resource->namespaced) : std::nullopt;
  };
  for (auto& warning : manifests::drop_cluster_scoped_namespaces(loaded.states, known_scope)) {
    loaded.warnings.push_back(std::move(warning));
  }
  for (auto& error : manifests::check_states(loaded.states, loaded.failed_files)) {
    loaded.errors.push_back(std::move(error));
  }
  for (const auto& warning : loaded.warnings) {
    spdlog::warn("{}", warning.to_string());
  }
  for (const auto& error : loaded.errors) {
    spdlog::error("{}", error.to_string());
  }
  spdlog::debug("timing: {} states loaded from {} file{} at {:.1f} ms", loaded.states.size(), loaded.files.size(),
                loaded.files.size() == 1 ? "" : "s", since_start());
  // The loading threads are done: the other CPUs now parse the answers of more than a
  // few kB (the LISTs), while this thread goes on with TLS and the states. A re-apply of
  // 1,000 objects parses 1.5 MB of them (48 -> 45 ms on 2 CPUs, bench/RESULTS.md).
  std::optional<boost::asio::thread_pool> decoding;
  if (other_cpus > 0) {
    decoding.emplace(static_cast<std::size_t>(other_cpus));
    for (int thread = 0; thread < other_cpus; ++thread) {
      boost::asio::post(*decoding, reserve_heap);  // most likely one per thread
    }
    (*client)->dynamic->decode_on(decoding->get_executor(), 4096);
  }
  options.load_failed = !loaded.failed_files.empty();
  options.manifests_empty = loaded.files.empty();
  states::RunReport report =
      run_sync(io, states::reconcile(*(*client)->dynamic, resolver, loaded.states, options, start));
  if (start.read_ahead) {
    run_sync(io, start.read_ahead->finished());  // a LIST the engine did not take
  }
  spdlog::debug("timing: states run and inventory recorded at {:.1f} ms", since_start());
  for (const auto& error : loaded.errors) {
    report.errors.push_back(error.to_string());
  }
  report.failed_files = static_cast<int>(loaded.failed_files.size());
  write_report(out, common, report);
  spdlog::debug("timing: report written at {:.1f} ms", since_start());
  const int exit_code = report.exit_code();
#if defined(__SANITIZE_ADDRESS__)
  exit_when_reported = false;  // its leak check needs the teardown
#endif
  if (exit_when_reported) {
    out.flush();
    err.flush();
    spdlog::default_logger()->flush();
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }
  return exit_code;
}

}  // namespace kstate::daemon
