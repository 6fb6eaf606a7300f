// The engine's waits for one object (states/waits.hpp) against the fake transport: a
// time-bounded wait watches from the version it was read at (one request), a refused
// or expired watch is recovered, a wait counted in attempts polls that many times
// through the injected sleep, and a read the caller's filter refuses (a path the
// server does not serve) is never taken for a missing object.
#include "states/waits.hpp"

#include <catch2/catch.hpp>

#include "tests/support/api_resources.hpp"
#include "tests/support/fake_transport.hpp"

namespace waits_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using kstate::testing::query_value;
using states::ObjectWait;
using states::Readiness;
using states::ReadinessCheck;
using std::chrono::milliseconds;

namespace {

std::string config_map(const std::string& ready, int version, const std::string& uid = "uid-1") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default","uid":")" + uid +
         R"(","resourceVersion":")" + std::to_string(version) + R"("},"data":{"ready":")" + ready + R"("}})";
}

std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

constexpr const char* not_found =
    R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,)"
    R"("message":"configmaps \"web\" not found","details":{"name":"web","kind":"configmaps"}})";

// Ready when data.ready is "yes", failed when it is "never".
ReadinessCheck ready_flag(const json::Value* object) {
  if (object == nullptr) {
    return {Readiness::not_ready, "it does not exist"};
  }
  std::string flag(json::string_or(json::find_path(*object, {"data", "ready"}), ""));
  if (flag == "yes") {
    return {Readiness::ready, ""};
  }
  return {flag == "never" ? Readiness::failed : Readiness::not_ready, "data.ready is " + flag};
}

// One wait on ConfigMap default/web through the fake, its pauses recorded.
struct Harness {
  FakeTransport fake;
  DynamicClient client{fake};
  ApiResource resource = kstate::testing::configmaps_resource();
  std::vector<milliseconds> slept;
  boost::asio::io_context io;

  ObjectWait wait(bool watch, ObjectWait::ReadFilter take_read = {}) {
    ObjectWait::Options options;
    options.watch = watch;
    options.sleep = [this](milliseconds duration) -> boost::asio::awaitable<void> {
      slept.push_back(duration);
      co_return;
    };
    options.take_read = std::move(take_read);
    return ObjectWait(client, resource, "default", "web", "ConfigMap/default/web", std::move(options));
  }

  Status until(ObjectWait& wait, const json::Value* current, const manifests::Wait& policy) {
    const states::ReadinessChecker checker = ready_flag;
    states::WaitDefaults defaults;
    defaults.timeout = milliseconds(60000);
    const std::string goal = "ready";
    return run_sync(io, wait.until(current, checker, policy, defaults, goal));
  }
};

manifests::Wait timeout_policy() {
  manifests::Wait policy;
  policy.enabled = true;
  policy.timeout_seconds = 60;
  return policy;
}

}  // namespace

TEST_CASE("a wait on an object that is already ready sends no request") {
  Harness harness;
  auto wait = harness.wait(true);
  json::Document current = json::parse(config_map("yes", 5)).value();
  CHECK(harness.until(wait, &current, timeout_policy()).ok());
  CHECK(harness.fake.requests().empty());
}

TEST_CASE("a time-bounded wait watches the object from the version it was read at until it is ready") {
  Harness harness;
  harness.fake.stream({event("MODIFIED", config_map("no", 6)), event("MODIFIED", config_map("yes", 7))});
  auto wait = harness.wait(true);
  json::Document current = json::parse(config_map("no", 5)).value();
  CHECK(harness.until(wait, &current, timeout_policy()).ok());
  REQUIRE(harness.fake.requests().size() == 1);
  const Request& watch = harness.fake.requests()[0];
  CHECK(watch.path == "/api/v1/namespaces/default/configmaps");
  CHECK(query_value(watch, "watch") == "true");
  CHECK(query_value(watch, "fieldSelector") == "metadata.name=web");
  CHECK(query_value(watch, "resourceVersion") == "5");
  CHECK(query_value(watch, "timeoutSeconds") == "60");
  CHECK(harness.slept.empty());
}

TEST_CASE("a watch that expired (410) is resumed from a fresh read, without a resourceVersion") {
  Harness harness;
  harness.fake.stream({event("ERROR", R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})")});
  harness.fake.respond(200, config_map("no", 40));
  harness.fake.stream({event("ADDED", config_map("no", 40)), event("MODIFIED", config_map("yes", 41))});
  auto wait = harness.wait(true);
  json::Document current = json::parse(config_map("no", 5)).value();
  CHECK(harness.until(wait, &current, timeout_policy()).ok());
  REQUIRE(harness.fake.requests().size() == 3);
  CHECK(query_value(harness.fake.requests()[0], "resourceVersion") == "5");
  CHECK(harness.fake.requests()[1].query.empty());  // the GET
  CHECK(query_value(harness.fake.requests()[2], "watch") == "true");
  CHECK(query_value(harness.fake.requests()[2], "resourceVersion").empty());
}

TEST_CASE("readiness that cannot come ends the wait at once with the reason") {
  Harness harness;
  harness.fake.stream({event("MODIFIED", config_map("never", 6))});
  auto wait = harness.wait(true);
  json::Document current = json::parse(config_map("no", 5)).value();
  Status outcome = harness.until(wait, &current, timeout_policy());
  REQUIRE_FALSE(outcome.ok());
  CHECK(outcome.error().kind == ErrorKind::invalid);
  CHECK(outcome.error().message == "ConfigMap/default/web will not become ready: data.ready is never");
}

TEST_CASE("a refused watch falls back to polling through the injected sleep") {
  Harness harness;
  harness.fake.refuse_stream(Error(ErrorKind::connection, "refused"));
  harness.fake.respond(200, config_map("no", 6));
  harness.fake.respond(200, config_map("yes", 7));
  auto wait = harness.wait(true);
  json::Document current = json::parse(config_map("no", 5)).value();
  CHECK(harness.until(wait, &current, timeout_policy()).ok());
  REQUIRE(harness.fake.requests().size() == 3);
  CHECK(harness.fake.requests()[1].path == "/api/v1/namespaces/default/configmaps/web");
  CHECK(harness.slept.size() == 2);
}

TEST_CASE("a wait counted in attempts polls that many times and says so when it runs out") {
  Harness harness;
  harness.fake.respond(200, config_map("no", 6));
  harness.fake.respond(200, config_map("still no", 7));
  auto wait = harness.wait(true);  // attempts never watch
  json::Document current = json::parse(config_map("no", 5)).value();
  manifests::Wait policy;
  policy.attempts = 3;
  policy.sleep_seconds = 2;
  Status outcome = harness.until(wait, &current, policy);
  REQUIRE_FALSE(outcome.ok());
  CHECK(outcome.error().kind == ErrorKind::timeout);
  CHECK(outcome.error().message ==
        "timed out after 3 checks waiting for ConfigMap/default/web to be ready: data.ready is still no");
  CHECK(harness.fake.requests().size() == 2);
  CHECK(harness.slept == std::vector<milliseconds>{milliseconds(2000), milliseconds(2000)});
}

TEST_CASE("a deleted object is gone at a 404, or when one of another UID stands in its place") {
  SECTION("404 at the first read: no watch") {
    Harness harness;
    harness.fake.respond(404, not_found);
    auto wait = harness.wait(true);
    manifests::Wait policy;
    CHECK(run_sync(harness.io, wait.until_gone(policy, milliseconds(60000), "uid-1")).ok());
    CHECK(harness.fake.requests().size() == 1);
  }
  SECTION("watched until DELETED") {
    Harness harness;
    harness.fake.respond(200, config_map("no", 5));
    harness.fake.stream({event("DELETED", config_map("no", 6))});
    auto wait = harness.wait(true);
    manifests::Wait policy;
    CHECK(run_sync(harness.io, wait.until_gone(policy, milliseconds(60000), "uid-1")).ok());
    CHECK(harness.fake.requests().size() == 2);
  }
  SECTION("polled until another UID") {
    Harness harness;
    harness.fake.respond(200, config_map("no", 5));
    harness.fake.respond(200, config_map("no", 9, "uid-2"));
    auto wait = harness.wait(false);
    manifests::Wait policy;
    CHECK(run_sync(harness.io, wait.until_gone(policy, milliseconds(60000), "uid-1")).ok());
    CHECK(harness.slept == std::vector<milliseconds>{milliseconds(200)});
  }
}

TEST_CASE("a read the caller's filter refuses is never taken for a missing object") {
  Harness harness;
  harness.fake.respond(404, "404 page not found");  // a path the server does not serve
  auto wait = harness.wait(true, [](Result<json::Document> answer) -> Result<json::Document> {
    if (!answer.ok() && answer.error().resource_not_served) {
      return Error(ErrorKind::unsupported, "not served");
    }
    return answer;
  });
  manifests::Wait policy;
  Status outcome = run_sync(harness.io, wait.until_gone(policy, milliseconds(60000), "uid-1"));
  REQUIRE_FALSE(outcome.ok());
  CHECK(outcome.error().kind == ErrorKind::unsupported);
  CHECK(outcome.error().message == "cannot read ConfigMap/default/web: not served");
}

TEST_CASE("a wait for an object the cluster makes polls until it exists, or says why it was expected") {
  SECTION("made at the second check") {
    Harness harness;
    harness.fake.respond(404, not_found);
    harness.fake.respond(200, config_map("no", 5));
    auto wait = harness.wait(false);
    CHECK(run_sync(harness.io, wait.until_exists(milliseconds(30000), "the cluster makes it")).ok());
    CHECK(harness.slept == std::vector<milliseconds>{milliseconds(50)});
  }
  SECTION("never made") {
    Harness harness;
    harness.fake.handle([](const Request&) -> Result<Response> {
      Response missing;
      missing.status = 404;
      missing.body = not_found;
      return missing;
    });
    auto wait = harness.wait(false);
    Status outcome = run_sync(harness.io, wait.until_exists(milliseconds(3000), "the cluster makes it"));
    REQUIRE_FALSE(outcome.ok());
    CHECK(outcome.error().kind == ErrorKind::timeout);
    CHECK(outcome.error().message ==
          "timed out after 3 s waiting for ConfigMap/default/web to be made: the cluster makes it");
  }
}

TEST_CASE("durations read as messages name them") {
  CHECK(states::duration_text(milliseconds(300000)) == "5 min");
  CHECK(states::duration_text(milliseconds(30000)) == "30 s");
  CHECK(states::duration_text(milliseconds(1500)) == "1500 ms");
}

}  // namespace waits_test
