// The transport under server faults, against kstate-emulator's fault injection:
//  - a server that hangs: the per-request deadline fires; a GET is retried and
//    succeeds, a POST is not repeated;
//  - connections dropped mid-response (after N bytes): reads, server-side apply
//    patches and dryRun writes are retried; a create is never sent twice, so a
//    generateName object exists exactly once;
//  - 429/503 storms with Retry-After: every wait lasts at least what the server asked
//    (measured between the attempts the server logged), retries stop after the
//    policy's bound with an error that says so, the next call succeeds once the
//    storm is over; under load every request (retries included) stays within the
//    token bucket's QPS/burst, measured on the server's arrival times.
#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <catch2/catch.hpp>
#include <vector>

#include "core/dynamic_client.hpp"
#include "tests/support/api_resources.hpp"
#include "tests/support/emulator.hpp"

namespace transport_faults_test {

using namespace kstate;
using kstate::testing::Emulator;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct Session {
  boost::asio::io_context io;
  std::unique_ptr<Client> client;
  Session(const Emulator& emulator, TransportOptions options) {
    KubeconfigSources sources;
    sources.kubeconfig_flag = emulator.kubeconfig_path().string();
    auto made = make_client(io.get_executor(), sources, options);
    REQUIRE(made.ok());
    client = std::move(made.value());
  }
  DynamicClient& dynamic() { return *client->dynamic; }
  TransportStats stats() const { return client->transport->stats(); }
};

TransportOptions fast_options() {
  TransportOptions options;
  options.request_timeout = std::chrono::milliseconds(400);
  options.retry.backoff_base = std::chrono::milliseconds(10);
  options.random = [] { return 0.0; };
  return options;
}

ApiResource configmaps() {
  return kstate::testing::configmaps_resource();
}

json::Document configmap(const std::string& name) {
  return json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                     R"("},"data":{"key":"value"}})")
      .value();
}

struct Logged {
  std::string method;
  std::string path;
  std::string query;
  int code = 0;
  std::string fault;
  std::int64_t at_ms = 0;
};

std::vector<Logged> request_log(const Emulator& emulator) {
  auto log = json::parse(emulator.request_log());
  REQUIRE(log.ok());
  std::vector<Logged> out;
  for (const auto& item : json::find(*log, "requests")->GetArray()) {
    Logged entry;
    entry.method = std::string(json::string_or(json::find(item, "method"), ""));
    entry.path = std::string(json::string_or(json::find(item, "path"), ""));
    entry.query = std::string(json::string_or(json::find(item, "query"), ""));
    entry.code = json::find(item, "code")->GetInt();
    entry.fault = std::string(json::string_or(json::find(item, "fault"), ""));
    entry.at_ms = json::find(item, "atMs")->GetInt64();
    out.push_back(entry);
  }
  return out;
}

std::int64_t elapsed_ms(SteadyClock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - since).count();
}

}  // namespace

TEST_CASE("a hanging server: the deadline fires, a GET is retried, a POST is not", "[client][faults][emulator]") {
  Emulator emulator;
  Session session(emulator, fast_options());
  auto& client = session.dynamic();
  auto resource = configmaps();
  REQUIRE(run_sync(session.io, client.create(resource, "default", configmap("target"))).ok());

  emulator.set_faults(R"({"hangNext": 1, "method": "GET"})");
  auto start = SteadyClock::now();
  auto read = run_sync(session.io, client.get(resource, "default", "target"));
  auto read_ms = elapsed_ms(start);
  REQUIRE(read.ok());
  CHECK(read_ms >= 400);
  CHECK(read_ms < 2000);
  CHECK(session.stats().failures["GET timeout"] == 1);  // what failed, not a status 0
  CHECK(session.stats().requests.count("GET 0") == 0);
  CHECK(session.stats().retries == 1);

  emulator.set_faults(R"({"hangNext": 1, "method": "POST"})");
  emulator.reset_request_log();
  start = SteadyClock::now();
  auto created = run_sync(session.io, client.create(resource, "default", configmap("hung")));
  auto create_ms = elapsed_ms(start);
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().kind == ErrorKind::timeout);
  CHECK(created.error().message.find("deadline exceeded") != std::string::npos);
  CHECK(create_ms >= 400);
  CHECK(create_ms < 2000);
  CHECK(emulator.count_requests("POST", "/api/v1/namespaces/default/configmaps") == 1);
  CHECK(session.stats().retries == 1);  // unchanged
  WARN("hang: GET answered after " << read_ms << " ms (deadline 400 ms, 1 retry); POST failed after " << create_ms
                                   << " ms, sent once");
}

TEST_CASE("connections dropped mid-response: reads, apply and dryRun are retried, a create never repeats",
          "[client][faults][emulator]") {
  Emulator emulator(kstate::testing::without_namespace_controllers());
  Session session(emulator, fast_options());
  auto& client = session.dynamic();
  auto resource = configmaps();
  const std::string collection = "/api/v1/namespaces/default/configmaps";
  for (int i = 0; i < 20; ++i) {
    REQUIRE(run_sync(session.io, client.create(resource, "default", configmap("item-" + std::to_string(i)))).ok());
  }

  // A LIST cut after 200 bytes of its answer is read again.
  emulator.set_faults(R"({"closeNext": 1, "dropAfterBytes": 200, "method": "GET"})");
  emulator.reset_request_log();
  auto listed = run_sync(session.io, client.list(resource, "default"));
  REQUIRE(listed.ok());
  CHECK(json::find(*listed, "items")->Size() == 20);
  CHECK(emulator.count_requests("GET", collection) == 2);

  // generateName: the server creates the object, the answer is lost after 40 bytes (in
  // the headers). kstate must not POST again: exactly one object with that prefix.
  emulator.set_faults(R"({"closeNext": 1, "dropAfterBytes": 40, "method": "POST"})");
  emulator.reset_request_log();
  auto generated = json::parse(
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"generated-"},"data":{"k":"v"}})");
  auto created = run_sync(session.io, client.create(resource, "default", *generated));
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().kind == ErrorKind::connection);
  CHECK(emulator.count_requests("POST", collection) == 1);
  auto all = run_sync(session.io, client.list(resource, "default"));
  REQUIRE(all.ok());
  int generated_objects = 0;
  for (const auto& item : json::find(*all, "items")->GetArray()) {
    auto name = json::string_or(json::find_path(item, {"metadata", "name"}), "");
    generated_objects += name.starts_with("generated-") ? 1 : 0;
  }
  CHECK(generated_objects == 1);

  // A server-side apply patch cut mid-body is sent again (applying twice is harmless).
  emulator.set_faults(R"({"closeNext": 1, "method": "PATCH"})");
  emulator.reset_request_log();
  WriteOptions apply;
  apply.field_manager = "kstate-test";
  apply.force = true;
  auto applied = run_sync(session.io, client.patch(resource, "default", "applied", PatchType::apply,
                                                   json::dump(configmap("applied")), apply));
  REQUIRE(applied.ok());
  CHECK(emulator.count_requests("PATCH", collection + "/applied") == 2);

  // A dryRun create is retried too, and creates nothing.
  emulator.set_faults(R"({"closeNext": 1, "dropAfterBytes": 100, "method": "POST"})");
  emulator.reset_request_log();
  WriteOptions dry_run;
  dry_run.dry_run = true;
  auto dry = run_sync(session.io, client.create(resource, "default", configmap("dry"), dry_run));
  REQUIRE(dry.ok());
  CHECK(emulator.count_requests("POST", collection) == 2);
  CHECK(run_sync(session.io, client.get(resource, "default", "dry")).error().kind == ErrorKind::not_found);
  emulator.clear_faults();
  WARN("dropped mid-response: LIST retried (2 requests), POST sent once -> " << generated_objects
                                                                             << " generateName object, apply PATCH "
                                                                                "and dryRun POST retried once each");
}

TEST_CASE("429/503 storms: Retry-After honoured (measured), bounded tries with a clear error, then recovery",
          "[client][faults][emulator]") {
  Emulator emulator;
  auto options = fast_options();
  options.request_timeout = std::chrono::seconds(5);
  options.retry.max_retries = 2;
  Session session(emulator, options);
  auto& client = session.dynamic();
  auto resource = configmaps();
  REQUIRE(run_sync(session.io, client.create(resource, "default", configmap("stormy"))).ok());

  // A storm longer than the retry bound: three attempts, each after the Retry-After asked.
  emulator.set_faults(R"({"failNext": 100, "failCode": 429, "retryAfterSeconds": 1})");
  emulator.reset_request_log();
  auto start = SteadyClock::now();
  auto throttled = run_sync(session.io, client.get(resource, "default", "stormy"));
  auto gave_up_ms = elapsed_ms(start);
  REQUIRE_FALSE(throttled.ok());
  CHECK(throttled.error().kind == ErrorKind::too_many_requests);
  CHECK(throttled.error().http_status == 429);
  CHECK(throttled.error().message.find("gave up after 3 attempts") != std::string::npos);
  auto log = request_log(emulator);
  REQUIRE(log.size() == 3);
  std::int64_t shortest_wait = 1'000'000;
  for (std::size_t i = 1; i < log.size(); ++i) {
    shortest_wait = std::min(shortest_wait, log[i].at_ms - log[i - 1].at_ms);
  }
  CHECK(shortest_wait >= 1000);
  CHECK(gave_up_ms < 3500);

  // The storm ends: the next call succeeds; a short 503 burst is ridden out.
  emulator.set_faults(R"({"failNext": 1, "failCode": 503, "retryAfterSeconds": 1})");
  start = SteadyClock::now();
  auto recovered = run_sync(session.io, client.get(resource, "default", "stormy"));
  auto recovered_ms = elapsed_ms(start);
  REQUIRE(recovered.ok());
  CHECK(recovered_ms >= 1000);
  CHECK(session.stats().requests["GET 503"] == 1);
  WARN("429 storm: gave up after 3 attempts in " << gave_up_ms << " ms, shortest wait between attempts "
                                                 << shortest_wait << " ms (Retry-After: 1); 503 then 200 after "
                                                 << recovered_ms << " ms; error: " << throttled.error().message);
}

TEST_CASE("under a 429 storm every request, retries included, stays within QPS and burst",
          "[client][faults][emulator]") {
  Emulator emulator;
  auto options = fast_options();
  options.request_timeout = std::chrono::seconds(5);
  options.qps = 40;
  options.burst = 5;
  options.retry.max_retries = 20;
  Session session(emulator, options);
  auto& client = session.dynamic();
  auto resource = configmaps();
  REQUIRE(run_sync(session.io, client.create(resource, "default", configmap("busy"))).ok());
  // Half the requests throttled with Retry-After: 0 (retry at once: only the bucket paces them).
  emulator.set_faults(R"({"failFraction": 0.5, "failCode": 429, "retryAfterSeconds": 0})");
  emulator.reset_request_log();
  session.io.restart();  // (run_sync above left it stopped)
  const int callers = 30;
  int succeeded = 0;
  for (int i = 0; i < callers; ++i) {
    boost::asio::co_spawn(
        session.io,
        [&]() -> asio::awaitable<void> {
          std::string ns = "default";
          std::string name = "busy";
          std::string subresource;
          auto got = co_await client.get(resource, ns, name, subresource);
          succeeded += got.ok() ? 1 : 0;
        },
        boost::asio::detached);
  }
  session.io.run();
  emulator.clear_faults();
  CHECK(succeeded == callers);
  auto log = request_log(emulator);
  int throttled = 0;
  for (const auto& entry : log) {
    throttled += entry.code == 429 ? 1 : 0;
  }
  CHECK(throttled > 0);
  // In any window [t_i, t_j] the server may see at most burst + qps * (t_j - t_i) requests
  // (+1 for rounding of the millisecond timestamps).
  double worst_excess = -1e9;
  for (std::size_t i = 0; i < log.size(); ++i) {
    for (std::size_t j = i; j < log.size(); ++j) {
      double window_s = static_cast<double>(log[j].at_ms - log[i].at_ms) / 1000.0;
      double allowed = options.burst + options.qps * window_s + 1.0;
      worst_excess = std::max(worst_excess, static_cast<double>(j - i + 1) - allowed);
    }
  }
  double span_s = static_cast<double>(log.back().at_ms - log.front().at_ms) / 1000.0;
  double rate = span_s > 0 ? static_cast<double>(log.size() - options.burst) / span_s : 0;
  CHECK(worst_excess <= 0.0);
  CHECK(rate <= options.qps * 1.1);
  WARN("qps 40 burst 5 under a 50% 429 storm: " << log.size() << " requests (" << throttled << " throttled) over "
                                                << span_s << " s, sustained " << rate << " req/s, worst window excess "
                                                << worst_excess);
}

}  // namespace transport_faults_test
