// Decoding of non-2xx API server answers into classified errors.
#include "core/response.hpp"

#include <catch2/catch.hpp>

#include "tests/support/recordings.hpp"

namespace response_test {

using namespace kstate;

TEST_CASE("a Status body becomes a typed error with reason, message and causes", "[response]") {
  auto error = error_from_response(422, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Deployment.apps \"web\" is invalid: spec.selector: Invalid value: field is immutable",
    "reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment",
    "causes":[{"reason":"FieldValueInvalid","message":"Invalid value: field is immutable","field":"spec.selector"}]},
    "code":422})");
  CHECK(error.kind == ErrorKind::invalid);
  CHECK(error.http_status == 422);
  CHECK(error.reason == "Invalid");
  REQUIRE(error.causes.size() == 1);
  CHECK(error.causes[0].field == "spec.selector");
  CHECK(error.causes[0].reason == "FieldValueInvalid");
  CHECK_FALSE(error.retryable());
}

TEST_CASE("status codes and reasons map to error kinds callers classify on", "[response]") {
  CHECK(error_from_response(404, R"({"kind":"Status","reason":"NotFound","message":"x not found"})").kind ==
        ErrorKind::not_found);
  CHECK(error_from_response(409, R"({"kind":"Status","reason":"AlreadyExists","message":"m"})").kind ==
        ErrorKind::already_exists);
  CHECK(error_from_response(409, R"({"kind":"Status","reason":"Conflict","message":"m"})").kind == ErrorKind::conflict);
  CHECK(error_from_response(403, "").kind == ErrorKind::forbidden);
  CHECK(error_from_response(401, "").kind == ErrorKind::unauthorized);
  CHECK(error_from_response(410, "").kind == ErrorKind::gone);
  auto throttled = error_from_response(429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down",
    "details":{"retryAfterSeconds":3}})");
  CHECK(throttled.kind == ErrorKind::too_many_requests);
  CHECK(throttled.retry_after_seconds == 3);
  CHECK(throttled.retryable());
  // The header wins over the body.
  CHECK(error_from_response(503, "upstream down", "7").retry_after_seconds == 7);
  auto unavailable = error_from_response(503, "upstream down");
  CHECK(unavailable.kind == ErrorKind::server_error);
  CHECK(unavailable.message == "the server responded with HTTP 503: upstream down");
  CHECK(unavailable.retry_after_seconds == -1);
}

TEST_CASE("server-side apply's 500 for an undeclared field is a manifest error naming the field (recordings 26, 66)",
          "[response]") {
  auto built_in = kstate::testing::recorded_response("26-apply-unknown-field-strict-500.json");
  auto error = error_from_response(built_in.status, built_in.body);
  CHECK(error.http_status == 500);
  CHECK(error.kind == ErrorKind::invalid);
  CHECK_FALSE(error.retryable());
  REQUIRE(error.causes.size() == 1);
  CHECK(error.causes[0].field == "metadata.annotation");
  CHECK(error.causes[0].message == "field not declared in schema");
  CHECK(error.describe() ==
        "the object does not match the server's schema for its kind\n  * metadata.annotation: field not declared in "
        "schema");

  auto custom = kstate::testing::recorded_response("66-apply-cr-unknown-field-500.json");
  auto cr_error = error_from_response(custom.status, custom.body);
  CHECK(cr_error.kind == ErrorKind::invalid);
  REQUIRE(cr_error.causes.size() == 1);
  CHECK(cr_error.causes[0].field == "spec.colour");

  // Several fields: structured-merge-diff lists them under "errors:".
  auto several = error_from_response(500, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"failed to create typed patch object (/web; apps/v1, Kind=Deployment): errors:\n  .spec.replicas: expected numeric (int or float), got string\n  .spec.template.spec.containers[name=\"web\"].imagePullPolicyy: field not declared in schema","code":500})");
  CHECK(several.kind == ErrorKind::invalid);
  REQUIRE(several.causes.size() == 2);
  CHECK(several.causes[0].field == "spec.replicas");
  CHECK(several.causes[0].message == "expected numeric (int or float), got string");
  CHECK(several.causes[1].field == R"(spec.template.spec.containers[name="web"].imagePullPolicyy)");

  // Any other 500 stays a server error.
  auto internal =
      error_from_response(500, R"({"kind":"Status","status":"Failure","message":"etcdserver: request timed out",
    "reason":"InternalError","code":500})");
  CHECK(internal.kind == ErrorKind::server_error);
  CHECK(internal.retryable());
}

TEST_CASE("a text/plain 404 is a path the server does not serve, not an unreadable answer (recordings 08, 13, 41)",
          "[response]") {
  auto unknown_group = kstate::testing::recorded_response("08-apis-unknown-group-404.json");
  auto error = error_from_response(unknown_group.status, unknown_group.body);
  CHECK(error.kind == ErrorKind::not_found);
  CHECK(error.resource_not_served);
  CHECK(error.message == "the server does not serve this resource (HTTP 404: 404 page not found)");
  // The JSON form of the same answer, for a resource unknown in a served group version.
  auto unknown_resource = error_from_response(404, R"({"kind":"Status","apiVersion":"v1","metadata":{},
    "status":"Failure","message":"the server could not find the requested resource","reason":"NotFound",
    "details":{},"code":404})");
  CHECK(unknown_resource.resource_not_served);
  // A missing object or namespace is named: the resource is served.
  auto missing_object = kstate::testing::recorded_response("13-get-configmap-404.json");
  CHECK_FALSE(error_from_response(missing_object.status, missing_object.body).resource_not_served);
  auto missing_namespace = kstate::testing::recorded_response("41-apply-missing-namespace-404.json");
  auto namespace_error = error_from_response(missing_namespace.status, missing_namespace.body);
  CHECK(namespace_error.kind == ErrorKind::not_found);
  CHECK_FALSE(namespace_error.resource_not_served);
}

TEST_CASE("Warning headers: RFC 7234 quoted texts, code 299 only, as recorded (recordings 27, 73)", "[response]") {
  auto unknown_field = kstate::testing::recorded_response("27-create-unknown-field-warn-201.json");
  Response response;
  response.headers = unknown_field.headers;
  CHECK(response.warnings() == std::vector<std::string>{R"(unknown field "metadata.annotation")"});
  auto job = kstate::testing::recorded_response("73-delete-job-default-orphan-200.json");
  response.headers = job.headers;
  REQUIRE(response.warnings().size() == 1);
  CHECK(response.warnings()[0].starts_with("child pods are preserved by default when jobs are deleted;"));

  CHECK(parse_warning_header(R"(299 - "a", 299 - "b \"quoted\"")") == std::vector<std::string>{"a", R"(b "quoted")"});
  CHECK(parse_warning_header(R"(299 kube-apiserver "with a date" "Sat, 27 Nov 2026 07:57:17 GMT")") ==
        std::vector<std::string>{"with a date"});
  CHECK(parse_warning_header(R"(110 - "stale, not kept", 299 - "kept")") == std::vector<std::string>{"kept"});
  // Malformed: what came before is kept, the rest dropped.
  CHECK(parse_warning_header(R"(299 - "fine", 299 - "unterminated)") == std::vector<std::string>{"fine"});
  CHECK(parse_warning_header("not a warning").empty());
  CHECK(parse_warning_header("").empty());
}

}  // namespace response_test
