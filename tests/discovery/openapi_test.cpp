// The server's OpenAPI v3 schemas: the index as recorded (recording 09: JSON served as
// text/plain), a kind's schema found by x-kubernetes-group-version-kind, documents
// fetched once (concurrent callers share the read) and kept on disk by their hash, so
// that the next run sends only the index request.
#include "discovery/openapi.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "core/dynamic_client.hpp"
#include "tests/support/fake_transport.hpp"
#include "tests/support/recordings.hpp"
#include "tests/support/temp_dir.hpp"

namespace openapi_test {

using namespace kstate;
using namespace kstate::discovery;
using kstate::testing::FakeTransport;
using kstate::testing::TempDir;

namespace {

const char* const apps_hash =
    "1A8176311B87DEF4837402B5C136BA70F859BED9F237FD1D24426580D27553E199ED2E9093C54698A8B7BC9061CA0C097149D0151AA4019F54"
    "201DC2CD373D3B";

std::string apps_document() {
  return kstate::testing::read_file(KSTATE_SOURCE_DIR "/tests/states/data/openapi-apps-v1.json");
}

// Answers the recorded index, and the apps/v1 document at its URL.
void serve(FakeTransport& transport, int& index_requests, int& document_requests) {
  transport.handle([&](const Request& request) -> Result<Response> {
    Response response;
    response.status = 200;
    if (request.path == "/openapi/v3") {
      ++index_requests;
      auto recorded = kstate::testing::recorded_response("09-openapi-v3-index.json");
      response.headers = recorded.headers;
      response.body = recorded.body;
    } else if (request.path == "/openapi/v3/apis/apps/v1" && request.target().find(apps_hash) != std::string::npos) {
      ++document_requests;
      response.body = apps_document();
    } else {
      response.status = 404;
      response.body = "404 page not found\n";
    }
    return response;
  });
}

}  // namespace

TEST_CASE("the recorded OpenAPI v3 index maps group versions to hashed URLs", "[openapi]") {
  auto index = parse_openapi_index(kstate::testing::recorded_response("09-openapi-v3-index.json").body);
  REQUIRE(index.ok());
  CHECK(index->size() == 20);  // the recording keeps the first 20 paths
  CHECK(index->at("apis/apps/v1") == std::string("/openapi/v3/apis/apps/v1?hash=") + apps_hash);
  CHECK(index->count(openapi_index_key("", "v1")) == 1);
  CHECK(openapi_index_key("apps", "v1") == "apis/apps/v1");
  CHECK(openapi_hash(index->at("apis/apps/v1")) == apps_hash);
  CHECK(openapi_hash("/openapi/v3/apis/apps/v1?hash=../../etc").empty());
  CHECK(openapi_hash("/openapi/v3/apis/apps/v1").empty());
  CHECK_FALSE(parse_openapi_index("404 page not found\n").ok());
}

TEST_CASE("a kind's schema is found by the group-version-kind it lists", "[openapi]") {
  auto document = json::parse(apps_document());
  REQUIRE(document.ok());
  auto found = find_published_schema(*document, {"apps", "v1", "Deployment"});
  REQUIRE(found);
  CHECK(found->name == "io.k8s.api.apps.v1.Deployment");
  CHECK(json::find(*found->components, "io.k8s.api.apps.v1.DeploymentSpec") != nullptr);
  CHECK_FALSE(find_published_schema(*document, {"apps", "v1", "StatefulSet"}));
  CHECK_FALSE(find_published_schema(*document, {"apps", "v2", "Deployment"}));
}

TEST_CASE("documents are read once, shared by concurrent callers, and kept on disk by their hash", "[openapi]") {
  TempDir cache;
  // As discovery keeps it: <cache-dir>/discovery/<server>/ (folders only kstate's user
  // may write, discovery/cache.hpp).
  const auto folder = cache.path() / "discovery" / "server";
  int index_requests = 0;
  int document_requests = 0;
  {
    boost::asio::io_context io;
    FakeTransport transport;
    serve(transport, index_requests, document_requests);
    OpenApiSchemas schemas(transport, folder.string());
    int found = 0;
    auto ask = [&](GroupVersionKind gvk) -> boost::asio::awaitable<void> {
      auto schema = co_await schemas.schema_of(gvk);
      CHECK(schema.ok());
      found += schema.ok() && schema->has_value() ? 1 : 0;
    };
    for (const char* kind : {"Deployment", "Deployment", "StatefulSet"}) {
      boost::asio::co_spawn(io, ask(GroupVersionKind{"apps", "v1", kind}), boost::asio::detached);
    }
    io.run();
    CHECK(found == 2);  // the document lists no StatefulSet
    CHECK(index_requests == 1);
    CHECK(document_requests == 1);
    CHECK(schemas.requests() == 2);
    // A group version the index does not list has no schema, and costs no request.
    io.restart();
    auto unknown = kstate::run_sync(io, schemas.schema_of(GroupVersionKind{"example.com", "v1", "Widget"}));
    REQUIRE(unknown.ok());
    CHECK_FALSE(unknown->has_value());
    CHECK(schemas.requests() == 2);
  }
  // A later run (a new OpenApiSchemas) asking for the Deployment's schema.
  auto next_run = [&] {
    boost::asio::io_context io;
    FakeTransport transport;
    serve(transport, index_requests, document_requests);
    OpenApiSchemas schemas(transport, folder.string());
    auto schema = kstate::run_sync(io, schemas.schema_of(GroupVersionKind{"apps", "v1", "Deployment"}));
    REQUIRE(schema.ok());
    CHECK(schema->has_value());
  };
  // The index again, the document from the disk cache.
  next_run();
  CHECK(index_requests == 2);
  CHECK(document_requests == 1);
  // A corrupt cache file is not trusted: the document is read again.
  auto file = folder / ("openapi-v3-" + std::string(apps_hash) + ".json");
  REQUIRE(std::filesystem::exists(file));
  std::string content = kstate::testing::read_file(file);
  content.back() = content.back() == '}' ? ' ' : '}';
  kstate::testing::write_file(file, content);
  next_run();
  CHECK(document_requests == 2);
}

TEST_CASE("a server without OpenAPI v3 is an error the caller can report", "[openapi]") {
  boost::asio::io_context io;
  FakeTransport transport;
  transport.respond(404, "404 page not found\n", {{"content-type", "text/plain; charset=utf-8"}});
  OpenApiSchemas schemas(transport, "");
  auto schema = kstate::run_sync(io, schemas.schema_of(GroupVersionKind{"apps", "v1", "Deployment"}));
  REQUIRE_FALSE(schema.ok());
  CHECK(schema.error().kind == ErrorKind::not_found);
  CHECK(schema.error().message.starts_with("reading the server's OpenAPI v3 index (/openapi/v3): "));
}

}  // namespace openapi_test
