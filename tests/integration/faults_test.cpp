// kstate under server faults (issues #7 and #10), in process: the same reconcile
// `kstate apply --prune` and the daemon run (states::reconcile), against
// kstate-emulator with its fault injection, crash/restart with persistence and
// request log. Three scenarios:
//  - a randomized run of hundreds of steps adding, editing and removing manifest files
//    (a CRD and its custom resources among them) while the server answers
//    500/503/409/429 or drops connections, someone else plants custom resources of
//    kstate's CRD, a second daemon with an older folder reconciles the same ApplySet,
//    one-shot runs apply objects without a set, and a file is held open half-written:
//    after one clean cycle the cluster equals the manifests, no DELETE ever named an
//    object kstate never applied nor one a held-open file declared, the planted objects
//    survive, and the second daemon never writes (issues #7, #35);
//  - the API server killed in the middle of applying 500 objects and restarted with
//    its data: the cycle fails cleanly with no delete, the next converges, nothing
//    lost or duplicated (generateName objects included);
//  - a 409 storm while another field manager keeps updating the same objects:
//    kstate converges within its retry bound and leaves the other manager's fields.
// Each prints its figures (seed, objects, retries, times) on stderr.
//
// KSTATE_RANDOM_SEED and KSTATE_RANDOM_STEPS replay or lengthen the randomized run
// (CI: 150 steps, about 10 s).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "core/dynamic_client.hpp"
#include "core/encoding.hpp"
#include "core/json.hpp"
#include "daemon/manifest_settle.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/inventory.hpp"
#include "states/reconcile.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace faults_test {

using kstate::testing::Emulator;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace states = kstate::states;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// kstate in this process: one client and one discovery cache kept across cycles, as
// in the daemon. Retries are the real policy with shorter pauses, so faults cost
// milliseconds instead of seconds.
struct InProcessKstate {
  boost::asio::io_context io;
  std::unique_ptr<kstate::Client> client;
  std::unique_ptr<kstate::discovery::DiscoveryClient> discovery;
  std::unique_ptr<states::DiscoveryResolver> resolver;

  InProcessKstate(const Emulator& emulator, const fs::path& cache_dir, kstate::RetryPolicy retry) {
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    kstate::TransportOptions transport;
    transport.retry = retry;
    transport.request_timeout = std::chrono::seconds(10);
    spdlog::set_level(spdlog::level::err);  // failures are expected here; the figures are printed
    auto made = kstate::make_client(io.get_executor(), sources, transport);
    REQUIRE(made.ok());
    client = std::move(made).value();
    kstate::discovery::DiscoveryOptions options;
    options.cache_dir = cache_dir.string();
    discovery =
        std::make_unique<kstate::discovery::DiscoveryClient>(*client->transport, client->config.server, options);
    resolver = std::make_unique<states::DiscoveryResolver>(*discovery);
  }

  // Who this kstate is (states/writer.hpp); unset: no writer check. `parent` unset: a
  // run without an ApplySet (`kstate apply` without --applyset-name).
  std::optional<states::Writer> writer;
  std::optional<states::ApplySetParent> parent = states::ApplySetParent{};
  // As the daemon reads files: one open for writing is not read (what was read of it
  // before is used: `last_read`), and prune keeps the objects of such files, of empty
  // ones and of FIFOs (daemon/manifest_settle.hpp).
  bool careful_files = false;
  std::map<std::string, std::string> last_read;

  kstate::manifests::LoadResult load(const fs::path& dir) {
    if (!careful_files) {
      return kstate::manifests::load_paths({dir.string()});
    }
    kstate::manifests::LoadResult all;
    std::vector<kstate::manifests::LoadError> list_errors;
    kstate::manifests::LoadOptions per_file;
    per_file.check_references = false;
    for (const std::string& file : kstate::manifests::list_manifest_files({dir.string()}, list_errors)) {
      const auto settle = kstate::daemon::classify_manifest(kstate::daemon::observe_manifest(file),
                                                            std::chrono::system_clock::now(), {});
      kstate::manifests::LoadResult one;
      if (settle == kstate::daemon::ManifestSettle::being_written) {
        auto before = last_read.find(file);
        if (before == last_read.end()) {
          continue;  // never read: declares nothing yet
        }
        one = kstate::manifests::load_text(before->second, file, per_file);
      } else {
        last_read[file] = kstate::testing::read_file(file);
        one = kstate::manifests::load_text(last_read[file], file, per_file);
      }
      all.files.push_back(file);
      for (auto& state : one.states) {
        all.states.push_back(std::move(state));
      }
      all.errors.insert(all.errors.end(), one.errors.begin(), one.errors.end());
      all.failed_files.insert(one.failed_files.begin(), one.failed_files.end());
    }
    for (auto& error : kstate::manifests::check_states(all.states, all.failed_files)) {
      all.errors.push_back(std::move(error));
    }
    return all;
  }

  states::RunReport cycle(const fs::path& dir, bool prune, int concurrency = 16,
                          std::optional<std::set<std::string>> only_files = std::nullopt) {
    auto loaded = load(dir);
    states::ReconcileOptions options;
    options.parent = parent;
    options.writer = writer;
    options.only_files = std::move(only_files);
    options.engine.concurrency = concurrency;
    options.engine.ownership_labels = states::ownership_labels(options.parent);
    options.prune = prune && parent.has_value();
    if (careful_files) {
      options.check_sources = [](const std::set<std::string>& sources) {
        return kstate::daemon::reasons(kstate::daemon::held_manifests(sources, std::chrono::system_clock::now(), {}));
      };
    }
    options.load_failed = !loaded.failed_files.empty();
    options.manifests_empty = loaded.files.empty();
    options.kstate_version = "test";
    auto report = kstate::run_sync(io, states::reconcile(*client->dynamic, *resolver, loaded.states, options));
    report.failed_files = static_cast<int>(loaded.failed_files.size());
    return report;
  }
  std::uint64_t retries() const { return client->transport->stats().retries; }
};

bool clean(const states::RunReport& report) {
  return report.failed() == 0 && report.errors.empty() && report.failed_files == 0;
}

std::string summary(const states::RunReport& report) {
  std::string text = "failed=" + std::to_string(report.failed()) + " results=" + std::to_string(report.results.size());
  for (const auto& error : report.errors) {
    text += "\nerror: " + error;
  }
  for (const auto& note : report.notes) {
    text += "\nnote: " + note;
  }
  int shown = 0;
  for (const auto& result : report.results) {
    if (result.result == std::optional<bool>(false) && shown++ < 5) {
      text += "\nfailed: " + result.name + ": " + result.comment;
    }
  }
  return text;
}

json::Document parse(const std::string& text) {
  auto document = json::parse(text);
  REQUIRE(document.ok());
  return std::move(document).value();
}

std::string text_at(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

// GET of a list through the admin token; faults must be off.
json::Document list(const Emulator& emulator, const std::string& path) {
  auto reply = emulator.request("GET", path);
  INFO(path << ": " << reply.body);
  REQUIRE(reply.status == 200);
  return parse(reply.body);
}

// The logged requests (method, path, code) since the last reset.
struct Logged {
  std::string method;
  std::string path;
  int code = 0;
};
std::vector<Logged> requests(const Emulator& emulator) {
  json::Document log = parse(emulator.request_log());
  std::vector<Logged> out;
  for (const auto& entry : json::find(log, "requests")->GetArray()) {
    const json::Value* code = json::find(entry, "code");
    out.push_back(
        {text_at(entry, {"method"}), text_at(entry, {"path"}), code != nullptr && code->IsInt() ? code->GetInt() : 0});
  }
  return out;
}

std::string applyset_selector() {
  return "applyset.kubernetes.io%2Fpart-of%3D" + states::applyset_id(states::ApplySetParent{});
}

// The inventory as recorded in the parent Secret: entries and pending, "Kind/ns/name".
std::pair<std::set<std::string>, std::set<std::string>> recorded_inventory(const Emulator& emulator) {
  auto reply = emulator.request("GET", "/api/v1/namespaces/kube-system/secrets/kstate");
  REQUIRE(reply.status == 200);
  json::Document parent = parse(reply.body);
  states::LoadedInventory loaded = states::load_inventory(&parent);
  REQUIRE(loaded.status == states::InventoryStatus::ok);
  std::pair<std::set<std::string>, std::set<std::string>> keys;
  for (const auto& entry : loaded.inventory.entries) {
    keys.first.insert(entry.kind + "/" + entry.ns + "/" + entry.name);
  }
  for (const auto& entry : loaded.inventory.pending) {
    keys.second.insert(entry.kind + "/" + entry.ns + "/" + entry.name);
  }
  return keys;
}

// --- the randomized model ------------------------------------------------------

constexpr const char* widget_crd_name = "widgets.example.com";
const std::string widget_crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";

struct ModelObject {
  // ConfigMap | Service | ServiceAccount | Namespace | CustomResourceDefinition | Widget
  std::string kind;
  std::string ns;
  std::string name;
  std::string value;  // ConfigMap data / Service port, changed by edits

  std::string key() const { return kind + "/" + ns + "/" + name; }
  std::string path() const {
    if (kind == "Namespace") {
      return "/api/v1/namespaces/" + name;
    }
    if (kind == "CustomResourceDefinition") {
      return widget_crd_path;
    }
    if (kind == "Widget") {
      return "/apis/example.com/v1/namespaces/" + ns + "/widgets/" + name;
    }
    std::string plural = kind == "ConfigMap" ? "configmaps" : kind == "Service" ? "services" : "serviceaccounts";
    return "/api/v1/namespaces/" + ns + "/" + plural + "/" + name;
  }
  std::string yaml() const {
    if (kind == "CustomResourceDefinition") {
      return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + name +
             "}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, kind: Widget}\n"
             "  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: "
             "{type: object, x-kubernetes-preserve-unknown-fields: true}}\n";
    }
    if (kind == "Widget") {
      return "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
             "\nspec:\n  value: \"" + value + "\"\n";
    }
    std::string head = "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n";
    if (kind == "Namespace") {
      return head + "  labels: {value: \"" + value + "\"}\n";
    }
    head += "  namespace: " + ns + "\n";
    if (kind == "ConfigMap") {
      return head + "data:\n  value: \"" + value + "\"\n";
    }
    if (kind == "Service") {
      return head + "spec:\n  selector: {app: \"" + name + "\"}\n  ports:\n    - port: " + value + "\n";
    }
    return head + "automountServiceAccountToken: " + (value.back() % 2 == 0 ? "true" : "false") + "\n";
  }
};

// Manifest files: "ns-K.yaml" holds Namespace rns-K and objects in it; "app-N.yaml"
// holds objects in `default`; "widgets.yaml" a CRD and custom resources of it in
// `default`. Object names are drawn from small pools, so removed objects come back
// later (with a new UID).
struct Model {
  std::mt19937_64 random;
  std::map<std::string, std::vector<ModelObject>> files;
  std::set<std::string> ever_declared_paths;
  int counter = 0;

  explicit Model(std::uint64_t seed) : random(seed) {}
  int below(int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(random)); }
  bool chance(int percent) { return below(100) < percent; }

  std::set<std::string> declared_names() const {
    std::set<std::string> names;
    for (const auto& [file, objects] : files) {
      for (const auto& object : objects) {
        names.insert(object.key());
      }
    }
    return names;
  }
  std::string next_value() { return std::to_string(1000 + (++counter % 9000)); }

  ModelObject random_object(const std::string& ns, bool widget = false) {
    static const char* const kinds[] = {"ConfigMap", "ConfigMap", "ConfigMap", "Service", "ServiceAccount"};
    std::set<std::string> taken = declared_names();
    for (int attempt = 0; attempt < 50; ++attempt) {
      ModelObject object{widget ? "Widget" : kinds[below(5)], ns, "obj-" + std::to_string(below(24)), next_value()};
      if (taken.count(object.key()) == 0) {
        return object;
      }
    }
    return {"ConfigMap", ns, "extra-" + std::to_string(++counter), next_value()};
  }

  void add_file() {
    if (chance(10)) {
      if (files.count("widgets.yaml") > 0) {
        return;
      }
      std::vector<ModelObject> objects{{"CustomResourceDefinition", "", widget_crd_name, next_value()}};
      files["widgets.yaml"] = objects;
      for (int i = 1 + below(2); i > 0; --i) {
        objects.push_back(random_object("default", true));
        files["widgets.yaml"] = objects;
      }
      return;
    }
    if (chance(30)) {
      std::string file = "ns-" + std::to_string(below(4)) + ".yaml";
      if (files.count(file) > 0) {
        return;
      }
      std::string ns = "rns-" + file.substr(3, 1);
      std::vector<ModelObject> objects{{"Namespace", "", ns, next_value()}};
      files[file] = objects;
      for (int i = below(4); i > 0; --i) {
        objects.push_back(random_object(ns));
        files[file] = objects;  // so the next draw sees it taken
      }
      return;
    }
    std::string file = "app-" + std::to_string(below(12)) + ".yaml";
    if (files.count(file) > 0) {
      return;
    }
    std::vector<ModelObject> objects;
    for (int i = 1 + below(3); i > 0; --i) {
      objects.push_back(random_object("default"));
      files[file] = objects;  // so the next draw sees it taken
    }
  }

  void edit_file() {
    if (files.empty()) {
      return;
    }
    auto it = std::next(files.begin(), below(static_cast<int>(files.size())));
    auto& objects = it->second;
    const std::string ns = objects.front().kind == "Namespace" ? objects.front().name : "default";
    const bool widgets = objects.front().kind == "CustomResourceDefinition";
    int what = below(3);
    if (what == 0 || objects.size() == 1) {
      objects[static_cast<std::size_t>(below(static_cast<int>(objects.size())))].value = next_value();
    } else if (what == 1) {
      objects.push_back(random_object(ns, widgets));
    } else {
      std::size_t first_removable = objects.front().kind == "Namespace" || widgets ? 1 : 0;
      if (objects.size() > first_removable + 1) {
        objects.erase(objects.begin() + static_cast<long>(first_removable) +
                      below(static_cast<int>(objects.size() - first_removable)));
      }
    }
  }

  void remove_file() {
    if (files.size() <= 1) {
      return;  // an empty folder never prunes; keep the run meaningful
    }
    files.erase(std::next(files.begin(), below(static_cast<int>(files.size()))));
  }

  void write(const fs::path& dir) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& [file, objects] : files) {
      std::string text;
      for (const auto& object : objects) {
        text += (text.empty() ? "" : "---\n") + object.yaml();
        ever_declared_paths.insert(object.path());
      }
      write_file(dir / file, text);
    }
  }

  std::map<std::string, const ModelObject*> declared() const {
    std::map<std::string, const ModelObject*> out;
    for (const auto& [file, objects] : files) {
      for (const auto& object : objects) {
        out[object.key()] = &object;
      }
    }
    return out;
  }
};

// One random fault setting for a step (the emulator's /emulator/faults JSON).
std::string random_fault(Model& model) {
  static const int codes[] = {500, 503, 409, 429};
  const std::string code = std::to_string(codes[model.below(4)]);
  const std::string fraction = std::to_string(0.05 + 0.05 * model.below(6));
  switch (model.below(6)) {
    case 0:
      return R"({"failFraction":)" + fraction + R"(,"failCode":)" + code + R"(,"retryAfterSeconds":0})";
    case 1:
      return R"({"closeNext":)" + std::to_string(1 + model.below(4)) + "}";
    case 2:
      return R"({"failNext":)" + std::to_string(1 + model.below(40)) + R"(,"failCode":503,"retryAfterSeconds":0})";
    case 3:
      return R"({"failFraction":)" + fraction + R"(,"failCode":)" + code +
             R"(,"retryAfterSeconds":0,"method":"DELETE"})";
    case 4:
      return R"({"failFraction":0.5,"failCode":)" + code +
             R"(,"retryAfterSeconds":0,"pathPrefix":"/api/v1/namespaces/kube-system/secrets"})";
    default:
      return R"({"closeNext":1,"method":"POST"})";
  }
}

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : std::strtoull(value, nullptr, 10);
}

}  // namespace

TEST_CASE("randomized: edits and server faults for hundreds of steps end with the cluster equal to the manifests") {
  const std::uint64_t seed = env_number("KSTATE_RANDOM_SEED", std::random_device{}());
  const int steps = static_cast<int>(env_number("KSTATE_RANDOM_STEPS", 150));
  std::cerr << "randomized prune run: seed " << seed << ", " << steps << " steps (replay: KSTATE_RANDOM_SEED=" << seed
            << " KSTATE_RANDOM_STEPS=" << steps << ")\n";
  INFO("seed " << seed);

  kstate::testing::EmulatorOptions emulator_options;
  emulator_options.extra_args = {"--seed", std::to_string(seed % 1000000)};
  Emulator emulator(emulator_options);
  TempDir work{"kstate-random"};
  const fs::path dir = work.path() / "manifests";
  kstate::RetryPolicy retry;
  retry.max_retries = 3;
  retry.backoff_base = std::chrono::milliseconds(2);
  retry.backoff_max = std::chrono::milliseconds(20);
  InProcessKstate kstate(emulator, work.path() / "cache", retry);
  kstate.writer = states::Writer{states::Writer::Mode::daemon, "node-1", dir.string()};
  kstate.careful_files = true;
  // A second daemon on the same ApplySet with an older copy of the folder (leader
  // election off): it must write nothing at all. And one-shot runs without an
  // ApplySet, whose objects no prune may touch.
  const fs::path second_dir = work.path() / "second";
  InProcessKstate second(emulator, work.path() / "cache-second", retry);
  second.writer = states::Writer{states::Writer::Mode::daemon, "node-2", second_dir.string()};
  const fs::path unset_dir = work.path() / "unset";
  InProcessKstate unset(emulator, work.path() / "cache-unset", retry);
  unset.parent.reset();
  Model model(seed);

  // Objects kstate must never delete: someone else's, in a managed namespace's
  // neighbourhood, and one that even carries kstate's labels without being in its
  // inventory.
  const std::string labels = R"("labels":{"app.kubernetes.io/managed-by":"kstate","applyset.kubernetes.io/part-of":")" +
                             states::applyset_id(states::ApplySetParent{}) + R"("})";
  REQUIRE(emulator
              .request("POST", "/api/v1/namespaces",
                       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"outside"}})")
              .status == 201);
  std::vector<std::string> planted{"/api/v1/namespaces/default/configmaps/foreign",
                                   "/api/v1/namespaces/outside/configmaps/obj-1",
                                   "/api/v1/namespaces/default/configmaps/labelled-foreign"};
  REQUIRE(emulator
              .request("POST", "/api/v1/namespaces/default/configmaps",
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign"}})")
              .status == 201);
  REQUIRE(emulator
              .request("POST", "/api/v1/namespaces/outside/configmaps",
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"obj-1"}})")
              .status == 201);
  REQUIRE(
      emulator
          .request("POST", "/api/v1/namespaces/default/configmaps",
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"labelled-foreign",)" + labels + "}}")
          .status == 201);
  std::set<std::string> namespaces_with_foreign;

  emulator.reset_request_log();
  std::vector<Logged> all_deletes;
  int faulted_steps = 0;
  int failed_cycles = 0;
  int held_cycles = 0;
  int prunes = 0;
  int broken_files = 0;
  int foreign_widgets = 0;
  int second_writer_cycles = 0;
  int unset_runs = 0;
  int slow_writes = 0;
  // What kstate last read of each file (the daemon keeps it while the file is written).
  std::map<std::string, std::vector<ModelObject>> seen;
  const auto started = Clock::now();
  const std::uint64_t retries_before = kstate.retries();
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    for (int changes = 1 + model.below(3); changes > 0; --changes) {
      int what = model.below(10);
      if (what < 4) {
        model.add_file();
      } else if (what < 8) {
        model.edit_file();
      } else {
        model.remove_file();
      }
    }
    model.write(dir);
    // A slow writer: one file truncated and held open, half of it written, while the
    // cycle runs. What kstate read of it before must not be pruned in this step.
    std::optional<int> held_fd;
    std::string held_file;
    std::set<std::string> held_paths;
    if (!model.files.empty() && model.chance(10)) {
      auto it = std::next(model.files.begin(), model.below(static_cast<int>(model.files.size())));
      held_file = it->first;
      std::string text;
      for (const auto& object : it->second) {
        text += (text.empty() ? "" : "---\n") + object.yaml();
      }
      const int fd = ::open((dir / held_file).c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      REQUIRE(fd >= 0);
      const std::string half = text.substr(0, text.size() / 2);
      REQUIRE(::write(fd, half.data(), half.size()) == static_cast<ssize_t>(half.size()));
      held_fd = fd;
      for (const auto& object : seen[held_file]) {
        held_paths.insert(object.path());
      }
      ++slow_writes;
    }
    const bool broken = model.chance(5);
    if (broken) {
      write_file(dir / "zz-broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n");
      ++broken_files;
    }
    // Now and then someone else puts an object into a managed namespace: that
    // namespace must then outlive its manifest.
    if (model.chance(3)) {
      auto declared = model.declared();
      for (const auto& [key, object] : declared) {
        if (object->kind == "Namespace" && namespaces_with_foreign.count(object->name) == 0) {
          auto reply =
              emulator.request("POST", "/api/v1/namespaces/" + object->name + "/configmaps",
                               R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"someone-elses"}})");
          if (reply.status == 201) {
            namespaces_with_foreign.insert(object->name);
            planted.push_back("/api/v1/namespaces/" + object->name + "/configmaps/someone-elses");
          }
          break;
        }
      }
    }
    const bool faulty = model.chance(50);
    if (faulty) {
      emulator.set_faults(random_fault(model));
      ++faulted_steps;
    }
    states::RunReport report = kstate.cycle(dir, true);
    emulator.clear_faults();
    for (const auto& [file, objects] : model.files) {
      if (file != held_file) {
        seen[file] = objects;
      }
    }
    for (auto it = seen.begin(); it != seen.end();) {
      it = model.files.count(it->first) == 0 && it->first != held_file ? seen.erase(it) : std::next(it);
    }

    bool held = false;
    for (const auto& note : report.notes) {
      held = held || note.starts_with("prune held back");
    }
    failed_cycles += clean(report) ? 0 : 1;
    held_cycles += held ? 1 : 0;
    int step_deletes = 0;
    for (const auto& request : requests(emulator)) {
      if (request.method == "DELETE") {
        all_deletes.push_back(request);
        ++step_deletes;
      }
    }
    for (const auto& request : requests(emulator)) {
      if (request.method == "DELETE") {
        INFO("deleted " << request.path << " while " << held_file << " was being written");
        CHECK(held_paths.count(request.path) == 0);
      }
    }
    if (held_fd) {
      ::close(*held_fd);  // (the next step writes every file again)
    }
    emulator.reset_request_log();
    prunes += step_deletes;
    // A cycle whose files did not all load, or whose states did not all succeed,
    // deletes nothing (a failed prune delete is not a failed state).
    int failed_states = 0;
    for (const auto& result : report.results) {
      failed_states += result.result == std::optional<bool>(false) && !result.id.starts_with("prune:") ? 1 : 0;
    }
    if (broken || failed_states > 0) {
      INFO(summary(report));
      // (A cycle that could not read or write the inventory ran nothing at all.)
      CHECK((held || (report.results.empty() && !report.errors.empty())));
      CHECK(step_deletes == 0);
    }
    fs::remove(dir / "zz-broken.yaml");

    // Someone else's custom resource of kstate's CRD: the CRD must outlive it.
    if (model.files.count("widgets.yaml") > 0 && model.chance(8) &&
        emulator.request("GET", "/apis/example.com/v1/widgets").status == 200) {
      const std::string name = "foreign-w-" + std::to_string(foreign_widgets);
      if (emulator
              .request("POST", "/apis/example.com/v1/namespaces/default/widgets",
                       R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":")" + name + R"("}})")
              .status == 201) {
        planted.push_back("/apis/example.com/v1/namespaces/default/widgets/" + name);
        ++foreign_widgets;
      }
    }
    // The second daemon, its folder one file short: it finds the set written by the
    // first and sends no write at all. (Only once the first has recorded itself: until
    // then the set has no writer, and the first daemon to write it claims it.)
    const bool first_recorded =
        emulator.request("GET", "/api/v1/namespaces/kube-system/secrets/kstate")
            .body.find("\"kstate.io/writer\":\"" + kstate.writer->to_string() + "\"") != std::string::npos;
    emulator.reset_request_log();  // (the test's own request)
    if (first_recorded && model.chance(8)) {
      fs::remove_all(second_dir);
      model.write(second_dir);
      if (model.files.size() > 1) {
        fs::remove(second_dir /
                   std::next(model.files.begin(), model.below(static_cast<int>(model.files.size())))->first);
      }
      emulator.reset_request_log();  // (the test's own requests above)
      states::RunReport held_back = second.cycle(second_dir, true);
      ++second_writer_cycles;
      INFO(summary(held_back));
      CHECK(held_back.writer_conflict == kstate.writer->to_string());
      for (const auto& request : requests(emulator)) {
        INFO(request.method << " " << request.path);
        CHECK(request.method == "GET");
      }
      emulator.reset_request_log();
    }
    // `kstate apply` without --applyset-name: its objects carry no membership, and no
    // prune of the set may ever touch them.
    if (model.chance(5)) {
      const std::string name = "unset-" + std::to_string(unset_runs++);
      write_file(unset_dir / "app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name +
                                             ", namespace: default}\ndata: {value: \"v\"}\n");
      states::RunReport applied = unset.cycle(unset_dir, false);
      if (clean(applied)) {
        planted.push_back("/api/v1/namespaces/default/configmaps/" + name);
      }
      for (const auto& request : requests(emulator)) {
        CHECK(request.path.rfind("/api/v1/namespaces/kube-system/secrets", 0) != 0);  // no parent read or written
        if (request.method == "DELETE") {
          all_deletes.push_back(request);
        }
      }
      emulator.reset_request_log();
    }
  }

  // A clean cycle converges everything. One more may be needed when the last step
  // re-declared a namespace the emulator was still terminating (200 ms): its objects
  // are refused until it is gone, and the next cycle re-creates it.
  model.write(dir);
  states::RunReport final_report = kstate.cycle(dir, true);
  int final_cycles = 1;
  for (; !clean(final_report) && final_cycles < 4; ++final_cycles) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    final_report = kstate.cycle(dir, true);
  }
  INFO(summary(final_report));
  REQUIRE(clean(final_report));
  for (const auto& request : requests(emulator)) {
    if (request.method == "DELETE") {
      all_deletes.push_back(request);
    }
  }
  emulator.reset_request_log();
  // ... and a second one has nothing left to do.
  states::RunReport again = kstate.cycle(dir, true);
  CHECK(clean(again));
  int writes = 0;
  std::string written;  // which ones, when a failure has to be explained
  for (const auto& request : requests(emulator)) {
    if (request.method != "GET") {
      ++writes;
      written += request.method + " " + request.path + " -> " + std::to_string(request.code) + "\n";
    }
  }
  INFO("writes of the second clean cycle:\n" << written << summary(again));
  CHECK(writes == 0);

  // The cluster equals the manifests: every declared object with its values...
  auto declared = model.declared();
  for (const auto& [key, object] : declared) {
    INFO(key);
    auto reply = emulator.request("GET", object->path());
    REQUIRE(reply.status == 200);
    json::Document live = parse(reply.body);
    if (object->kind == "ConfigMap") {
      CHECK(text_at(live, {"data", "value"}) == object->value);
    } else if (object->kind == "Namespace") {
      CHECK(text_at(live, {"metadata", "labels", "value"}) == object->value);
    }
  }
  // ... and nothing else carries kstate's ApplySet label, apart from the planted
  // object and namespaces someone else still uses.
  std::set<std::string> labelled;
  std::vector<std::pair<std::string, std::string>> collections{{"/api/v1/configmaps", "ConfigMap"},
                                                               {"/api/v1/services", "Service"},
                                                               {"/api/v1/serviceaccounts", "ServiceAccount"},
                                                               {"/api/v1/namespaces", "Namespace"}};
  const bool crd_exists = emulator.request("GET", widget_crd_path).status == 200;
  if (crd_exists) {
    collections.emplace_back("/apis/example.com/v1/widgets", "Widget");
    collections.emplace_back("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "CustomResourceDefinition");
  }
  for (const auto& [collection, kind] : collections) {
    // (a list's items carry no kind of their own, as from kube-apiserver: the collection says it)
    json::Document items = list(emulator, collection + "?labelSelector=" + applyset_selector());
    for (const auto& item : json::find(items, "items")->GetArray()) {
      if (json::find_path(item, {"metadata", "deletionTimestamp"}) != nullptr) {
        continue;
      }
      labelled.insert(kind + "/" + text_at(item, {"metadata", "namespace"}) + "/" +
                      text_at(item, {"metadata", "name"}));
    }
  }
  std::set<std::string> expected;
  for (const auto& [key, object] : declared) {
    expected.insert(key);
  }
  const std::string crd_key = std::string("CustomResourceDefinition//") + widget_crd_name;
  if (expected.count(crd_key) == 0 && crd_exists) {
    // Kept: someone else's Widgets are in it (a CRD is pruned only once it is empty).
    CHECK(foreign_widgets > 0);
    expected.insert(crd_key);
  }
  expected.insert("ConfigMap/default/labelled-foreign");
  for (const auto& ns : namespaces_with_foreign) {
    if (expected.count("Namespace//" + ns) == 0 && labelled.count("Namespace//" + ns) > 0) {
      expected.insert("Namespace//" + ns);  // kept: it holds someone-elses
    }
  }
  CHECK(labelled == expected);
  // The inventory records exactly the managed objects (kept namespaces included), and
  // nothing that exists is left pending. A pending entry whose object does not exist
  // may stay: kstate keeps it for a grace period (a failed or killed cycle's request
  // may still create the object at the server), then drops it.
  auto [entries, pending] = recorded_inventory(emulator);
  expected.erase("ConfigMap/default/labelled-foreign");
  CHECK(entries == expected);
  for (const auto& key : pending) {
    INFO("still pending: " << key);
    CHECK(labelled.count(key) == 0);
    CHECK(expected.count(key) == 0);
  }

  // No delete ever named an object kstate never applied; the planted ones all survived.
  std::set<std::string> bad_deletes;
  for (const auto& request : all_deletes) {
    if (model.ever_declared_paths.count(request.path) == 0) {
      bad_deletes.insert(request.path);
    }
  }
  CHECK(bad_deletes.empty());
  for (const auto& path : planted) {
    INFO(path);
    CHECK(emulator.request("GET", path).status == 200);
  }
  std::cerr << "randomized prune run: seed " << seed << ", " << steps << " steps in " << seconds_since(started)
            << " s; faulted steps " << faulted_steps << ", cycles not clean " << failed_cycles << ", prune held back "
            << held_cycles << ", broken files " << broken_files << ", DELETE requests " << all_deletes.size()
            << " (outside the inventory: " << bad_deletes.size() << "), client retries "
            << kstate.retries() - retries_before << ", final objects " << declared.size() << ", final cycles "
            << final_cycles << "; foreign custom resources " << foreign_widgets << ", second-writer cycles "
            << second_writer_cycles << " (0 writes), runs without a set " << unset_runs << ", files held open "
            << slow_writes << "\n";
}

namespace {

// Counts from the request log without Catch assertions (safe on another thread).
struct LogCounts {
  int writes = 0;   // POST/PATCH/PUT answered 2xx under `prefix`
  int deletes = 0;  // DELETE requests, any path
};
LogCounts count_log(const Emulator& emulator, const std::string& prefix) {
  LogCounts counts;
  auto log = json::parse(emulator.request_log());
  if (!log.ok()) {
    return counts;
  }
  const json::Value* entries = json::find(*log, "requests");
  if (entries == nullptr || !entries->IsArray()) {
    return counts;
  }
  for (const auto& entry : entries->GetArray()) {
    std::string method = text_at(entry, {"method"});
    const json::Value* code = json::find(entry, "code");
    int status = code != nullptr && code->IsInt() ? code->GetInt() : 0;
    if (method == "DELETE") {
      ++counts.deletes;
    } else if (method != "GET" && status >= 200 && status < 300 && text_at(entry, {"path"}).starts_with(prefix)) {
      ++counts.writes;
    }
  }
  return counts;
}

std::string named_config_map(const std::string& name, const std::string& value) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: load}\ndata: {value: \"" + value +
         "\"}\n";
}

}  // namespace

TEST_CASE(
    "API server killed and restarted while 500 objects are applied: no delete, then converges, none lost or doubled") {
  Emulator emulator;
  TempDir work{"kstate-crash"};
  const fs::path dir = work.path() / "manifests";
  kstate::RetryPolicy retry;  // the real policy's shape, capped low so that the test stays short
  retry.max_retries = 4;
  retry.backoff_base = std::chrono::milliseconds(50);
  retry.backoff_max = std::chrono::milliseconds(400);
  InProcessKstate kstate(emulator, work.path() / "cache", retry);

  // Cycle 1: 20 objects recorded in the inventory, then removed from the manifests, so
  // that a cycle allowed to prune would delete them.
  write_file(dir / "00-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: load}\n");
  std::string old_objects;
  for (int i = 0; i < 20; ++i) {
    old_objects += (i == 0 ? "" : "---\n") + named_config_map("old-" + std::to_string(i), "old");
  }
  write_file(dir / "05-old.yaml", old_objects);
  states::RunReport first = kstate.cycle(dir, true);
  INFO(summary(first));
  REQUIRE(clean(first));

  // Cycle 2: 400 named objects and 100 generateName ones, the old ones gone.
  fs::remove(dir / "05-old.yaml");
  for (int file = 0; file < 4; ++file) {
    std::string text;
    for (int i = 0; i < 100; ++i) {
      text += (i == 0 ? "" : "---\n") + named_config_map("cm-" + std::to_string(file * 100 + i), "v");
    }
    write_file(dir / ("10-named-" + std::to_string(file) + ".yaml"), text);
  }
  std::string generated;
  for (int i = 0; i < 100; ++i) {
    generated += "gen-" + std::to_string(i) +
                 ":\n  object_present:\n    manifest:\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: "
                 "{generateName: gen-, namespace: load}\n      data: {index: \"" +
                 std::to_string(i) + "\"}\n";
  }
  write_file(dir / "20-generated.yaml", generated);

  // 10 ms per request, four at a time: the cycle takes over a second, and the server
  // dies when 150 objects have been written, for longer than the retries last.
  emulator.set_faults(R"({"latencyMs":10})");
  emulator.reset_request_log();
  std::atomic<bool> cycle_done{false};
  std::atomic<int> deletes_before_crash{-1};
  std::atomic<int> written_before_crash{-1};
  const auto outage = std::chrono::milliseconds(2000);
  std::thread killer([&] {
    while (!cycle_done) {
      LogCounts counts = count_log(emulator, "/api/v1/namespaces/load/configmaps");
      if (counts.writes >= 150) {
        written_before_crash = counts.writes;
        deletes_before_crash = counts.deletes;
        emulator.crash();
        std::this_thread::sleep_for(outage);
        emulator.restart();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const std::uint64_t retries_before = kstate.retries();
  const auto crash_cycle_started = Clock::now();
  states::RunReport crashed = kstate.cycle(dir, true, 4);
  const double crash_cycle_seconds = seconds_since(crash_cycle_started);
  cycle_done = true;
  killer.join();
  const std::uint64_t crash_retries = kstate.retries() - retries_before;
  REQUIRE(written_before_crash >= 150);  // the server really died mid-apply
  INFO(summary(crashed));
  // The cycle failed cleanly: states failed, prune held back, nothing deleted before
  // the crash or after the restart.
  CHECK(crashed.failed() > 0);
  bool held = false;
  for (const auto& note : crashed.notes) {
    held = held || note.starts_with("prune held back");
  }
  CHECK(held);
  // Backoff is capped: every state that failed gave up within its retry budget
  // (50+100+200+400 ms of pauses), well before the server came back.
  double longest_failed_ms = 0;
  for (const auto& result : crashed.results) {
    if (result.result == std::optional<bool>(false)) {
      longest_failed_ms = std::max(longest_failed_ms, result.duration_ms);
    }
  }
  CHECK(longest_failed_ms < static_cast<double>(outage.count()));
  CHECK(deletes_before_crash == 0);
  CHECK(count_log(emulator, "/").deletes == 0);
  for (int i = 0; i < 20; ++i) {
    CHECK(emulator.request("GET", "/api/v1/namespaces/load/configmaps/old-" + std::to_string(i)).status == 200);
  }

  // Cycle 3, server healthy: converges, prunes the old objects.
  emulator.clear_faults();
  const auto converge_started = Clock::now();
  states::RunReport converged = kstate.cycle(dir, true);
  const double converge_seconds = seconds_since(converge_started);
  INFO(summary(converged));
  CHECK(clean(converged));

  json::Document items = list(emulator, "/api/v1/namespaces/load/configmaps");
  std::set<std::string> named;
  std::map<std::string, int> generated_by_index;
  int old_left = 0;
  int total = 0;
  for (const auto& item : json::find(items, "items")->GetArray()) {
    std::string name = text_at(item, {"metadata", "name"});
    if (name == "kube-root-ca.crt") {
      continue;  // kube-controller-manager's, in every namespace
    }
    ++total;
    if (name.starts_with("cm-")) {
      CHECK(text_at(item, {"data", "value"}) == "v");
      named.insert(name);
    } else if (name.starts_with("gen-")) {
      ++generated_by_index[text_at(item, {"data", "index"})];
    } else if (name.starts_with("old-")) {
      ++old_left;
    }
  }
  CHECK(named.size() == 400);               // none lost
  CHECK(generated_by_index.size() == 100);  // none lost
  int doubled = 0;
  for (const auto& [index, count] : generated_by_index) {
    doubled += count > 1 ? count - 1 : 0;
  }
  CHECK(doubled == 0);   // none created twice
  CHECK(old_left == 0);  // pruned once the cycle was clean
  CHECK(total == 500);
  auto [entries, pending] = recorded_inventory(emulator);
  CHECK(entries.size() == 501);  // 500 objects and their namespace
  // Only the generateName states' prefix stays pending while they are declared (how an
  // interrupted cycle's generated objects are found again).
  CHECK(pending == std::set<std::string>{"ConfigMap/load/generateName:gen-"});
  std::cerr << "crash mid-apply: 500 objects (400 named, 100 generateName), server killed after "
            << written_before_crash << " writes and down " << outage.count() << " ms; failed cycle "
            << crash_cycle_seconds << " s with " << crashed.failed() << " failed states (longest " << longest_failed_ms
            << " ms), " << crash_retries
            << " client retries (backoff 50 ms doubling, capped at 400 ms, 4 retries), 0 deletes; next cycle "
            << converge_seconds << " s: " << named.size() << " named + " << generated_by_index.size()
            << " generated objects, " << doubled << " duplicates, " << 20 - old_left << " old objects pruned\n";
}

TEST_CASE("409 storm while another field manager updates the same objects: converges within the retry bound") {
  Emulator emulator;
  TempDir work{"kstate-conflicts"};
  const fs::path dir = work.path() / "manifests";
  InProcessKstate kstate(emulator, work.path() / "cache", kstate::RetryPolicy{});
  const auto write_manifests = [&](const std::string& value) {
    std::string text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: race}\n";
    for (int i = 0; i < 30; ++i) {
      text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-" + std::to_string(i) +
              ", namespace: race}\ndata: {value: \"" + value + "\"}\n";
    }
    write_file(dir / "race.yaml", text);
  };
  write_manifests("v1");
  REQUIRE(clean(kstate.cycle(dir, true)));

  // The competing writer: server-side apply under its own field manager, of a label and
  // a data key of every object, as fast as it can.
  std::atomic<bool> stop{false};
  std::atomic<int> competitor_updates{0};
  std::thread competitor([&] {
    for (int tick = 0; !stop; ++tick) {
      for (int i = 0; i < 30 && !stop; ++i) {
        std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-)" + std::to_string(i) +
                           R"(","namespace":"race","labels":{"competitor":"yes"}},"data":{"competitor-key":"tick-)" +
                           std::to_string(tick) + R"("}})";
        auto reply = emulator.request(
            "PATCH",
            "/api/v1/namespaces/race/configmaps/cm-" + std::to_string(i) + "?fieldManager=competitor&force=true", body,
            "application/apply-patch+yaml");
        competitor_updates += reply.status == 200 ? 1 : 0;
      }
    }
  });
  while (competitor_updates < 30) {
    std::this_thread::yield();
  }

  write_manifests("v2");
  emulator.set_faults(
      R"({"failFraction":0.25,"failCode":409,"method":"PATCH","pathPrefix":"/api/v1/namespaces/race/configmaps"})");
  emulator.reset_request_log();
  const auto started = Clock::now();
  states::RunReport stormed = kstate.cycle(dir, true);
  const double seconds = seconds_since(started);
  stop = true;
  competitor.join();
  emulator.clear_faults();
  int conflicts = 0;
  for (const auto& request : requests(emulator)) {
    conflicts += request.code == 409 ? 1 : 0;
  }
  INFO(summary(stormed));
  CHECK(clean(stormed));
  CHECK(conflicts > 0);

  for (int i = 0; i < 30; ++i) {
    const std::string name = "cm-" + std::to_string(i);
    INFO(name);
    auto reply = emulator.request("GET", "/api/v1/namespaces/race/configmaps/" + name);
    REQUIRE(reply.status == 200);
    json::Document live = parse(reply.body);
    CHECK(text_at(live, {"data", "value"}) == "v2");
    // The other manager's fields are still there, and still its own.
    CHECK(text_at(live, {"data", "competitor-key"}).starts_with("tick-"));
    CHECK(text_at(live, {"metadata", "labels", "competitor"}) == "yes");
    bool competitor_owns = false;
    bool kstate_owns_theirs = false;
    for (const auto& entry : json::find_path(live, {"metadata", "managedFields"})->GetArray()) {
      const json::Value* data = json::find_path(entry, {"fieldsV1", "f:data"});
      const bool has_key = data != nullptr && json::find(*data, "f:competitor-key") != nullptr;
      if (text_at(entry, {"manager"}) == "competitor") {
        competitor_owns = has_key;
      } else if (text_at(entry, {"manager"}) == "kstate") {
        kstate_owns_theirs = has_key;
      }
    }
    CHECK(competitor_owns);
    CHECK_FALSE(kstate_owns_theirs);
  }

  // The bound: 7 conflicts in a row on one object are absorbed, 8 make the state fail
  // with a clear message (and hold prune back); the next cycle converges.
  write_manifests("v3");
  emulator.set_faults(
      R"({"failNext":7,"failCode":409,"method":"PATCH","pathPrefix":"/api/v1/namespaces/race/configmaps/cm-0"})");
  CHECK(clean(kstate.cycle(dir, true, 1)));
  write_manifests("v4");
  emulator.set_faults(
      R"({"failNext":8,"failCode":409,"method":"PATCH","pathPrefix":"/api/v1/namespaces/race/configmaps/cm-0"})");
  states::RunReport gave_up = kstate.cycle(dir, true, 1);
  CHECK(gave_up.failed() == 1);
  bool message = false;
  for (const auto& result : gave_up.results) {
    message = message || result.comment.find("gave up after 8 conflicting attempts") != std::string::npos;
  }
  CHECK(message);
  emulator.clear_faults();
  CHECK(clean(kstate.cycle(dir, true)));
  std::cerr << "409 storm: 30 objects, " << competitor_updates << " competing server-side applies, " << conflicts
            << " 409 answers, converged in one cycle of " << seconds
            << " s; bound: 8 attempts per apply (7 conflicts absorbed, 8 reported)\n";
}

TEST_CASE("a one-file cycle (the daemon's) never prunes the generateName objects of the files it did not run") {
  Emulator emulator;
  TempDir work{"kstate-one-file"};
  const fs::path dir = work.path() / "manifests";
  InProcessKstate kstate(emulator, work.path() / "cache", kstate::RetryPolicy{});
  write_file(dir / "generated.yaml",
             "job-config:\n  object_present:\n    manifest:\n      apiVersion: v1\n      kind: ConfigMap\n"
             "      metadata: {generateName: run-, namespace: default}\n      data: {a: b}\n");
  write_file(dir / "plain.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: default}\n");
  write_file(dir / "gone.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone, namespace: default}\n");
  REQUIRE(clean(kstate.cycle(dir, true)));
  auto generated_names = [&] {
    std::set<std::string> names;
    json::Document items = list(emulator, "/api/v1/namespaces/default/configmaps");
    for (const auto& item : json::find(items, "items")->GetArray()) {
      if (text_at(item, {"metadata", "name"}).starts_with("run-")) {
        names.insert(text_at(item, {"metadata", "name"}));
      }
    }
    return names;
  };
  const std::set<std::string> before = generated_names();
  REQUIRE(before.size() == 1);

  // gone.yaml removed; the daemon reconciles only the changed file's neighbour
  // plain.yaml: the generated object's state is not run, so its name is not known
  // in this cycle, yet it is still declared and must stay.
  fs::remove(dir / "gone.yaml");
  std::set<std::string> only{(dir / "plain.yaml").string()};
  states::RunReport partial = kstate.cycle(dir, true, 16, only);
  INFO(summary(partial));
  CHECK(clean(partial));
  CHECK(emulator.request("GET", "/api/v1/namespaces/default/configmaps/gone").status == 404);  // prune ran
  CHECK(generated_names() == before);
}

}  // namespace faults_test
