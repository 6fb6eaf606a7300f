// Password users and read grants (tests/emulator/access.hpp): who basic auth names, and
// the 403 a user who may read only pods gets on nodes, worded as kube-apiserver words
// a forbidden request (recording 43: user, verb, resource, API group and scope, with
// details.kind the plural), while pods stay readable and writes stay refused.
#include "tests/emulator/access.hpp"

#include <catch2/catch.hpp>

#include "core/encoding.hpp"
#include "tests/emulator/tests/api_test_support.hpp"

namespace access_test {

using namespace kstate;
using namespace kstate::emulator;
using namespace kstate::emulator::test;

TEST_CASE("password users: basic-reader and pod-reader, passwords derived from the secret") {
  auto users = password_users("admin-token");
  REQUIRE(users.size() == 2);
  CHECK(users[0].name == "basic-reader");
  CHECK(users[0].readable.empty());
  CHECK(users[1].name == "pod-reader");
  CHECK(users[1].readable == std::vector<std::string>{"pods"});
  CHECK(users[0].password.size() == 32);
  CHECK(users[0].password != users[1].password);
  CHECK(password_users("admin-token")[0].password == users[0].password);  // stable across restarts
  CHECK(password_users("other-token")[0].password != users[0].password);

  auto basic = [](const std::string& user, const std::string& password) {
    return encoding::base64_encode(user + ":" + password);
  };
  CHECK(check_basic_auth(users, basic("pod-reader", users[1].password)) == std::optional<std::string>("pod-reader"));
  CHECK_FALSE(check_basic_auth(users, basic("pod-reader", users[0].password)).has_value());
  CHECK_FALSE(check_basic_auth(users, basic("nobody", users[0].password)).has_value());
  CHECK_FALSE(check_basic_auth(users, "not base64!").has_value());
  CHECK_FALSE(check_basic_auth(users, encoding::base64_encode("no-colon")).has_value());
}

TEST_CASE("a user who may read only pods: pods listed, nodes 403 as kube-apiserver words it, writes 403") {
  ApiServer::Options options;
  options.read_grants = read_grants_of(password_users("secret"));
  Harness h(options);
  Identity pod_reader{true, "pod-reader", {"system:authenticated"}, false};
  REQUIRE(h.post("/api/v1/nodes", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}})").status == 201);

  CHECK(h.call("GET", "/api/v1/pods?limit=500", "", "application/json", pod_reader).status == 200);
  CHECK(h.call("GET", "/api/v1/namespaces/default/pods", "", "application/json", pod_reader).status == 200);

  auto nodes = h.call("GET", "/api/v1/nodes?limit=500", "", "application/json", pod_reader);
  REQUIRE(nodes.status == 403);
  auto body = parse(nodes);
  CHECK(str(body, {"kind"}) == "Status");
  CHECK(str(body, {"status"}) == "Failure");
  CHECK(str(body, {"reason"}) == "Forbidden");
  CHECK(
      str(body, {"message"}) ==
      "nodes is forbidden: User \"pod-reader\" cannot list resource \"nodes\" in API group \"\" at the cluster scope");
  CHECK(str(body, {"details", "kind"}) == "nodes");
  CHECK(json::find(body, "code")->GetInt() == 403);

  auto one_node = parse(h.call("GET", "/api/v1/nodes/n1", "", "application/json", pod_reader));
  CHECK(str(one_node, {"message"}) ==
        "nodes \"n1\" is forbidden: User \"pod-reader\" cannot get resource \"nodes\" in API group \"\" at the "
        "cluster scope");
  CHECK(str(one_node, {"details", "name"}) == "n1");
  auto configmaps = parse(h.call("GET", "/api/v1/namespaces/default/configmaps", "", "application/json", pod_reader));
  CHECK(str(configmaps, {"message"}) ==
        "configmaps is forbidden: User \"pod-reader\" cannot list resource \"configmaps\" in API group \"\" in the "
        "namespace \"default\"");
  auto watch = h.call("GET", "/api/v1/nodes?watch=true", "", "application/json", pod_reader);
  CHECK(watch.status == 403);

  auto write = h.call("POST", "/api/v1/namespaces/default/pods",
                      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[]}})",
                      "application/json", pod_reader);
  CHECK(write.status == 403);

  // Users without a grant read everything, as before.
  Identity basic_reader{true, "basic-reader", {"system:authenticated"}, false};
  CHECK(h.call("GET", "/api/v1/nodes", "", "application/json", basic_reader).status == 200);
  CHECK(h.call("GET", "/api/v1/nodes", "", "application/json", Harness::readonly()).status == 200);
}

TEST_CASE("a user whose Role grants every verb but watch: writes and lists succeed, a watch is 403 as RBAC words it") {
  Harness h;
  Identity no_watch{true, "drift-writer", {"system:authenticated"}, true, true, false};
  const std::string config_maps = "/api/v1/namespaces/default/configmaps";
  CHECK(h.call("POST", config_maps, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}})",
               "application/json", no_watch)
            .status == 201);
  CHECK(h.call("GET", config_maps, "", "application/json", no_watch).status == 200);
  auto watch = h.call("GET", config_maps + "?watch=true", "", "application/json", no_watch);
  CHECK(watch.status == 403);
  CHECK(watch.body.find(R"(configmaps is forbidden: User \"drift-writer\" cannot watch resource \"configmaps\" in )"
                        R"(API group \"\" in the namespace \"default\")") != std::string::npos);
}

}  // namespace access_test
