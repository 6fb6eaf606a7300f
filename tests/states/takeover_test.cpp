// Taking objects over from kubectl and other Update managers (states/takeover.hpp),
// on the managedFields a real kube-apiserver wrote (recordings 49, 50): who is taken
// over, the managedFields after the merge, the JSON patch, and what the apply after it
// removes.
#include "states/takeover.hpp"

#include <catch2/catch.hpp>

#include "manifests/yaml_to_json.hpp"
#include "tests/support/recordings.hpp"

namespace takeover_test {

using namespace kstate;

namespace {

json::Document parse(std::string_view text) {
  auto parsed = json::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

const json::Value& managed_fields_of(const json::Value& object) {
  const json::Value* found = json::find_path(object, {"metadata", "managedFields"});
  REQUIRE(found != nullptr);
  return *found;
}

}  // namespace

TEST_CASE("which managers' fields kstate takes over") {
  struct Case {
    const char* manager;
    const char* operation;
    const char* subresource;
    bool taken;
  };
  const Case cases[] = {
      {"kubectl-client-side-apply", "Update", "", true},
      {"kubectl", "Update", "", true},
      {"kubectl-edit", "Update", "", true},
      {"kubectl-replace", "Update", "", true},
      {"before-first-apply", "Update", "", true},
      {"OpenAPI-Generator", "Update", "", true},
      {"kstate", "Update", "", true},  // its own `replace` strategy
      {"kstate", "Apply", "", false},
      {"kubectl", "Apply", "", false},  // another applier: a conflict, not a takeover
      {"kube-controller-manager", "Update", "", false},
      {"kube-controller-manager", "Update", "status", false},
      {"kubectl-client-side-apply", "Update", "status", false},
      {"helm", "Update", "", false},
      {"kubectlish", "Update", "", false},
  };
  for (const Case& one : cases) {
    INFO(one.manager << " " << one.operation << " " << one.subresource);
    CHECK(states::is_taken_over(one.manager, one.operation, one.subresource, "kstate") == one.taken);
  }
}

TEST_CASE("an object made by kubectl apply: its entry becomes kstate's Apply entry (recording 49)") {
  json::Document object = kstate::testing::recorded_response_body("49-get-kubectl-csa-object.json");
  auto plan = states::plan_takeover(managed_fields_of(object), "kstate");
  REQUIRE(plan.needed());
  CHECK(plan.managers == std::vector<std::string>{"kubectl-client-side-apply"});
  REQUIRE(plan.managed_fields.Size() == 1);
  const json::Value& entry = plan.managed_fields[0];
  CHECK(json::string_or(json::find(entry, "manager"), "") == "kstate");
  CHECK(json::string_or(json::find(entry, "operation"), "") == "Apply");
  CHECK(json::string_or(json::find(entry, "apiVersion"), "") == "v1");
  CHECK(*json::find(entry, "fieldsV1") == *json::find(managed_fields_of(object)[0], "fieldsV1"));
  CHECK(json::find_path(plan.owned_fields, {"f:data", "f:three"}) != nullptr);
  CHECK(json::find_path(plan.owned_fields, {"f:metadata", "f:annotations",
                                            "f:kubectl.kubernetes.io/last-applied-configuration"}) != nullptr);

  CHECK(states::takeover_patch(plan, "17423") == R"([{"op":"test","path":"/metadata/resourceVersion","value":"17423"},)"
                                                 R"({"op":"replace","path":"/metadata/managedFields","value":)" +
                                                     json::dump(plan.managed_fields) + "}]");
}

TEST_CASE("after a forced apply without takeover, merging moves data.three to kstate (recording 50)") {
  // Recording 50: kstate's apply left 'three' with kubectl-client-side-apply, so it stayed.
  json::Document object = kstate::testing::recorded_response_body("50-apply-takeover-from-csa.json");
  auto plan = states::plan_takeover(managed_fields_of(object), "kstate");
  CHECK(plan.managers == std::vector<std::string>{"kubectl-client-side-apply"});
  REQUIRE(plan.managed_fields.Size() == 1);
  CHECK(json::string_or(json::find(plan.managed_fields[0], "manager"), "") == "kstate");
  for (const char* field : {"f:one", "f:two", "f:three"}) {
    INFO(field);
    CHECK(json::find_path(plan.owned_fields, {"f:data", field}) != nullptr);
  }
  CHECK(*json::find(plan.managed_fields[0], "fieldsV1") == plan.owned_fields);

  // What the apply of the recording's manifest (data one and two) then removes: three,
  // and the last-applied annotation (kstate's own annotations are applied; here none).
  auto stream =
      manifests::parse_yaml_documents(kstate::testing::recorded_request_text("50-apply-takeover-from-csa.json"));
  REQUIRE(stream.documents.size() == 1);
  const json::Value& applied = stream.documents[0].json;
  std::vector<const json::Value*> others;
  CHECK(states::remove_released_fields(object, plan.owned_fields, applied, others));
  CHECK(json::dump(*json::find(object, "data")) == R"({"one":"1","two":"22"})");
  CHECK(json::find_path(object, {"metadata", "annotations"}) == nullptr);
  CHECK(json::string_or(json::find_path(object, {"metadata", "name"}), "") == "from-kubectl");
}

TEST_CASE("a field another manager still owns is kept; list items are not followed") {
  auto object = parse(R"({"metadata":{"annotations":{"a":"1","b":"2","keep":"3"}},"data":{"x":"1","y":"2"},)"
                      R"("spec":{"ports":[{"port":80}]}})");
  auto owned = parse(R"({"f:metadata":{"f:annotations":{".":{},"f:a":{},"f:b":{}}},"f:data":{"f:x":{},"f:y":{}},)"
                     R"("f:spec":{"f:ports":{"k:{\"port\":80}":{}}}})");
  auto applied = parse(R"({"metadata":{"annotations":{"a":"1"}},"data":{"x":"1"},"spec":{"ports":[{"port":80}]}})");
  auto controller = parse(R"({"f:data":{"f:y":{}}})");
  std::vector<const json::Value*> others{&controller};
  CHECK_FALSE(states::remove_released_fields(object, owned, applied, others));  // (the k: entry)
  CHECK(json::dump(*json::find_path(object, {"metadata", "annotations"})) == R"({"a":"1","keep":"3"})");
  CHECK(json::dump(*json::find(object, "data")) == R"({"x":"1","y":"2"})");
}

TEST_CASE("entries of several managers and versions: merged into one Apply entry, others untouched") {
  auto managed = parse(R"([
    {"manager":"kstate","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1",
     "fieldsV1":{"f:spec":{"f:replicas":{}}}},
    {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"status",
     "fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:replicas":{}}}},
    {"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1",
     "fieldsV1":{"f:metadata":{"f:labels":{"f:edited":{}}}}},
    {"manager":"kubectl","operation":"Update","apiVersion":"apps/v1beta1","fieldsType":"FieldsV1",
     "fieldsV1":{"f:spec":{"f:paused":{}}}},
    {"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1",
     "fieldsV1":{"f:spec":{"f:minReadySeconds":{}}}}
  ])");
  auto plan = states::plan_takeover(managed, "kstate");
  CHECK(plan.managers == std::vector<std::string>{"kubectl-edit", "kubectl"});
  REQUIRE(plan.managed_fields.Size() == 2);
  CHECK(json::string_or(json::find(plan.managed_fields[0], "manager"), "") == "kstate");
  CHECK(json::string_or(json::find(plan.managed_fields[1], "manager"), "") == "kube-controller-manager");
  CHECK(json::dump(plan.owned_fields) ==
        R"({"f:spec":{"f:replicas":{},"f:minReadySeconds":{}},"f:metadata":{"f:labels":{"f:edited":{}}}})");

  auto nobody = parse(R"([{"manager":"kstate","operation":"Apply","apiVersion":"v1","fieldsV1":{}}])");
  CHECK_FALSE(states::plan_takeover(nobody, "kstate").needed());
  CHECK_FALSE(states::plan_takeover(json::Value(), "kstate").needed());
  CHECK(states::managers_text({"a", "b"}) == "a, b");
}

}  // namespace takeover_test
