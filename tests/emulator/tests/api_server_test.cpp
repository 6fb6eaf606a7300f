// ApiServer driven directly (no sockets): CRUD, resourceVersion, errors as
// Status, auth decisions, dryRun, selectors, pagination, as kube-apiserver
// documents them in "API Concepts" and "API Conventions".
#include "tests/emulator/api_server.hpp"

#include <catch2/catch.hpp>

#include "tests/emulator/tests/api_test_support.hpp"

namespace api_server_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

namespace {

const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string config_map(const std::string& name, const std::string& value = "1", const std::string& labels = "{}") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","labels":)" + labels +
         R"(},"data":{"k":")" + value + R"("}})";
}

}  // namespace

TEST_CASE("create then get returns the object with uid, resourceVersion, creationTimestamp and managedFields") {
  Harness h;
  auto created = h.post(kConfigMaps, config_map("a"));
  REQUIRE(created.status == 201);
  auto object = parse(created);
  CHECK(str(object, {"metadata", "namespace"}) == "default");
  CHECK(str(object, {"metadata", "uid"}).size() == 36);
  CHECK_FALSE(str(object, {"metadata", "resourceVersion"}).empty());
  CHECK(str(object, {"metadata", "creationTimestamp"}) == "2023-11-14T22:13:20Z");
  const auto* managed = json::find_path(object, {"metadata", "managedFields"});
  REQUIRE(managed != nullptr);
  CHECK(str((*managed)[0], {"manager"}) == "unit-test");
  CHECK(str((*managed)[0], {"operation"}) == "Update");
  auto fetched = h.get(std::string(kConfigMaps) + "/a");
  REQUIRE(fetched.status == 200);
  CHECK(parse(fetched) == object);
}

TEST_CASE("resourceVersion is one global counter across kinds") {
  Harness h;
  auto first = parse(h.post(kConfigMaps, config_map("a")));
  auto second = parse(
      h.post("/api/v1/namespaces/default/secrets", R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}})"));
  auto third = parse(h.post(kConfigMaps, config_map("b")));
  auto rv = [](const json::Value& o) { return std::stoull(str(o, {"metadata", "resourceVersion"})); };
  CHECK(rv(second) == rv(first) + 1);
  CHECK(rv(third) == rv(second) + 1);
}

TEST_CASE("missing objects and namespaces are 404 Status with details") {
  Harness h;
  auto missing = h.get(std::string(kConfigMaps) + "/nope");
  CHECK(missing.status == 404);
  auto status = parse(missing);
  CHECK(str(status, {"kind"}) == "Status");
  CHECK(str(status, {"reason"}) == "NotFound");
  CHECK(str(status, {"message"}) == "configmaps \"nope\" not found");
  CHECK(str(status, {"details", "kind"}) == "configmaps");
  CHECK(json::find(status, "code")->GetInt() == 404);

  auto no_namespace = h.post("/api/v1/namespaces/ghost/configmaps", config_map("a"));
  CHECK(no_namespace.status == 404);
  CHECK(str(parse(no_namespace), {"message"}) == "namespaces \"ghost\" not found");

  auto deployment = h.get("/apis/apps/v1/namespaces/default/deployments/web");
  CHECK(str(parse(deployment), {"message"}) == "deployments.apps \"web\" not found");
  CHECK(h.get("/apis/nothing.example.com/v1/things").status == 404);
}

TEST_CASE("create of an existing name is 409 AlreadyExists") {
  Harness h;
  REQUIRE(h.post(kConfigMaps, config_map("a")).status == 201);
  auto again = h.post(kConfigMaps, config_map("a"));
  CHECK(again.status == 409);
  CHECK(str(parse(again), {"reason"}) == "AlreadyExists");
}

TEST_CASE("generateName appends a random suffix") {
  Harness h;
  auto created = h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"job-"}})");
  REQUIRE(created.status == 201);
  auto name = str(parse(created), {"metadata", "name"});
  CHECK(name.rfind("job-", 0) == 0);
  CHECK(name.size() == 9);
}

TEST_CASE("PUT with a stale resourceVersion is 409 Conflict - with the current one it succeeds") {
  Harness h;
  auto created = parse(h.post(kConfigMaps, config_map("a")));
  auto version = str(created, {"metadata", "resourceVersion"});
  auto body = [&](const std::string& rv, const std::string& value) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":")" + rv +
           R"("},"data":{"k":")" + value + R"("}})";
  };
  auto updated = h.put(std::string(kConfigMaps) + "/a", body(version, "2"));
  REQUIRE(updated.status == 200);
  CHECK(str(parse(updated), {"data", "k"}) == "2");
  CHECK(str(parse(updated), {"metadata", "resourceVersion"}) != version);
  auto stale = h.put(std::string(kConfigMaps) + "/a", body(version, "3"));
  CHECK(stale.status == 409);
  CHECK(str(parse(stale), {"reason"}) == "Conflict");
  CHECK(str(parse(stale), {"message"}).find("the object has been modified") != std::string::npos);
}

TEST_CASE("a no-op update keeps the resourceVersion") {
  Harness h;
  auto created = parse(h.post(kConfigMaps, config_map("a")));
  auto updated = h.put(std::string(kConfigMaps) + "/a", config_map("a"));
  REQUIRE(updated.status == 200);
  CHECK(str(parse(updated), {"metadata", "resourceVersion"}) == str(created, {"metadata", "resourceVersion"}));
}

TEST_CASE("generation starts at 1 and is bumped by spec changes only") {
  Harness h;
  const char* path = "/apis/apps/v1/namespaces/default/deployments";
  auto deployment = [](int replicas, const std::string& label) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"x":")" + label +
           R"("}},"spec":{"replicas":)" + std::to_string(replicas) +
           R"(,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}})";
  };
  auto created = parse(h.post(path, deployment(1, "a")));
  CHECK(json::find_path(created, {"metadata", "generation"})->GetInt() == 1);
  auto relabeled = parse(h.put(std::string(path) + "/web", deployment(1, "b")));
  CHECK(json::find_path(relabeled, {"metadata", "generation"})->GetInt() == 1);
  auto scaled = parse(h.put(std::string(path) + "/web", deployment(3, "b")));
  CHECK(json::find_path(scaled, {"metadata", "generation"})->GetInt() == 2);
}

TEST_CASE("no credentials is 401 - the read-only user may read but writes are 403 Forbidden") {
  Harness h;
  auto anonymous = h.call("GET", kConfigMaps, "", "application/json", Harness::anonymous());
  CHECK(anonymous.status == 401);
  CHECK(str(parse(anonymous), {"reason"}) == "Unauthorized");
  CHECK(h.call("GET", kConfigMaps, "", "application/json", Harness::readonly()).status == 200);
  auto write = h.call("POST", kConfigMaps, config_map("a"), "application/json", Harness::readonly());
  CHECK(write.status == 403);
  auto status = parse(write);
  CHECK(str(status, {"reason"}) == "Forbidden");
  CHECK(str(status, {"message"}) ==
        "configmaps is forbidden: User \"readonly\" cannot create resource \"configmaps\" in API group \"\" in the "
        "namespace \"default\"");
  CHECK(h.get(std::string(kConfigMaps) + "/a").status == 404);
}

TEST_CASE("dryRun=All validates and answers like the real write but stores nothing and uses no resourceVersion") {
  Harness h;
  auto before = h.api.store().current_version();
  auto dry = h.post(std::string(kConfigMaps) + "?dryRun=All", config_map("a"));
  CHECK(dry.status == 201);
  CHECK(str(parse(dry), {"metadata", "name"}) == "a");
  CHECK(h.api.store().current_version() == before);
  CHECK(h.get(std::string(kConfigMaps) + "/a").status == 404);
  auto invalid = h.post(std::string(kConfigMaps) + "?dryRun=All", config_map("Bad_Name"));
  CHECK(invalid.status == 422);

  REQUIRE(h.post(kConfigMaps, config_map("a")).status == 201);
  before = h.api.store().current_version();
  auto dry_update = h.put(std::string(kConfigMaps) + "/a?dryRun=All", config_map("a", "changed"));
  CHECK(dry_update.status == 200);
  CHECK(str(parse(dry_update), {"data", "k"}) == "changed");
  auto dry_delete = h.del(std::string(kConfigMaps) + "/a?dryRun=All");
  CHECK(dry_delete.status == 200);
  CHECK(h.api.store().current_version() == before);
  CHECK(str(parse(h.get(std::string(kConfigMaps) + "/a")), {"data", "k"}) == "1");
}

TEST_CASE("invalid names are 422 Invalid with a field cause") {
  Harness h;
  auto response = h.post(kConfigMaps, config_map("Not_Valid"));
  REQUIRE(response.status == 422);
  auto status = parse(response);
  CHECK(str(status, {"reason"}) == "Invalid");
  CHECK(str(status, {"message"})
            .rfind("ConfigMap \"Not_Valid\" is invalid: metadata.name: Invalid value: \"Not_Valid\": "
                   "a lowercase RFC 1123 subdomain",
                   0) == 0);
  const auto& cause = (*json::find_path(status, {"details", "causes"}))[0];
  CHECK(str(cause, {"field"}) == "metadata.name");
  CHECK(str(cause, {"reason"}) == "FieldValueInvalid");
  // Services need DNS-1035 labels: no leading digit, no dots.
  auto service =
      h.post("/api/v1/namespaces/default/services",
             R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"1web"},"spec":{"ports":[{"port":80}]}})");
  CHECK(service.status == 422);
  auto ok_service =
      h.post("/api/v1/namespaces/default/services",
             R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}})");
  CHECK(ok_service.status == 201);
}

TEST_CASE("kind or apiVersion that does not match the endpoint is 400 BadRequest") {
  Harness h;
  auto wrong_kind = h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}})");
  CHECK(wrong_kind.status == 400);
  CHECK(str(parse(wrong_kind), {"reason"}) == "BadRequest");
  auto wrong_version = h.post(kConfigMaps, R"({"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}})");
  CHECK(wrong_version.status == 400);
  CHECK(str(parse(wrong_version), {"message"}) ==
        "the API version in the data (apps/v1) does not match the expected API version (v1)");
}

TEST_CASE("list filters with label selectors (equality and set-based) and field selectors") {
  Harness h;
  h.post(kConfigMaps, config_map("a", "1", R"({"app":"web","tier":"front"})"));
  h.post(kConfigMaps, config_map("b", "1", R"({"app":"db"})"));
  h.post(kConfigMaps, config_map("c", "1", R"({"app":"web","tier":"back"})"));
  auto names = [&](const std::string& query) {
    auto list = parse(h.get(std::string(kConfigMaps) + "?" + query));
    std::vector<std::string> result;
    for (const auto& item : json::find(list, "items")->GetArray()) {
      result.push_back(str(item, {"metadata", "name"}));
    }
    return result;
  };
  CHECK(names("labelSelector=app=web") == std::vector<std::string>{"a", "c"});
  CHECK(names("labelSelector=app!=web") == std::vector<std::string>{"b"});
  CHECK(names("labelSelector=tier in (front,middle)") == std::vector<std::string>{"a"});
  CHECK(names("labelSelector=tier notin (front)") == std::vector<std::string>{"b", "c"});
  CHECK(names("labelSelector=tier") == std::vector<std::string>{"a", "c"});
  CHECK(names("labelSelector=!tier") == std::vector<std::string>{"b"});
  CHECK(names("fieldSelector=metadata.name=b") == std::vector<std::string>{"b"});
  CHECK(names("fieldSelector=metadata.namespace!=default").empty());
  CHECK(h.get(std::string(kConfigMaps) + "?fieldSelector=spec.x=1").status == 400);
  auto list = parse(h.get(kConfigMaps));
  CHECK(str(list, {"kind"}) == "ConfigMapList");
  // Built-in kinds' items come without kind/apiVersion (recordings 16, 19); a GET
  // of one has them.
  for (const auto& item : json::find(list, "items")->GetArray()) {
    CHECK(json::find(item, "kind") == nullptr);
    CHECK(json::find(item, "apiVersion") == nullptr);
  }
  CHECK(str(parse(h.get(std::string(kConfigMaps) + "/a")), {"kind"}) == "ConfigMap");
  CHECK(str(list, {"metadata", "resourceVersion"}) == std::to_string(h.api.store().current_version()));
}

TEST_CASE("limit and continue page through a list") {
  Harness h;
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    h.post(kConfigMaps, config_map(name));
  }
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = parse(h.get(std::string(kConfigMaps) + "?limit=2" + (token.empty() ? "" : "&continue=" + token)));
    for (const auto& item : json::find(page, "items")->GetArray()) {
      seen.push_back(str(item, {"metadata", "name"}));
    }
    token = str(page, {"metadata", "continue"});
    ++pages;
  } while (!token.empty() && pages < 10);
  CHECK(pages == 3);
  CHECK(seen == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(h.get(std::string(kConfigMaps) + "?limit=2&continue=garbage").status == 400);
}

TEST_CASE("namespaced lists across all namespaces - cluster-scoped kinds reject a namespace") {
  Harness h;
  h.post("/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}})");
  h.post(kConfigMaps, config_map("a"));
  h.post("/api/v1/namespaces/other/configmaps", config_map("b"));
  auto all = parse(h.get("/api/v1/configmaps"));
  CHECK(json::find(all, "items")->Size() == 2);
  CHECK(h.get("/api/v1/namespaces/default/namespaces").status == 404);
}

TEST_CASE("Services get a clusterIP - changing it is 422 may not change once set (recording 38)") {
  Harness h;
  const char* path = "/api/v1/namespaces/default/services";
  auto created = parse(
      h.post(path, R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}})"));
  auto ip = str(created, {"spec", "clusterIP"});
  CHECK(ip.rfind("10.96.", 0) == 0);
  CHECK(str(created, {"spec", "type"}) == "ClusterIP");
  auto other = parse(h.post(
      path, R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"db"},"spec":{"ports":[{"port":5432}]}})"));
  CHECK(str(other, {"spec", "clusterIP"}) != ip);
  // Omitting clusterIP on update keeps it.
  auto kept = h.put(std::string(path) + "/web",
                    R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":81}]}})");
  REQUIRE(kept.status == 200);
  CHECK(str(parse(kept), {"spec", "clusterIP"}) == ip);
  auto changed = h.put(
      std::string(path) + "/web",
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"clusterIP":"10.96.9.9","ports":[{"port":81}]}})");
  CHECK(changed.status == 422);
  CHECK(str(parse(changed), {"message"}) ==
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.9.9\"}: may not change once "
        "set");
}

TEST_CASE("Secrets: stringData is folded into base64 data and type defaults to Opaque") {
  Harness h;
  auto created = parse(
      h.post("/api/v1/namespaces/default/secrets",
             R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"password":"hunter2"}})"));
  CHECK(str(created, {"data", "password"}) == "aHVudGVyMg==");
  CHECK(json::find(created, "stringData") == nullptr);
  CHECK(str(created, {"type"}) == "Opaque");
}

TEST_CASE("the status subresource changes only status - the main resource ignores status") {
  Harness h;
  const char* path = "/apis/apps/v1/namespaces/default/deployments";
  std::string body =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}},"status":{"replicas":7}})";
  auto created = parse(h.post(path, body));
  CHECK(json::dump(*json::find(created, "status")) == "{}");  // as recording 14 shows
  auto status_update = h.put(
      std::string(path) + "/web/status",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5},"status":{"replicas":1}})");
  REQUIRE(status_update.status == 200);
  auto object = parse(status_update);
  CHECK(json::find_path(object, {"status", "replicas"})->GetInt() == 1);
  CHECK(json::find_path(object, {"spec", "replicas"})->GetInt() == 1);
  CHECK(h.get("/api/v1/namespaces/default/configmaps/x/status").status == 404);
}

TEST_CASE("the scale subresource reads and writes spec.replicas") {
  Harness h;
  const char* path = "/apis/apps/v1/namespaces/default/deployments";
  h.post(
      path,
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}})");
  auto scale = parse(h.get(std::string(path) + "/web/scale"));
  CHECK(str(scale, {"kind"}) == "Scale");
  CHECK(json::find_path(scale, {"spec", "replicas"})->GetInt() == 2);
  auto patched =
      h.call("PATCH", std::string(path) + "/web/scale", R"({"spec":{"replicas":4}})", "application/merge-patch+json");
  REQUIRE(patched.status == 200);
  CHECK(json::find_path(parse(h.get(std::string(path) + "/web")), {"spec", "replicas"})->GetInt() == 4);
}

TEST_CASE("Secrets and ConfigMaps hold at most 1 MiB of data - more is 422 Too long, as kube-apiserver answers") {
  Harness h;
  const std::string plain_half(std::size_t{1} << 19, 'a');             // 524,288 bytes
  const std::string base64_part(699'048, 'Q');                         // 524,286 bytes once decoded
  const std::string four_bytes = "QUJDRA==", five_bytes = "QUJDREU=";  // "ABCD", "ABCDE": padding does not count
  const auto secret = [&](const std::string& last) {
    return R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"big"},"data":{"a":")" + base64_part +
           R"(","b":")" + base64_part + R"(","c":")" + last + R"("}})";
  };
  SECTION("a Secret over 1 MiB decoded is rejected on create, on apply and on update") {
    auto over = h.post("/api/v1/namespaces/default/secrets", secret(five_bytes));  // 1,048,577 bytes
    REQUIRE(over.status == 422);
    auto status = parse(over);
    CHECK(str(status, {"message"}) == "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes");
    const auto& cause = (*json::find_path(status, {"details", "causes"}))[0];
    CHECK(str(cause, {"reason"}) == "FieldValueTooLong");
    CHECK(str(cause, {"field"}) == "data");
    CHECK(h.apply("/api/v1/namespaces/default/secrets/big?fieldManager=t", secret(five_bytes)).status == 422);
    // stringData counts as well: it is merged into data before validation.
    auto mixed = h.post("/api/v1/namespaces/default/secrets",
                        R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"big"},"data":{"a":")" + base64_part +
                            R"("},"stringData":{"b":")" + plain_half + R"(xxx"}})");
    CHECK(mixed.status == 422);
    REQUIRE(h.post("/api/v1/namespaces/default/secrets", secret("")).status == 201);
    CHECK(h.put("/api/v1/namespaces/default/secrets/big", secret(five_bytes)).status == 422);
  }
  SECTION("exactly 1 MiB is accepted") {
    CHECK(h.post("/api/v1/namespaces/default/secrets", secret(four_bytes)).status == 201);
  }
  SECTION("a ConfigMap's data and binaryData count together") {
    auto over = h.post(kConfigMaps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":")" +
                                        plain_half + R"("},"binaryData":{"b":")" + base64_part + R"(QUJD"}})");
    REQUIRE(over.status == 422);
    CHECK(str(parse(over), {"message"}) ==
          "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes");
    CHECK(h.post(kConfigMaps, config_map("small", plain_half)).status == 201);
  }
}

}  // namespace api_server_test
