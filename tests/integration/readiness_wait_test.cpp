// Readiness waits (`wait`, annotation kstate.io/wait) end to end: the engine runs in
// this process against kstate-emulator over HTTPS, and the test plays the
// controllers, writing the status subresource the way a real controller reports a
// rollout. Polling waits use the engine's injected sleep, so no test really sleeps:
// the fake sleep is where the "controller" acts. The watch path is driven by a thread
// that reports the rollout once the engine's watch request has arrived.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "core/dynamic_client.hpp"
#include "core/json.hpp"
#include "discovery/client.hpp"
#include "manifests/loader.hpp"
#include "states/discovery_resolver.hpp"
#include "states/engine.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace readiness_wait_test {

using kstate::testing::Emulator;
using kstate::testing::EmulatorOptions;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;
namespace states = kstate::states;
using std::chrono::milliseconds;

namespace {

std::string field(const json::Value& object, std::initializer_list<std::string_view> path) {
  const json::Value* v = json::find_path(object, path);
  if (v == nullptr) {
    return {};
  }
  return v->IsString() ? std::string(v->GetString()) : json::dump(*v);
}

// The test plays the Deployment and Job controllers itself (report_status).
EmulatorOptions immediate_crds() {
  EmulatorOptions options;
  options.extra_args = {"--no-deployment-controller", "--no-job-controller"};
  options.crd_establish_delay_seconds = 0;
  return options;
}

struct Harness {
  Emulator emulator{immediate_crds()};
  TempDir work{"kstate-wait"};
  std::vector<milliseconds> sleeps;  // what the engine asked the injected sleep for
  // Called from the injected sleep, before it returns: the "controller" acting.
  std::function<void(std::size_t call)> on_sleep;
  // Real time each injected sleep lets pass (0: none). A test that checks what other
  // states do during a wait needs some: their requests take real time at the emulator,
  // while an instant sleep could let the whole wait end before their first answer.
  milliseconds real_pause{0};

  states::EngineOptions options() {
    states::EngineOptions engine;
    engine.watch_waits = false;
    engine.sleep = [this](milliseconds duration) -> boost::asio::awaitable<void> {
      sleeps.push_back(duration);
      if (on_sleep) {
        on_sleep(sleeps.size());
      }
      if (real_pause.count() > 0) {
        boost::asio::steady_timer pause(co_await boost::asio::this_coro::executor, real_pause);
        co_await pause.async_wait(boost::asio::use_awaitable);
      }
    };
    return engine;
  }

  // Runs the states of `text` (one file) through the engine, in real mode.
  states::RunReport run(const std::string& text, const states::EngineOptions& engine_options) {
    auto dir = work.path() / "manifests";
    std::filesystem::remove_all(dir);
    write_file(dir / "states.yaml", text);
    auto loaded = kstate::manifests::load_paths({dir.string()});
    INFO(loaded.error_text());
    REQUIRE(loaded.ok());
    boost::asio::io_context io;
    kstate::KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    sources.getenv = [](const std::string&) { return std::optional<std::string>(); };
    auto client = kstate::make_client(io.get_executor(), sources, kstate::TransportOptions{});
    REQUIRE(client.ok());
    kstate::discovery::DiscoveryOptions discovery_options;
    discovery_options.cache_dir = (work.path() / "cache").string();
    kstate::discovery::DiscoveryClient discovery(*(*client)->transport, (*client)->config.server, discovery_options);
    states::DiscoveryResolver resolver(discovery);
    states::Engine engine(*(*client)->dynamic, resolver, engine_options);
    return kstate::run_sync(io, engine.run(loaded.states));
  }

  json::Document get(const std::string& path) {
    auto reply = emulator.request("GET", path);
    if (reply.status == 404) {
      return json::Document();
    }
    REQUIRE(reply.status == 200);
    auto doc = json::parse(reply.body);
    REQUIRE(doc.ok());
    return std::move(doc).value();
  }

  // Writes `status` (JSON text; GENERATION is replaced by the object's generation)
  // through the status subresource, as the object's controller would.
  void report_status(const std::string& path, std::string status) {
    std::string generation = field(get(path), {"metadata", "generation"});
    for (std::size_t at; (at = status.find("GENERATION")) != std::string::npos;) {
      status.replace(at, 10, generation.empty() ? "0" : generation);
    }
    auto reply =
        emulator.request("PATCH", path + "/status", R"({"status":)" + status + "}", "application/merge-patch+json");
    INFO(reply.body);
    REQUIRE(reply.status == 200);
  }
};

const states::StateResult& result_of(const states::RunReport& report, const std::string& id) {
  for (const auto& result : report.results) {
    if (result.id == id) {
      return result;
    }
  }
  FAIL("no result for " << id);
  throw std::logic_error("unreachable");
}

const char* const deployment = R"(web:
  object_present:
    wait: WAIT
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: default}
      spec:
        replicas: 1
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: web, image: nginx}]}
after-web:
  object_present:
    require: [web]
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: after-web, namespace: default}, data: {a: b}}
)";

std::string with_wait(const std::string& wait) {
  std::string text = deployment;
  text.replace(text.find("WAIT"), 4, wait);
  return text;
}

const char* const deployment_path = "/apis/apps/v1/namespaces/default/deployments/web";
const char* const rolled_out =
    R"({"observedGeneration": GENERATION, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1})";

}  // namespace

TEST_CASE("wait: a Deployment is waited for until its rollout is reported, and its dependents start only after") {
  Harness harness;
  bool dependent_ran_early = false;
  harness.on_sleep = [&](std::size_t call) {
    dependent_ran_early |= !harness.get("/api/v1/namespaces/default/configmaps/after-web").IsNull();
    if (call == 2) {
      harness.report_status(deployment_path, rolled_out);
    }
  };
  auto report = harness.run(with_wait("true"), harness.options());
  const auto& web = result_of(report, "web");
  INFO(web.comment);
  CHECK(web.result == std::optional<bool>(true));
  CHECK(web.comment == "created");
  CHECK(harness.sleeps.size() == 2);  // checked three times: two not rolled out, then rolled out
  CHECK_FALSE(dependent_ran_early);
  CHECK(result_of(report, "after-web").result == std::optional<bool>(true));
  CHECK_FALSE(harness.get("/api/v1/namespaces/default/configmaps/after-web").IsNull());
}

TEST_CASE("wait: running out shows why, and the dependents do not run") {
  Harness harness;
  SECTION("attempts with a sleep between them, MetalK8s style") {
    auto report = harness.run(with_wait("{attempts: 3, sleep: 2}"), harness.options());
    const auto& web = result_of(report, "web");
    CHECK(web.result == std::optional<bool>(false));
    CHECK(web.comment ==
          "timed out after 3 checks waiting for Deployment/default/web to be ready: Waiting for deployment spec "
          "update to be observed...");
    CHECK(harness.sleeps == std::vector<milliseconds>{milliseconds(2000), milliseconds(2000)});
    CHECK(result_of(report, "after-web").comment == "One or more requisite failed: web");
    CHECK(harness.get("/api/v1/namespaces/default/configmaps/after-web").IsNull());
  }
  SECTION("wait: true alone is bounded by the 5 minute default, with backoff between checks") {
    // The controller saw the spec but the pods never become available.
    harness.on_sleep = [&](std::size_t call) {
      if (call == 1) {
        harness.report_status(deployment_path,
                              R"({"observedGeneration": GENERATION, "replicas": 1, "updatedReplicas": 1})");
      }
    };
    auto report = harness.run(with_wait("true"), harness.options());
    const auto& web = result_of(report, "web");
    CHECK(web.result == std::optional<bool>(false));
    CHECK(web.comment ==
          "timed out after 5 min waiting for Deployment/default/web to be ready: Waiting for deployment \"web\" "
          "rollout to finish: 0 of 1 updated replicas are available...");
    milliseconds total{0};
    for (auto sleep : harness.sleeps) {
      total += sleep;
    }
    CHECK(total == std::chrono::minutes(5));
    REQUIRE(harness.sleeps.size() > 3);
    CHECK(harness.sleeps[0] == milliseconds(500));
    CHECK(harness.sleeps[1] == milliseconds(1000));
    CHECK(*std::max_element(harness.sleeps.begin(), harness.sleeps.end()) == milliseconds(10'000));
  }
}

TEST_CASE("wait: each kind's readiness as its controller reports it") {
  Harness harness;
  struct Kind {
    std::string name;
    std::string manifest;  // flow-style YAML, name and namespace filled in
    std::string path;      // API path of the object
    std::string ready_status;
    bool ready_at_once;  // ready as created (no wait needed)
  };
  const std::vector<Kind> kinds = {
      {"statefulset",
       "{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db, namespace: default}, spec: {replicas: 1, "
       "serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: "
       "{containers: [{name: db, image: postgres}]}}}}",
       "/apis/apps/v1/namespaces/default/statefulsets/db",
       R"({"observedGeneration": GENERATION, "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1,
           "currentRevision": "db-1", "updateRevision": "db-1"})",
       false},
      {"daemonset",
       "{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent, namespace: default}, spec: {selector: "
       "{matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, "
       "image: busybox}]}}}}",
       "/apis/apps/v1/namespaces/default/daemonsets/agent",
       R"({"observedGeneration": GENERATION, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2,
           "numberAvailable": 2, "numberReady": 2})",
       false},
      {"job",
       "{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: default}, spec: {template: {spec: "
       "{restartPolicy: Never, containers: [{name: migrate, image: busybox}]}}}}",
       "/apis/batch/v1/namespaces/default/jobs/migrate",
       R"({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]})", false},
      {"pvc",
       "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: default}, spec: "
       "{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}",
       "/api/v1/namespaces/default/persistentvolumeclaims/data", R"({"phase": "Bound"})", false},
      {"namespace", "{apiVersion: v1, kind: Namespace, metadata: {name: fresh}}", "/api/v1/namespaces/fresh", "", true},
  };
  for (const auto& kind : kinds) {
    INFO("kind " << kind.name);
    harness.sleeps.clear();
    harness.on_sleep = [&](std::size_t call) {
      if (call == 1) {
        harness.report_status(kind.path, kind.ready_status);
      }
    };
    auto report = harness.run(kind.name + ":\n  object_present:\n    wait: true\n    manifest: " + kind.manifest + "\n",
                              harness.options());
    const auto& result = result_of(report, kind.name);
    INFO(result.comment);
    CHECK(result.result == std::optional<bool>(true));
    CHECK(harness.sleeps.size() == (kind.ready_at_once ? 0U : 1U));
  }
}

TEST_CASE("wait: a failed Job fails the state at once with the job's reason, without waiting out the timeout") {
  Harness harness;
  harness.on_sleep = [&](std::size_t) {
    harness.report_status("/apis/batch/v1/namespaces/default/jobs/migrate",
                          R"({"failed": 1, "conditions": [{"type": "Failed", "status": "True",
                              "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]})");
  };
  auto report = harness.run(R"(migrate:
  object_present:
    wait: true
    manifest: {apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: default},
               spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}}
)",
                            harness.options());
  const auto& result = result_of(report, "migrate");
  CHECK(result.result == std::optional<bool>(false));
  CHECK(result.comment ==
        "Job/default/migrate will not become ready: job migrate failed: BackoffLimitExceeded: Job has reached the "
        "specified backoff limit");
  CHECK(harness.sleeps.size() == 1);
}

TEST_CASE("wait: object_updated waits too, and the annotation kstate.io/wait asks for it on plain objects") {
  Harness harness;
  harness.on_sleep = [&](std::size_t call) {
    if (call == 1) {
      harness.report_status(deployment_path, rolled_out);
    }
  };
  auto first = harness.run(R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  annotations: {kstate.io/wait: "true"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
)",
                           harness.options());
  REQUIRE(first.results.size() == 1);
  CHECK(first.results[0].result == std::optional<bool>(true));
  CHECK(harness.sleeps.size() == 1);

  // Scaling bumps the generation: the status of the old one no longer counts.
  harness.sleeps.clear();
  auto scaled = harness.run(R"(scale-web:
  object_updated:
    wait: {timeout: 60}
    manifest: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default}, spec: {replicas: 1}}
)",
                            harness.options());
  // Unchanged: already good, and already rolled out, so no wait at all.
  CHECK(scaled.results[0].comment == "already good");
  CHECK(harness.sleeps.empty());
  auto bigger = harness.run(R"(scale-web:
  object_updated:
    wait: {timeout: 60}
    manifest: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default}, spec: {replicas: 3}}
)",
                            harness.options());
  CHECK(bigger.results[0].result == std::optional<bool>(false));
  // The controller saw the new spec (the fake sleep reports it) but only one replica is up.
  CHECK(bigger.results[0].comment ==
        "timed out after 1 min waiting for Deployment/default/web to be ready: Waiting for deployment \"web\" rollout "
        "to finish: 1 out of 3 new replicas have been updated...");
}

TEST_CASE("wait: a time-bounded wait watches the object instead of polling it") {
  Harness harness;
  auto options = harness.options();
  options.watch_waits = true;
  std::atomic<bool> stop{false};
  std::atomic<bool> reported{false};
  // The "controller": once the engine's watch has arrived, report the rollout.
  std::thread controller([&] {
    while (!stop) {
      if (harness.emulator.count_requests("GET", "/apis/apps/v1/namespaces/default/deployments") > 0 &&
          harness.emulator.request_log().find("\"watch\"") != std::string::npos) {
        harness.report_status(deployment_path, rolled_out);
        reported = true;
        return;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  harness.emulator.reset_request_log();
  auto started = std::chrono::steady_clock::now();
  auto report = harness.run(with_wait("{timeout: 20}"), options);
  auto took = std::chrono::steady_clock::now() - started;
  stop = true;
  controller.join();
  CHECK(reported);
  const auto& web = result_of(report, "web");
  INFO(web.comment);
  CHECK(web.result == std::optional<bool>(true));
  CHECK(harness.sleeps.empty());  // no polling
  CHECK(took < std::chrono::seconds(5));
  // The wait itself was one watch, no polling GET.
  auto log = json::parse(harness.emulator.request_log());
  REQUIRE(log.ok());
  int watches = 0;
  int gets = 0;
  for (const auto& entry : json::find(*log, "requests")->GetArray()) {
    if (field(entry, {"path"}).rfind("/apis/apps/v1/namespaces/default/deployments", 0) == 0) {
      watches += field(entry, {"verb"}) == "watch" ? 1 : 0;
      gets += field(entry, {"verb"}) == "get" ? 1 : 0;
    }
  }
  CHECK(watches == 1);
  CHECK(gets == 2);  // the engine's prefetch, and the "controller" reading the generation
}

// About 1 s: the watch's bound is the server's timeoutSeconds, whose smallest value is 1.
TEST_CASE("wait: a watched wait that runs out says so with the last reason seen") {
  Harness harness;
  auto options = harness.options();
  options.watch_waits = true;
  auto started = std::chrono::steady_clock::now();
  auto report = harness.run(with_wait("{timeout: 1}"), options);
  auto took = std::chrono::steady_clock::now() - started;
  const auto& web = result_of(report, "web");
  CHECK(web.result == std::optional<bool>(false));
  CHECK(web.comment ==
        "timed out after 1 s waiting for Deployment/default/web to be ready: Waiting for deployment spec update to be "
        "observed...");
  CHECK(took >= std::chrono::milliseconds(900));
  CHECK(took < std::chrono::seconds(4));
  CHECK(result_of(report, "after-web").result == std::optional<bool>(false));
}

TEST_CASE("wait: kstate.io/depends-on dependents start after the wait, independent states run during it") {
  Harness harness;
  harness.real_pause = milliseconds(100);
  bool dependent_ran_early = false;
  bool independent_ran_during_wait = false;
  harness.on_sleep = [&](std::size_t call) {
    dependent_ran_early |= !harness.get("/api/v1/namespaces/default/configmaps/needs-web").IsNull();
    independent_ran_during_wait |= !harness.get("/api/v1/namespaces/default/configmaps/unrelated").IsNull();
    if (call == 2) {
      harness.report_status(deployment_path, rolled_out);
    }
  };
  auto report = harness.run(R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  annotations: {kstate.io/wait: "true"}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: needs-web
  namespace: default
  annotations: {kstate.io/depends-on: Deployment/default/web}
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: default}
data: {a: b}
)",
                            harness.options());
  for (const auto& result : report.results) {
    INFO(result.id << ": " << result.comment);
    CHECK(result.result == std::optional<bool>(true));
  }
  CHECK(harness.sleeps.size() == 2);
  CHECK_FALSE(dependent_ran_early);
  CHECK(independent_ran_during_wait);
}

TEST_CASE("wait: a create-only object that already exists is still waited for, and never written") {
  Harness harness;
  const std::string text = R"(web:
  object_present:
    strategy: create-only
    wait: {attempts: 5, sleep: 1}
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: default}
      spec:
        replicas: 1
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: web, image: nginx}]}
)";
  auto first = harness.run(text, harness.options());
  CHECK(first.results[0].result == std::optional<bool>(false));  // never rolled out
  harness.sleeps.clear();
  harness.on_sleep = [&](std::size_t call) {
    if (call == 1) {
      harness.report_status(deployment_path, rolled_out);
    }
  };
  harness.emulator.reset_request_log();
  auto second = harness.run(text, harness.options());
  CHECK(second.results[0].result == std::optional<bool>(true));
  CHECK(second.results[0].comment == "already exists (create-only: never updated)");
  CHECK(harness.sleeps.size() == 1);
  CHECK(harness.emulator.count_requests("PATCH", "/apis") == 1);  // only the "controller"'s status
  CHECK(harness.emulator.count_requests("PUT", "/apis") == 0);
}

namespace {

const char* const held_path = "/api/v1/namespaces/default/configmaps/held";

// A ConfigMap a finalizer holds after its deletion, until the test removes it.
void create_held(Harness& harness) {
  auto reply = harness.emulator.request("POST", "/api/v1/namespaces/default/configmaps", R"({"apiVersion": "v1",
    "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"a": "b"}})");
  REQUIRE(reply.status == 201);
}

void release_held(Harness& harness) {
  auto reply = harness.emulator.request("PATCH", held_path, R"({"metadata": {"finalizers": null}})",
                                        "application/merge-patch+json");
  REQUIRE(reply.status == 200);
}

std::string remove_held(const std::string& wait) {
  return "remove-held:\n  object_absent:\n    apiVersion: v1\n    kind: ConfigMap\n    name: held\n    namespace: "
         "default\n    wait: " +
         wait + "\n";
}

}  // namespace

TEST_CASE("object_absent wait: a finalizer that stays is named when the wait runs out, and a released one ends it") {
  Harness harness;
  create_held(harness);
  SECTION("attempts run out") {
    auto report = harness.run(remove_held("{attempts: 3, sleep: 1}"), harness.options());
    CHECK(report.results[0].result == std::optional<bool>(false));
    CHECK(report.results[0].comment ==
          "timed out after 3 checks waiting for ConfigMap/default/held to be deleted: terminating; finalizers: "
          "example.com/hold");
    CHECK(harness.sleeps == std::vector<milliseconds>{milliseconds(1000), milliseconds(1000)});
    CHECK_FALSE(harness.get(held_path).IsNull());
  }
  SECTION("the finalizer is removed while kstate polls") {
    harness.on_sleep = [&](std::size_t call) {
      if (call == 2) {
        release_held(harness);
      }
    };
    auto report = harness.run(remove_held("true"), harness.options());
    INFO(report.results[0].comment);
    CHECK(report.results[0].result == std::optional<bool>(true));
    CHECK(report.results[0].comment == "deleted");
    CHECK(harness.sleeps == std::vector<milliseconds>{milliseconds(200), milliseconds(400)});
    CHECK(harness.get(held_path).IsNull());
  }
  SECTION("the finalizer is removed while kstate watches") {
    auto options = harness.options();
    options.watch_waits = true;
    std::atomic<bool> stop{false};
    std::thread controller([&] {
      while (!stop) {
        if (harness.emulator.request_log().find("\"watch\"") != std::string::npos) {
          release_held(harness);
          return;
        }
        std::this_thread::sleep_for(milliseconds(5));
      }
    });
    harness.emulator.reset_request_log();
    auto report = harness.run(remove_held("{timeout: 20}"), options);
    stop = true;
    controller.join();
    INFO(report.results[0].comment);
    CHECK(report.results[0].result == std::optional<bool>(true));
    CHECK(harness.sleeps.empty());
    CHECK(harness.get(held_path).IsNull());
  }
}

TEST_CASE(
    "object_present of an object being deleted: nothing sent, a failure (pending in test mode), created again once "
    "gone") {
  Harness harness;
  create_held(harness);
  REQUIRE(harness.emulator.request("DELETE", held_path).status == 200);
  REQUIRE(harness.get(held_path).HasMember("metadata"));  // the finalizer holds it
  const std::string present =
      "held:\n  object_present:\n    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: held, namespace: "
      "default}, data: {a: c}}\n";
  harness.emulator.reset_request_log();
  auto report = harness.run(present, harness.options());
  INFO(report.results[0].comment);
  CHECK(report.results[0].result == std::optional<bool>(false));
  CHECK(report.results[0].comment.find("ConfigMap/default/held is being deleted (since ") == 0);
  CHECK(report.results[0].comment.find("it is created again once it is gone, by the next cycle") != std::string::npos);
  CHECK(harness.emulator.count_requests("PATCH", held_path) == 0);

  auto test_options = harness.options();
  test_options.test_mode = true;
  auto tested = harness.run(present, test_options);
  CHECK(tested.results[0].result == std::nullopt);
  CHECK(tested.results[0].comment.find("is being deleted") != std::string::npos);

  release_held(harness);  // the deletion finishes
  REQUIRE(harness.get(held_path).IsNull());
  auto again = harness.run(present, harness.options());
  INFO(again.results[0].comment);
  CHECK(again.results[0].result == std::optional<bool>(true));
  CHECK(field(harness.get(held_path), {"data", "a"}) == "c");
}

TEST_CASE("wait: a dropped watch is resumed, and one whose history was compacted (410) re-reads the object") {
  Harness harness;
  auto options = harness.options();
  options.watch_waits = true;
  auto watches = [&] {
    auto log = json::parse(harness.emulator.request_log());
    int count = 0;
    if (log.ok()) {
      for (const auto& entry : json::find(*log, "requests")->GetArray()) {
        count += field(entry, {"verb"}) == "watch" ? 1 : 0;
      }
    }
    return count;
  };
  std::atomic<bool> stop{false};
  std::thread controller([&] {
    auto wait_for_watches = [&](int count) {
      auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!stop && watches() < count && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(milliseconds(5));
      }
    };
    wait_for_watches(1);
    // Another write moves the resourceVersion past the engine's; compaction then makes
    // the engine's version too old to resume from.
    harness.emulator.request("POST", "/api/v1/namespaces/default/configmaps",
                             R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bump"}})");
    harness.emulator.compact();
    harness.emulator.request("POST", "/emulator/drop-watches");
    wait_for_watches(3);  // dropped, resumed and refused (410), re-read and watched again
    if (!stop) {
      harness.report_status(deployment_path, rolled_out);
    }
  });
  harness.emulator.reset_request_log();
  auto report = harness.run(with_wait("{timeout: 20}"), options);
  stop = true;
  controller.join();
  const auto& web = result_of(report, "web");
  INFO(web.comment);
  CHECK(web.result == std::optional<bool>(true));
  CHECK(harness.sleeps.empty());
  CHECK(watches() >= 3);
  // The 410 made the engine read the object again instead of giving up or polling.
  // Reads of the Deployment: the prefetch, the "controller"'s, and the one after the 410.
  CHECK(harness.emulator.count_requests("GET", deployment_path) == 3);
}

TEST_CASE("wait: a custom resource is ready when its Ready condition is True for the current generation") {
  Harness harness;
  // A custom resource whose controller reports a Ready condition for a generation.
  auto crd = harness.emulator.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
      "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
      "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})");
  REQUIRE(crd.status == 201);
  const std::string path = "/apis/example.com/v1/namespaces/default/gadgets/g1";
  // The emulator establishes a CRD right after it is created, not within the request;
  // up to 10 s, as a loaded 2-core machine took more than the 1 s this waited before.
  for (int i = 0; i < 2000 && harness.emulator.request("GET", "/apis/example.com/v1/gadgets").status != 200; ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  REQUIRE(harness.emulator
              .request("POST", "/apis/example.com/v1/namespaces/default/gadgets",
                       R"({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
                           "spec": {"size": 1}})")
              .status == 201);
  harness.report_status(path, R"({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]})");
  const std::string text = R"(gadget:
  object_present:
    wait: WAIT
    manifest: {apiVersion: example.com/v1, kind: Gadget, metadata: {name: g1, namespace: default}, spec: {size: 2}}
)";
  auto with = [&](const std::string& wait) {
    std::string out = text;
    out.replace(out.find("WAIT"), 4, wait);
    return out;
  };
  SECTION("the controller has not caught up with the new generation when the wait runs out") {
    auto report = harness.run(with("{attempts: 2, sleep: 1}"), harness.options());
    CHECK(report.results[0].result == std::optional<bool>(false));
    CHECK(report.results[0].comment ==
          "timed out after 2 checks waiting for Gadget/default/g1 to be ready: Ready condition is for generation 1, "
          "not the current 2");
  }
  SECTION("the controller reports Ready for the new generation") {
    harness.on_sleep = [&](std::size_t) {
      harness.report_status(
          path, R"({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": GENERATION}]})");
    };
    auto report = harness.run(with("true"), harness.options());
    INFO(report.results[0].comment);
    CHECK(report.results[0].result == std::optional<bool>(true));
    CHECK(harness.sleeps.size() == 1);
  }
}

}  // namespace readiness_wait_test
