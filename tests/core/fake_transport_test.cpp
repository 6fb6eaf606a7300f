// DynamicClient over the fake transport (tests/support/fake_transport.hpp): exact
// requests for paged lists, typed errors from Status bodies, watch events split
// anywhere across reads, a stream that ends inside an event; and the retry policy
// walked through whole storms with injected randomness and no sleeping (total wait,
// attempts, what is never repeated).
#include "tests/support/fake_transport.hpp"

#include <catch2/catch.hpp>
#include <thread>

#include "core/dynamic_client.hpp"
#include "core/retry.hpp"
#include "tests/support/recordings.hpp"

namespace fake_transport_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using kstate::testing::query_value;
using namespace std::chrono_literals;

namespace {

ApiResource deployments() {
  ApiResource resource;
  resource.group = "apps";
  resource.version = "v1";
  resource.kind = "Deployment";
  resource.plural = "deployments";
  resource.namespaced = true;
  return resource;
}

}  // namespace

TEST_CASE("DynamicClient: LIST items get the kind and apiVersion a real server leaves out (recordings 16, 65)",
          "[client][fake]") {
  // A real kube-apiserver sends ConfigMapList items without kind/apiVersion; custom
  // resources' lists keep them. Either way the client hands out complete objects.
  FakeTransport fake;
  fake.respond(200, kstate::testing::recorded_response_text("16-list-configmaps.json"));
  fake.respond(200, kstate::testing::recorded_response_text("65-list-crs.json"));
  DynamicClient client(fake);
  boost::asio::io_context io;
  ApiResource configmaps;
  configmaps.version = "v1";
  configmaps.kind = "ConfigMap";
  configmaps.plural = "configmaps";
  configmaps.namespaced = true;
  auto listed = run_sync(io, client.list(configmaps, "rec-1"));
  REQUIRE(listed.ok());
  const json::Value* items = json::find(*listed, "items");
  REQUIRE(items->Size() == 3);
  for (const auto& item : items->GetArray()) {
    CHECK(json::string_or(json::find(item, "kind"), "") == "ConfigMap");
    CHECK(json::string_or(json::find(item, "apiVersion"), "") == "v1");
  }
  CHECK(json::string_or(json::find(*listed, "kind"), "") == "ConfigMapList");

  json::Document recorded = kstate::testing::recorded_response_body("65-list-crs.json");
  const std::string custom_kind(json::string_or(json::find((*json::find(recorded, "items"))[0], "kind"), ""));
  const std::string custom_version(json::string_or(json::find((*json::find(recorded, "items"))[0], "apiVersion"), ""));
  REQUIRE_FALSE(custom_kind.empty());
  ApiResource custom;
  custom.group = custom_version.substr(0, custom_version.find('/'));
  custom.version = custom_version.substr(custom_version.find('/') + 1);
  custom.kind = custom_kind;
  custom.plural = "gizmos";
  custom.namespaced = true;
  auto custom_listed = run_sync(io, client.list(custom, "rec-1"));
  REQUIRE(custom_listed.ok());
  for (const auto& item : json::find(*custom_listed, "items")->GetArray()) {
    CHECK(json::string_or(json::find(item, "kind"), "") == custom_kind);
    CHECK(json::string_or(json::find(item, "apiVersion"), "") == custom_version);
  }
}

TEST_CASE("complete_list_items leaves lists it cannot read alone", "[client][fake]") {
  auto parsed = json::parse(R"({"kind":"Status","items":[{"metadata":{}}]})");
  REQUIRE(parsed.ok());
  complete_list_items(*parsed);
  CHECK(json::find((*json::find(*parsed, "items"))[0], "kind") == nullptr);
  auto item_kept = json::parse(R"({"kind":"ThingList","apiVersion":"x/v1","items":[{"kind":"Other"},3]})");
  REQUIRE(item_kept.ok());
  complete_list_items(*item_kept);
  CHECK(json::string_or(json::find((*json::find(*item_kept, "items"))[0], "kind"), "") == "Other");
  CHECK(json::string_or(json::find((*json::find(*item_kept, "items"))[0], "apiVersion"), "") == "x/v1");
}

TEST_CASE("DynamicClient over the fake transport: paged list, typed errors", "[client][fake]") {
  FakeTransport fake;
  fake.respond(200, R"({"kind":"DeploymentList","metadata":{"resourceVersion":"7","continue":"page2"},)"
                    R"("items":[{"metadata":{"name":"a"}}]})");
  fake.respond(200,
               R"({"kind":"DeploymentList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"b"}}]})");
  fake.respond(404, R"({"kind":"Status","status":"Failure","reason":"NotFound","message":"deployments.apps \"c\" )"
                    R"(not found","code":404})");
  DynamicClient client(fake);
  boost::asio::io_context io;
  ListOptions options;
  options.limit = 1;
  auto listed = run_sync(io, client.list(deployments(), "prod", options));
  REQUIRE(listed.ok());
  CHECK(json::find(*listed, "items")->Size() == 2);
  CHECK(json::find_path(*listed, {"metadata", "continue"}) == nullptr);
  REQUIRE(fake.requests().size() == 2);
  CHECK(fake.requests()[0].path == "/apis/apps/v1/namespaces/prod/deployments");
  CHECK(query_value(fake.requests()[0], "limit") == "1");
  CHECK(query_value(fake.requests()[1], "continue") == "page2");

  auto missing = run_sync(io, client.get(deployments(), "prod", "c"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::not_found);
  CHECK(missing.error().reason == "NotFound");
  CHECK(fake.stats().requests["GET 404"] == 1);
}

TEST_CASE("DynamicClient::list_pages hands over each page as it comes and stops at the first error", "[client][fake]") {
  FakeTransport fake;
  auto page = [](const std::string& name, const std::string& continue_token) {
    return R"({"kind":"DeploymentList","metadata":{"resourceVersion":"7")" +
           (continue_token.empty() ? std::string() : R"(,"continue":")" + continue_token + R"(")") +
           R"(},"items":[{"metadata":{"name":")" + name + R"("}}]})";
  };
  fake.respond(200, page("a", "token-1"));
  fake.respond(200, page("b", "token-2"));
  fake.respond(200, page("c", ""));
  DynamicClient client(fake);
  boost::asio::io_context io;
  std::vector<std::string> seen;
  auto record = [&](json::Document& list) -> Status {
    for (const auto& item : json::find(list, "items")->GetArray()) {
      seen.emplace_back(json::string_or(json::find_path(item, {"metadata", "name"}), ""));
    }
    return ok_status();
  };
  auto listed = run_sync(io, client.list_pages(deployments(), "", ListOptions{}, record));
  REQUIRE(listed.ok());
  CHECK(seen == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(fake.requests().size() == 3);
  CHECK(fake.requests()[0].path == "/apis/apps/v1/deployments");
  CHECK(query_value(fake.requests()[0], "limit") == "500");  // kubectl's chunk size when none is given
  CHECK(query_value(fake.requests()[0], "continue").empty());
  CHECK(query_value(fake.requests()[1], "continue") == "token-1");
  CHECK(query_value(fake.requests()[2], "continue") == "token-2");
  CHECK(query_value(fake.requests()[2], "limit") == "500");

  // A failed page (403) ends the listing with its typed error.
  fake.respond(200, page("a", "token-1"));
  fake.respond(403, R"({"kind":"Status","status":"Failure","reason":"Forbidden","message":"deployments.apps is )"
                    R"(forbidden","code":403})");
  seen.clear();
  auto forbidden = run_sync(io, client.list_pages(deployments(), "", ListOptions{}, record));
  REQUIRE_FALSE(forbidden.ok());
  CHECK(forbidden.error().kind == ErrorKind::forbidden);
  CHECK(seen == std::vector<std::string>{"a"});

  // So does the handler's own error: no further page is asked for.
  fake.respond(200, page("a", "token-1"));
  auto before = fake.requests().size();
  auto refused = run_sync(io, client.list_pages(deployments(), "", ListOptions{}, [](json::Document&) -> Status {
    return Error(ErrorKind::invalid, "not a list of deployments");
  }));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == "not a list of deployments");
  CHECK(fake.requests().size() == before + 1);
}

TEST_CASE("DynamicClient parses large and small answers, and a truncated one is an error", "[client][fake]") {
  FakeTransport fake;
  std::string items;
  for (int i = 0; i < 50; ++i) {
    items += std::string(i == 0 ? "" : ",") + R"({"metadata":{"name":"item-)" + std::to_string(i) + R"("}})";
  }
  fake.respond(200, R"({"kind":"DeploymentList","metadata":{"resourceVersion":"7"},"items":[)" + items + "]}");
  fake.respond(200, R"({"kind":"Deployment"})");
  fake.respond(200, R"({"kind":"DeploymentList","items":[)" + items + "]");  // truncated
  DynamicClient client(fake);
  boost::asio::io_context io;
  auto listed = run_sync(io, client.list(deployments(), "prod"));
  auto small = run_sync(io, client.get(deployments(), "prod", "d"));
  auto truncated = run_sync(io, client.list(deployments(), "prod"));

  REQUIRE(listed.ok());
  CHECK(json::find(*listed, "items")->Size() == 50);
  CHECK(json::string_or(json::find_path((*listed)["items"][49], {"metadata", "name"}), "") == "item-49");
  REQUIRE(small.ok());
  CHECK(json::string_or(json::find(*small, "kind"), "") == "Deployment");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().kind == ErrorKind::invalid);
  CHECK(truncated.error().message.find("the server's answer is not JSON") != std::string::npos);
}

TEST_CASE("watch over the fake transport: events split across reads, a stream cut inside an event",
          "[client][fake][watch]") {
  std::string events = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
                       "\n"
                       R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})"
                       "\n";
  FakeTransport fake;
  // Split in three pieces, one of them in the middle of a line; then a clean end.
  fake.stream({events.substr(0, 10), events.substr(10, 70), events.substr(80)});
  // Cut in the middle of the second event.
  fake.stream({events.substr(0, events.size() - 5)});
  DynamicClient client(fake);
  boost::asio::io_context io;
  auto collect = [&](std::vector<std::string>& types) {
    return run_sync(io, [&]() -> asio::awaitable<Status> {
      auto resource = deployments();
      std::string ns = "prod";
      ListOptions options;
      auto watch = co_await client.watch(resource, ns, options);
      if (!watch) {
        co_return watch.error();
      }
      for (;;) {
        auto event = co_await watch->next();
        if (!event) {
          co_return event.error();
        }
        if (!event.value()) {
          co_return ok_status();
        }
        types.push_back(to_string(event.value()->type));
      }
    }());
  };
  std::vector<std::string> whole;
  REQUIRE(collect(whole).ok());
  CHECK(whole == std::vector<std::string>{"ADDED", "MODIFIED"});
  std::vector<std::string> cut;
  auto ended = collect(cut);
  REQUIRE_FALSE(ended.ok());
  CHECK(ended.error().kind == ErrorKind::connection);
  CHECK(cut == std::vector<std::string>{"ADDED"});
  CHECK(query_value(fake.requests()[0], "watch") == "true");
}

TEST_CASE("retry policy walked through storms: total wait, attempts, no blind re-POST", "[retry][fake]") {
  RetryPolicy policy;
  policy.max_retries = 4;
  policy.backoff_base = 100ms;
  policy.backoff_max = 1s;
  Request get;
  get.verb = "GET";
  get.idempotent = true;
  Request create;
  create.verb = "POST";
  Request apply;
  apply.verb = "PATCH";
  apply.idempotent = true;

  // Runs `request` against a server answering `error` every time; returns the waits.
  auto storm = [&](const Request& request, const Error& error, bool sent, double random01) {
    std::vector<std::chrono::milliseconds> waits;
    for (int retries = 0;; ++retries) {
      auto delay = retry_delay(policy, request, error, sent, retries, random01);
      if (!delay) {
        return waits;
      }
      waits.push_back(*delay);
    }
  };
  auto total = [](const std::vector<std::chrono::milliseconds>& waits) {
    std::chrono::milliseconds sum{0};
    for (auto wait : waits) {
      sum += wait;
    }
    return sum;
  };

  Error throttled(ErrorKind::too_many_requests, "throttled");
  throttled.http_status = 429;
  throttled.retry_after_seconds = 2;
  auto waits = storm(create, throttled, true, 0.5);
  CHECK(waits.size() == 4);   // bounded
  CHECK(total(waits) == 8s);  // 4 x Retry-After, even for a POST: the server did not act on it

  Error unavailable(ErrorKind::server_error, "unavailable");
  unavailable.http_status = 503;
  auto backoffs = storm(get, unavailable, true, 0.0);
  CHECK(backoffs == std::vector<std::chrono::milliseconds>{50ms, 100ms, 200ms, 400ms});  // jitter 0: half of d
  auto capped = storm(get, unavailable, true, 0.999);
  CHECK(capped.back() <= 1s);
  CHECK(storm(create, unavailable, true, 0.0).empty());  // a 503 without Retry-After: a create may have happened

  Error timeout(ErrorKind::timeout, "deadline exceeded");
  CHECK(storm(apply, timeout, true, 0.0).size() == 4);    // apply is idempotent
  CHECK(storm(create, timeout, true, 0.0).empty());       // sent, no answer: never repeated
  CHECK(storm(create, timeout, false, 0.0).size() == 4);  // never left the process: safe

  for (int status : {400, 401, 403, 404, 409, 410, 422}) {
    Error final_error(ErrorKind::invalid, "client error");
    final_error.http_status = status;
    CHECK(storm(get, final_error, true, 0.0).empty());
  }
  WARN("429 storm, Retry-After 2 s, 4 retries: " << total(waits).count() << " ms of waiting; 503 backoff "
                                                 << total(backoffs).count() << " ms");
}

}  // namespace fake_transport_test
