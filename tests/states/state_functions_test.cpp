// The three state functions (states/object_present.cpp, states/state_functions.cpp)
// run through the engine against the fake transport, a small in-memory API server:
// object_present creates what does not exist and sends no write for an object that is
// already good, applies (server-side, forced, as kstate) what changed, decides again
// after a create answered 409 AlreadyExists; object_absent deletes and waits until the
// object is gone; test mode sends every write with dryRun=All and changes nothing.
#include <catch2/catch.hpp>
#include <map>

#include "states/engine.hpp"
#include "tests/support/api_resources.hpp"
#include "tests/support/fake_transport.hpp"

namespace state_functions_test {

using namespace kstate;
using kstate::testing::FakeTransport;
using kstate::testing::query_value;
using manifests::Function;
using states::Change;
using std::chrono::milliseconds;

namespace {

constexpr const char* web_path = "/api/v1/namespaces/default/configmaps/web";
constexpr const char* collection_path = "/api/v1/namespaces/default/configmaps";
constexpr const char* managed_by = "app.kubernetes.io/managed-by";

struct ConfigMapResolver final : states::KindResolver {
  asio::awaitable<Result<ApiResource>> resolve(const GroupVersionKind& gvk) override {
    if (gvk.group.empty() && gvk.version == "v1" && gvk.kind == "ConfigMap") {
      co_return kstate::testing::configmaps_resource();
    }
    co_return Error(ErrorKind::not_found, "no matches for kind \"" + gvk.kind + "\"");
  }
  asio::awaitable<Status> refresh() override { co_return ok_status(); }
};

Response answer(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

std::string status(int code, const std::string& reason) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":")" + reason + R"(","code":)" +
         std::to_string(code) + R"(,"message":"configmaps \"web\" )" + (code == 404 ? "not found" : "already exists") +
         R"(","details":{"name":"web","kind":"configmaps"}})";
}

// ConfigMap default/web on a small API server: GET, POST (create), PATCH (apply:
// the body becomes the object) and DELETE; a dryRun=All write changes nothing.
struct Server {
  FakeTransport fake;
  std::optional<std::string> web;  // the stored object
  // The next create finds the object made meanwhile by someone else: 409.
  std::optional<std::string> made_before_create;
  // GETs after a DELETE that still find the object (finalizers running).
  int reads_while_deleting = 0;
  // DELETEs answered "404 page not found" (a path not served, e.g. a proxy in front).
  bool delete_not_served = false;
  int next_uid = 1;

  Server() {
    fake.handle([this](const Request& request) -> Result<Response> { return serve(request); });
  }

  std::string stored(const json::Value& body) {
    json::Document object = json::copy(body);
    auto& metadata = json::ensure_object(object, "metadata", object.GetAllocator());
    if (json::find(metadata, "uid") == nullptr) {
      json::set_string(metadata, "uid", "uid-" + std::to_string(next_uid++), object.GetAllocator());
    }
    json::set_string(metadata, "resourceVersion", std::to_string(10 + next_uid), object.GetAllocator());
    return json::dump(object);
  }

  Result<Response> serve(const Request& request) {
    const bool dry_run = query_value(request, "dryRun") == "All";
    if (request.verb == "GET" && request.path == web_path) {
      if (!web) {
        return answer(404, status(404, "NotFound"));
      }
      std::string current = *web;
      if (reads_while_deleting > 0 && --reads_while_deleting == 0) {
        web.reset();
      }
      return answer(200, current);
    }
    if (request.verb == "POST" && request.path == collection_path) {
      if (made_before_create) {
        web = stored(json::parse(*made_before_create).value());
        made_before_create.reset();
        return answer(409, status(409, "AlreadyExists"));
      }
      std::string created = stored(json::parse(request.body).value());
      if (!dry_run) {
        web = created;
      }
      return answer(201, created);
    }
    if ((request.verb == "PATCH" || request.verb == "PUT") && request.path == web_path) {
      json::Document body = json::parse(request.body).value();
      if (web) {
        json::set_string(json::ensure_object(body, "metadata", body.GetAllocator()), "uid",
                         json::string_at(json::parse(*web).value(), {"metadata", "uid"}), body.GetAllocator());
      }
      std::string patched = stored(body);
      if (!dry_run) {
        web = patched;
      }
      return answer(200, patched);
    }
    if (request.verb == "DELETE" && request.path == web_path) {
      if (delete_not_served) {
        return answer(404, "404 page not found");
      }
      if (!web) {
        return answer(404, status(404, "NotFound"));
      }
      std::string deleted = *web;
      if (!dry_run && reads_while_deleting == 0) {
        web.reset();
      }
      return answer(200, deleted);
    }
    return answer(500, R"({"kind":"Status","status":"Failure","reason":"InternalError","code":500,)"
                       R"("message":"not served by this test"})");
  }

  std::vector<std::string> requests() const {
    std::vector<std::string> sent;
    for (const auto& request : fake.requests()) {
      sent.push_back(request.verb + " " + request.path);
    }
    return sent;
  }
  std::size_t writes() const {
    std::size_t count = 0;
    for (const auto& request : fake.requests()) {
      count += request.verb != "GET" ? 1 : 0;
    }
    return count;
  }
};

struct Harness {
  Server server;
  DynamicClient client{server.fake};
  ConfigMapResolver resolver;
  states::EngineOptions options;
  std::vector<milliseconds> slept;

  Harness() {
    options.ownership_labels = {{managed_by, "kstate"}};
    options.watch_waits = false;
    options.sleep = [this](milliseconds duration) -> boost::asio::awaitable<void> {
      slept.push_back(duration);
      co_return;
    };
  }

  states::StateResult run(Function function, const std::string& data, manifests::Wait wait = {},
                          manifests::Strategy strategy = manifests::Strategy::apply) {
    std::vector<manifests::State> states(1);
    states[0].id = "web";
    states[0].function = function;
    states[0].strategy = strategy;
    states[0].strategy_given = strategy != manifests::Strategy::apply;
    states[0].wait = wait;
    states[0].source = {"states.yaml", 1, 1};
    states[0].object = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web",)"
                                   R"("namespace":"default"},"data":{"key":")" +
                                   data + R"("}})")
                           .value();
    boost::asio::io_context io;
    states::Engine engine(client, resolver, options);
    states::RunReport report = run_sync(io, engine.run(states));
    REQUIRE(report.results.size() == 1);
    return std::move(report.results[0]);
  }

  json::Document stored() const { return json::parse(server.web.value()).value(); }
};

}  // namespace

TEST_CASE("object_present creates an object that does not exist, then sends nothing while it is good") {
  Harness harness;
  auto created = harness.run(Function::object_present, "one");
  CHECK(created.result == std::optional<bool>(true));
  CHECK(created.change == Change::created);
  // A named object is created by its first server-side apply.
  CHECK(harness.server.requests() ==
        std::vector<std::string>{std::string("GET ") + web_path, std::string("PATCH ") + web_path});
  // What it sent: the manifest with kstate's labels and its configuration hash.
  CHECK(json::string_at(harness.stored(), {"metadata", "labels", managed_by}) == "kstate");
  CHECK_FALSE(json::string_at(harness.stored(), {"metadata", "annotations", "kstate.io/config-hash"}).empty());
  CHECK(json::string_at(harness.stored(), {"data", "key"}) == "one");

  const std::size_t before = harness.server.fake.requests().size();
  auto again = harness.run(Function::object_present, "one");
  CHECK(again.result == std::optional<bool>(true));
  CHECK(again.change == Change::none);
  CHECK(again.comment == "already good");
  CHECK(harness.server.fake.requests().size() == before + 1);  // its read only
  CHECK(harness.server.writes() == 1);
}

TEST_CASE("object_present applies a changed object: server-side apply, forced, as kstate, strict") {
  Harness harness;
  (void)harness.run(Function::object_present, "one");
  auto updated = harness.run(Function::object_present, "two");
  CHECK(updated.result == std::optional<bool>(true));
  CHECK(updated.change == Change::updated);
  const Request& patch = harness.server.fake.requests().back();
  CHECK(patch.verb == "PATCH");
  CHECK(patch.path == web_path);
  CHECK(patch.content_type == "application/apply-patch+yaml");
  CHECK(query_value(patch, "fieldManager") == "kstate");
  CHECK(query_value(patch, "force") == "true");
  CHECK(query_value(patch, "fieldValidation") == "Strict");
  CHECK(query_value(patch, "dryRun").empty());
  CHECK(json::string_at(harness.stored(), {"data", "key"}) == "two");
  CHECK(updated.changes.HasMember("diff"));
}

TEST_CASE("object_present whose create is answered 409 AlreadyExists reads the object and decides again") {
  Harness harness;
  // `strategy: replace` creates with a POST (apply creates with its PATCH).
  // Made by someone else between kstate's read and its create (e.g. the controller's
  // kube-root-ca.crt in a new namespace): without kstate's labels, so it is adopted.
  harness.server.made_before_create =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default"},"data":{"key":"x"}})";
  auto result = harness.run(Function::object_present, "one", {}, manifests::Strategy::replace);
  CHECK(result.result == std::optional<bool>(true));
  CHECK(result.change == Change::adopted);
  // The replace keeps the resourceVersion it read, so that a write in between fails.
  CHECK(harness.server.requests() ==
        std::vector<std::string>{std::string("GET ") + web_path, std::string("POST ") + collection_path,
                                 std::string("GET ") + web_path, std::string("PUT ") + web_path});
  const Request& put = harness.server.fake.requests().back();
  CHECK_FALSE(json::string_at(json::parse(put.body).value(), {"metadata", "resourceVersion"}).empty());
  CHECK(json::string_at(harness.stored(), {"data", "key"}) == "one");
  CHECK(json::string_at(harness.stored(), {"metadata", "labels", managed_by}) == "kstate");
}

TEST_CASE("object_present without adopt leaves an existing object it does not own unchanged") {
  Harness harness;
  harness.options.adopt = false;
  harness.server.web =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default","uid":"u"},"data":{}})";
  auto result = harness.run(Function::object_present, "one");
  CHECK(result.result == std::optional<bool>(false));
  CHECK(result.comment.find("already exists and is not managed by kstate") != std::string::npos);
  CHECK(harness.server.writes() == 0);
}

TEST_CASE("object_absent deletes the object and waits until it is gone") {
  Harness harness;
  (void)harness.run(Function::object_present, "one");
  const std::size_t before = harness.server.fake.requests().size();
  harness.server.reads_while_deleting = 2;  // its finalizers take two reads
  manifests::Wait until_gone;
  until_gone.enabled = true;
  auto deleted = harness.run(Function::object_absent, "one", until_gone);
  CHECK(deleted.result == std::optional<bool>(true));
  CHECK(deleted.change == Change::deleted);
  const std::vector<std::string> all = harness.server.requests();
  const std::vector<std::string> sent(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  CHECK(sent == std::vector<std::string>{std::string("GET ") + web_path, std::string("DELETE ") + web_path,
                                         std::string("GET ") + web_path, std::string("GET ") + web_path});
  CHECK(query_value(harness.server.fake.requests()[before + 1], "propagationPolicy") == "Background");
  CHECK_FALSE(harness.slept.empty());  // polled through the injected sleep
  CHECK_FALSE(harness.server.web);

  auto again = harness.run(Function::object_absent, "one", until_gone);
  CHECK(again.result == std::optional<bool>(true));
  CHECK(again.comment == "already absent");
  CHECK(again.change == Change::none);
}

TEST_CASE("object_absent whose DELETE is answered 404 page not found fails: the object is not known gone") {
  Harness harness;
  (void)harness.run(Function::object_present, "one");
  harness.server.delete_not_served = true;
  auto result = harness.run(Function::object_absent, "one");
  CHECK(result.result == std::optional<bool>(false));
  CHECK(result.comment.find("already absent") == std::string::npos);
  CHECK(harness.server.web.has_value());
}

TEST_CASE("test mode sends its writes with dryRun=All and changes nothing") {
  Harness harness;
  harness.options.test_mode = true;
  auto would_create = harness.run(Function::object_present, "one");
  CHECK_FALSE(would_create.result.has_value());  // a change pending
  CHECK(would_create.change == Change::created);
  CHECK(would_create.comment == "would be created");
  const Request& create = harness.server.fake.requests().back();
  CHECK(create.verb == "PATCH");
  CHECK(query_value(create, "dryRun") == "All");
  CHECK_FALSE(harness.server.web);

  harness.options.test_mode = false;
  (void)harness.run(Function::object_present, "one");
  harness.options.test_mode = true;
  auto would_delete = harness.run(Function::object_absent, "one");
  CHECK_FALSE(would_delete.result.has_value());
  CHECK(would_delete.change == Change::deleted);
  const Request& remove = harness.server.fake.requests().back();
  CHECK(remove.verb == "DELETE");
  CHECK(query_value(remove, "dryRun") == "All");
  CHECK(harness.server.web);
}

}  // namespace state_functions_test
