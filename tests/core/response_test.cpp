// Decoding of non-2xx API server answers into classified errors.
#include "core/response.hpp"

#include <catch2/catch.hpp>

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

}  // namespace response_test
