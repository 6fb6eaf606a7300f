// No-op detection: when is a live object already what the manifest asks for (in the
// form a real kube-apiserver stores it: the recordings' own request and response
// bodies), and the configuration hash kstate records on what it applies.
#include "states/compare.hpp"

#include <catch2/catch.hpp>

#include "core/json.hpp"
#include "manifests/yaml_to_json.hpp"
#include "states/quantity.hpp"
#include "tests/support/recordings.hpp"

namespace compare_test {

using namespace kstate;

namespace {

json::Document parse(std::string_view text) {
  auto parsed = json::parse(text);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

// The manifest a recording's request sent (YAML or JSON), as kstate loads it.
json::Document recorded_manifest(const std::string& file) {
  auto stream = manifests::parse_yaml_documents(kstate::testing::recorded_request_text(file));
  REQUIRE(stream.errors.empty());
  REQUIRE(stream.documents.size() == 1);
  return std::move(stream.documents[0].json);
}

json::Document recorded_answer(const std::string& file) {
  return kstate::testing::recorded_response_body(file);
}

states::StoredFormOptions with_status_subresource() {
  states::StoredFormOptions options;
  options.status_subresource = true;
  return options;
}

}  // namespace

TEST_CASE("a live object with every desired field (and more the server added) is already good") {
  auto desired = parse(R"({"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"},"n":1,"list":[1,{"x":2}]})");
  auto live =
      parse(R"({"kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"7"},"data":{"k":"v"},"n":1.0,)"
            R"("list":[1,{"x":2,"y":3}]})");
  CHECK(states::is_subset(desired, live));
  CHECK(states::is_stored_subset(desired, live));
  CHECK_FALSE(states::is_subset(live, desired));
  auto changed = parse(R"({"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"other"}})");
  CHECK_FALSE(states::is_stored_subset(changed, live));
  auto shorter_list = parse(R"({"list":[1]})");
  CHECK_FALSE(states::is_stored_subset(shorter_list, live));
}

TEST_CASE("a Secret's stringData is compared as the base64 data the server stores") {
  auto desired = parse(R"({"kind":"Secret","metadata":{"name":"s"},"stringData":{"password":"hunter2"}})");
  auto live = parse(R"({"kind":"Secret","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="}})");
  CHECK(states::is_stored_subset(desired, live));
  CHECK_FALSE(states::is_subset(desired, live));  // stringData is write-only on the server
  auto rotated = parse(R"({"kind":"Secret","metadata":{"name":"s"},"data":{"password":"b3RoZXI="}})");
  CHECK_FALSE(states::is_stored_subset(desired, rotated));
  // Only Secrets fold stringData.
  auto not_secret = parse(R"({"kind":"Widget","stringData":{"password":"hunter2"}})");
  CHECK_FALSE(states::is_stored_subset(not_secret, live));
}

TEST_CASE("the configuration hash leaves out its own annotation and changes with any other field") {
  auto plain = parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x"}},"data":{"k":"v"}})");
  auto annotated =
      parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x","kstate.io/config-hash":"abc"}},)"
            R"("data":{"k":"v"}})");
  std::string hash = states::config_hash(plain);
  CHECK(hash.size() == 64);
  CHECK(states::config_hash(annotated) == hash);
  auto other = parse(R"({"kind":"ConfigMap","metadata":{"name":"a","annotations":{"team":"x"}},"data":{"k":"w"}})");
  CHECK(states::config_hash(other) != hash);
  CHECK(states::recorded_config_hash(annotated) == "abc");
  CHECK(states::recorded_config_hash(plain).empty());
}

TEST_CASE("non-canonical quantities match what the server stored (recordings 31, 32, 33)") {
  // cpu: 0.5 -> "500m", "1000m" -> "1", 1Gi and "1073741824" kept: the server's answers.
  json::Document manifest = recorded_manifest("31-apply-deployment-quantities-201.json");
  json::Document created = recorded_answer("31-apply-deployment-quantities-201.json");
  json::Document after_controller = recorded_answer("32-get-deployment-after-controller.json");
  CHECK(states::is_stored_subset(manifest, created, with_status_subresource()));
  // The controller's status and revision annotation are not the manifest's business.
  CHECK(states::is_stored_subset(manifest, after_controller, with_status_subresource()));
  CHECK(states::is_stored_subset(manifest, recorded_answer("33-apply-deployment-quantities-again.json"),
                                 with_status_subresource()));
  CHECK_FALSE(states::is_subset(manifest, created));  // as written, they differ

  // A real change of a quantity is still one.
  json::Document more = json::copy(manifest);
  json::Value* containers =
      json::find(*json::find(*json::find(*json::find(more, "spec"), "template"), "spec"), "containers");
  json::Value& limits = *json::find(*json::find((*containers)[0], "resources"), "limits");
  json::set_string(limits, "cpu", "1500m", more.GetAllocator());
  CHECK_FALSE(states::is_stored_subset(more, after_controller, with_status_subresource()));
  // "1Gi" is not stored as "1073741824": the server keeps each suffix family.
  json::set_string(limits, "cpu", "1", more.GetAllocator());
  json::set_string(limits, "memory", "1Gi", more.GetAllocator());
  CHECK_FALSE(states::is_stored_subset(more, after_controller, with_status_subresource()));
}

TEST_CASE("quantities are compared as quantities only where the kind holds them") {
  struct Case {
    const char* what;
    const char* desired;
    const char* live;
    bool same;
  };
  const Case cases[] = {
      {"a ConfigMap's data is text", R"({"apiVersion":"v1","kind":"ConfigMap","data":{"cpu":"0.5"}})",
       R"({"kind":"ConfigMap","data":{"cpu":"500m"}})", false},
      {"a custom resource is stored as sent",
       R"({"apiVersion":"example.com/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"a",)"
       R"("resources":{"limits":{"cpu":0.5}}}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"500m"}}}]}}}})", false},
      {"a CronJob's pod template",
       R"({"apiVersion":"batch/v1","kind":"CronJob","spec":{"jobTemplate":{"spec":{"template":{"spec":{)"
       R"("initContainers":[{"name":"a","resources":{"requests":{"memory":"1024Mi"}}}]}}}}}})",
       R"({"spec":{"jobTemplate":{"spec":{"template":{"spec":{)"
       R"("initContainers":[{"name":"a","resources":{"requests":{"memory":"1Gi"}}}]}}}}}})",
       true},
      {"a pod template's other strings",
       R"({"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{)"
       R"("containers":[{"name":"a","image":"0.5"}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"500m"}]}}}})", false},
      {"a PersistentVolumeClaim's request",
       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"resources":{"requests":{"storage":"1000Mi"}}}})",
       R"({"spec":{"resources":{"requests":{"storage":"1000Mi"}}}})", true},
      {"a ResourceQuota", R"({"apiVersion":"v1","kind":"ResourceQuota","spec":{"hard":{"cpu":1000,"pods":"10"}}})",
       R"({"spec":{"hard":{"cpu":"1k","pods":"10"}}})", true},
      {"a LimitRange",
       R"({"apiVersion":"v1","kind":"LimitRange","spec":{"limits":[{"type":"Container",)"
       R"("default":{"cpu":"0.25"},"max":{"memory":"2048Mi"}}]}})",
       R"({"spec":{"limits":[{"type":"Container","default":{"cpu":"250m"},"max":{"memory":"2Gi"}}]}})", true},
      {"an emptyDir size",
       R"({"apiVersion":"v1","kind":"Pod","spec":{"volumes":[{"name":"v","emptyDir":{)"
       R"("sizeLimit":"0.5Gi"}}]}})",
       R"({"spec":{"volumes":[{"name":"v","emptyDir":{"sizeLimit":"512Mi"}}]}})", true},
      {"a StatefulSet's claim template",
       R"({"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"volumeClaimTemplates":[{"spec":{"resources":{)"
       R"("requests":{"storage":"1.5Gi"}}}}]}})",
       R"({"spec":{"volumeClaimTemplates":[{"spec":{"resources":{"requests":{"storage":"1536Mi"}}}}]}})", true},
  };
  for (const Case& one : cases) {
    INFO(one.what);
    json::Document desired = parse(one.desired);
    json::Document live = parse(one.live);
    for (const char* identity : {"apiVersion", "kind"}) {  // as read: the same object
      json::set_string(live, identity, json::string_or(json::find(desired, identity), ""), live.GetAllocator());
    }
    CHECK(states::is_stored_subset(desired, live) == one.same);
  }
}

TEST_CASE("the server's defaults, int-or-string ports and zero values are no change (recordings 14, 34)") {
  // Service: clusterIP(s), type, protocol, a defaulted targetPort; "http" and 8080 as given.
  json::Document service = recorded_manifest("34-apply-service-defaults-201.json");
  CHECK(states::is_stored_subset(service, recorded_answer("34-apply-service-defaults-201.json"),
                                 with_status_subresource()));
  json::Document deployment = recorded_manifest("14-create-deployment-201.json");
  CHECK(states::is_stored_subset(deployment, recorded_answer("14-create-deployment-201.json"),
                                 with_status_subresource()));
  // A targetPort given as a string is not the number (the server keeps each as given).
  auto as_text = parse(R"({"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":80,"targetPort":"8080"}]}})");
  auto as_number = parse(R"({"kind":"Service","spec":{"ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}})");
  CHECK_FALSE(states::is_stored_subset(as_text, as_number));

  // Generated manifests: creationTimestamp null, status {}, omitempty zero values.
  auto generated =
      parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","creationTimestamp":null,)"
            R"("annotations":{}},"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[)"
            R"({"name":"a","resources":{},"volumeMounts":[{"name":"v","mountPath":"/v","readOnly":false}],)"
            R"("livenessProbe":{"initialDelaySeconds":0,"exec":{"command":["true"]}}}]}}},"status":{"replicas":3}})");
  auto live =
      parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w",)"
            R"("creationTimestamp":"2026-11-27T07:57:17Z"},"spec":{)"
            R"("template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"a","resources":{},)"
            R"("volumeMounts":[{"name":"v","mountPath":"/v"}],"livenessProbe":{"exec":{"command":["true"]},)"
            R"("periodSeconds":10}}]}}},"status":{"replicas":1}})");
  CHECK(states::is_stored_subset(generated, live, with_status_subresource()));
  // status is compared where the kind has no status subresource (the write stores it).
  CHECK_FALSE(states::is_stored_subset(generated, live));
  // A zero value is no match for a value that is there.
  auto read_write = parse(R"({"kind":"Deployment","spec":{"paused":false}})");
  CHECK_FALSE(states::is_stored_subset(read_write, parse(R"({"kind":"Deployment","spec":{"paused":true}})")));
  CHECK(states::is_stored_subset(read_write, parse(R"({"kind":"Deployment","spec":{}})")));
}

TEST_CASE("a Secret applied with stringData is unchanged once stored as data (recording 35)") {
  auto manifest = parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},)"
                        R"("stringData":{"username":"admin","password":"example-not-secret"}})");
  json::Document live = recorded_answer("35-get-secret-stringdata.json");
  CHECK(states::is_stored_subset(manifest, live));
  auto changed = parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},)"
                       R"("stringData":{"username":"admin","password":"another"}})");
  CHECK_FALSE(states::is_stored_subset(changed, live));
}

TEST_CASE("is_quantity_field knows the built-in kinds' quantity fields") {
  using Path = std::vector<std::string_view>;
  CHECK(states::is_quantity_field("apps", "Deployment",
                                  Path{"spec", "template", "spec", "containers", "*", "resources", "limits", "cpu"}));
  CHECK(states::is_quantity_field("", "Pod", Path{"spec", "overhead", "cpu"}));
  CHECK(states::is_quantity_field("node.k8s.io", "RuntimeClass", Path{"overhead", "podFixed", "memory"}));
  CHECK_FALSE(states::is_quantity_field("apps", "Deployment",
                                        Path{"spec", "template", "spec", "containers", "*", "resources", "limits"}));
  CHECK_FALSE(
      states::is_quantity_field("apps", "Deployment", Path{"spec", "containers", "*", "resources", "limits", "cpu"}));
  CHECK_FALSE(states::is_quantity_field("", "ConfigMap", Path{"data", "cpu"}));
}

TEST_CASE("canonical_quantity: the text the API server stores") {
  struct Case {
    const char* written;
    const char* stored;  // "" = no certain answer
  };
  const Case cases[] = {
      // recordings 31-33
      {"0.5", "500m"},
      {"1000m", "1"},
      {"1Gi", "1Gi"},
      {"1073741824", "1073741824"},
      // apimachinery's rules: canonical text kept as written, else rebuilt by value
      {"1024Mi", "1Gi"},
      {"1000", "1k"},
      {"1500m", "1500m"},
      {"1.5", "1500m"},
      {"0.1", "100m"},
      {"100m", "100m"},
      {"1.5Gi", "1536Mi"},
      {"0.5Gi", "512Mi"},
      {"1.5Ki", "1536"},
      {"512Ki", "512Ki"},
      {"2048Ki", "2Mi"},
      {"1000Mi", "1000Mi"},
      {"1e3", "1e3"},
      {"1E3", "1E3"},
      {"1e4", "10e3"},
      {"1.5e3", "1500"},
      {"0", "0"},
      {"0Gi", "0"},
      {"-0.5", "-500m"},
      {"10G", "10G"},
      {"10000M", "10G"},
      {"0.0000000001", "1n"},
      {"1.0000000001", "1000000001n"},
      {"250m", "250m"},
      {"2.50", "2500m"},
      // not quantities, or beyond what is followed exactly
      {"", ""},
      {"Gi", ""},
      {"1.5x", ""},
      {"1 Gi", ""},
      {"1K", ""},
      {"1e", ""},
      {"99999999999999999999999999999999999999Ei", ""},
  };
  for (const Case& one : cases) {
    INFO(one.written);
    auto stored = states::canonical_quantity(std::string_view(one.written));
    CHECK(stored.value_or("") == one.stored);
  }
  // Numbers as the API server reads JSON numbers: integral values as integers.
  CHECK(states::canonical_quantity(parse("0.5")).value_or("") == "500m");
  CHECK(states::canonical_quantity(parse("2")).value_or("") == "2");
  CHECK(states::canonical_quantity(parse("2.0")).value_or("") == "2");
  CHECK(states::canonical_quantity(parse("1000")).value_or("") == "1k");
  CHECK_FALSE(states::canonical_quantity(parse("true")).has_value());
}

}  // namespace compare_test
