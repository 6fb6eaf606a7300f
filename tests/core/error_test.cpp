// Errors as values: classification and kubectl-like rendering.
#include "core/error.hpp"

#include <catch2/catch.hpp>

#include "core/json.hpp"

namespace error_test {

using namespace kstate;

TEST_CASE("Error::describe renders reason, message and field causes like kubectl") {
  Error e(ErrorKind::invalid, "Deployment.apps \"web\" is invalid");
  e.reason = "Invalid";
  e.causes.push_back({"FieldValueInvalid", "field is immutable", "spec.selector"});
  CHECK(e.describe() == "Invalid: Deployment.apps \"web\" is invalid\n  * spec.selector: field is immutable");
  CHECK_FALSE(e.retryable());
  CHECK(Error(ErrorKind::too_many_requests, "slow down").retryable());
}

TEST_CASE("Result holds a value or an error") {
  Result<int> good = 3;
  Result<int> bad = Error(ErrorKind::not_found, "gone");
  REQUIRE(good.ok());
  CHECK(*good == 3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::not_found);
}

TEST_CASE("json helpers parse, find, set and dump") {
  auto doc = json::parse(R"({"metadata":{"name":"web","labels":{"a":"b"}},"n":12345678901234})");
  REQUIRE(doc.ok());
  CHECK(json::string_or(json::find_path(*doc, {"metadata", "name"}), "") == "web");
  CHECK(json::find_path(*doc, {"metadata", "missing"}) == nullptr);
  auto& labels =
      json::ensure_object(json::ensure_object(*doc, "metadata", doc->GetAllocator()), "labels", doc->GetAllocator());
  json::set_string(labels, "a", "c", doc->GetAllocator());
  CHECK(json::dump(*doc) == R"({"metadata":{"name":"web","labels":{"a":"c"}},"n":12345678901234})");
  auto bad = json::parse("{\"a\":");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("offset 5") != std::string::npos);
}

}  // namespace error_test
