// The run order of a directory: kind tiers, Namespace and CRD edges, explicit
// references, reverse-ordered deletes, the errors a user sees for unknown references
// and cycles, and that 10,000 states plan quickly with a linear number of edges.
#include "states/ordering.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <ctime>
#include <map>
#include <random>

namespace ordering_test {

using namespace kstate;
using states::PlanItem;
using Function = manifests::Function;

namespace {

PlanItem item(std::string id, std::string group, std::string kind, std::string ns, std::string name,
              std::vector<std::string> require = {}, Function function = Function::object_present) {
  PlanItem result;
  result.id = std::move(id);
  result.function = function;
  result.group = std::move(group);
  result.kind = std::move(kind);
  result.ns = std::move(ns);
  result.name = std::move(name);
  result.require = std::move(require);
  return result;
}

PlanItem crd(std::string id, std::string group, std::string kind, Function function = Function::object_present) {
  PlanItem result =
      item(std::move(id), "apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets." + group, {}, function);
  result.defines_group = std::move(group);
  result.defines_kind = std::move(kind);
  return result;
}

std::size_t index_of(const std::vector<PlanItem>& items, const std::string& id) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].id == id)
      return i;
  }
  FAIL("no item " << id);
  return 0;
}

bool waits_for(const states::Plan& plan, const std::vector<PlanItem>& items, const std::string& later,
               const std::string& earlier) {
  auto waited = plan.items_waited_for(index_of(items, later));
  return std::find(waited.begin(), waited.end(), index_of(items, earlier)) != waited.end();
}

void check_topological_order(const states::Plan& plan) {
  REQUIRE(plan.topological_order.size() == plan.nodes.size());
  // The engine counts requires_nodes.size() + after_nodes.size() down as dependents
  // finish: each predecessor must be listed exactly once across both lists.
  std::vector<std::size_t> releases(plan.nodes.size(), 0);
  for (const auto& dependents : plan.dependents) {
    for (std::size_t dependent : dependents)
      ++releases[dependent];
  }
  for (std::size_t n = 0; n < plan.nodes.size(); ++n) {
    std::vector<std::size_t> all = plan.nodes[n].requires_nodes;
    all.insert(all.end(), plan.nodes[n].after_nodes.begin(), plan.nodes[n].after_nodes.end());
    std::sort(all.begin(), all.end());
    REQUIRE(std::adjacent_find(all.begin(), all.end()) == all.end());
    REQUIRE(releases[n] == all.size());
  }
  std::vector<std::size_t> position(plan.nodes.size());
  for (std::size_t i = 0; i < plan.topological_order.size(); ++i)
    position[plan.topological_order[i]] = i;
  for (std::size_t n = 0; n < plan.nodes.size(); ++n) {
    for (const auto* edges : {&plan.nodes[n].requires_nodes, &plan.nodes[n].after_nodes}) {
      for (std::size_t before : *edges)
        REQUIRE(position[before] < position[n]);
    }
  }
}

}  // namespace

TEST_CASE("kinds are sorted into creation tiers", "[ordering]") {
  struct Row {
    const char* group;
    const char* kind;
    states::Tier tier;
  };
  const Row rows[] = {
      {"", "Namespace", states::Tier::namespaces},
      {"apiextensions.k8s.io", "CustomResourceDefinition", states::Tier::custom_resource_definitions},
      {"rbac.authorization.k8s.io", "ClusterRole", states::Tier::roles},
      {"rbac.authorization.k8s.io", "Role", states::Tier::roles},
      {"rbac.authorization.k8s.io", "ClusterRoleBinding", states::Tier::role_bindings},
      {"rbac.authorization.k8s.io", "RoleBinding", states::Tier::role_bindings},
      {"", "ServiceAccount", states::Tier::service_accounts},
      {"storage.k8s.io", "StorageClass", states::Tier::classes},
      {"networking.k8s.io", "IngressClass", states::Tier::classes},
      {"scheduling.k8s.io", "PriorityClass", states::Tier::classes},
      {"node.k8s.io", "RuntimeClass", states::Tier::classes},
      {"gateway.networking.k8s.io", "GatewayClass", states::Tier::classes},
      {"apps", "Deployment", states::Tier::rest},
      {"", "ConfigMap", states::Tier::rest},
      {"example.com", "Namespace", states::Tier::rest},  // a CR that happens to be called Namespace
      {"", "Class", states::Tier::rest},
  };
  for (const Row& row : rows) {
    INFO(row.group << " " << row.kind);
    CHECK(states::tier_of(row.group, row.kind) == row.tier);
  }
}

TEST_CASE("a directory with a Namespace, a CRD, its CRs and RBAC is planned in tiers", "[ordering]") {
  const std::vector<PlanItem> items = {
      item("cm-in-apps", "", "ConfigMap", "apps", "settings"),
      item("widget", "example.com", "Widget", "apps", "w1"),
      item("cm-default", "", "ConfigMap", "default", "other"),
      item("binding", "rbac.authorization.k8s.io", "ClusterRoleBinding", "", "reader"),
      item("role", "rbac.authorization.k8s.io", "ClusterRole", "", "reader"),
      item("sa", "", "ServiceAccount", "apps", "runner"),
      item("storage", "storage.k8s.io", "StorageClass", "", "fast"),
      crd("widgets-crd", "example.com", "Widget"),
      item("apps-ns", "", "Namespace", "", "apps"),
      item("deploy", "apps", "Deployment", "apps", "web"),
  };
  auto plan = states::plan_order(items);
  REQUIRE(plan.ok());
  check_topological_order(*plan);

  struct Row {
    const char* later;
    const char* earlier;
    bool waits;
  };
  const Row rows[] = {
      {"cm-in-apps", "apps-ns", true},
      {"widget", "widgets-crd", true},
      {"widget", "apps-ns", true},
      {"widgets-crd", "apps-ns", true},
      {"binding", "role", true},
      {"sa", "role", true},
      {"storage", "sa", true},
      {"deploy", "storage", true},
      {"cm-default", "widgets-crd", true},
      {"cm-in-apps", "cm-default", false},
      {"cm-default", "cm-in-apps", false},
      {"deploy", "widget", false},
      {"widget", "deploy", false},
      {"apps-ns", "widgets-crd", false},
      {"role", "binding", false},
  };
  for (const Row& row : rows) {
    INFO(row.later << (row.waits ? " waits for " : " does not wait for ") << row.earlier);
    CHECK(waits_for(*plan, items, row.later, row.earlier) == row.waits);
  }

  // Hard edges (a failure there means "do not run"): Namespace and CRD, not tier order.
  const auto& widget_node = plan->nodes[index_of(items, "widget")];
  CHECK(widget_node.requires_nodes ==
        std::vector<std::size_t>{index_of(items, "widgets-crd"), index_of(items, "apps-ns")});
  CHECK(plan->nodes[index_of(items, "cm-default")].requires_nodes.empty());
  CHECK(plan->nodes[index_of(items, "widgets-crd")].wait_established);
}

TEST_CASE("deletes run after every create, in reverse tier order, containers last", "[ordering]") {
  const std::vector<PlanItem> items = {
      item("old-ns", "", "Namespace", "", "old", {"old-cm"}, Function::object_absent),
      item("old-cm", "", "ConfigMap", "old", "c", {}, Function::object_absent),
      crd("old-crd", "example.com", "Widget", Function::object_absent),
      item("old-widget", "example.com", "Widget", "default", "w", {}, Function::object_absent),
      item("old-role", "rbac.authorization.k8s.io", "Role", "default", "r", {}, Function::object_absent),
      item("new-cm", "", "ConfigMap", "default", "n"),
      item("new-ns", "", "Namespace", "", "new"),
  };
  auto plan = states::plan_order(items);
  REQUIRE(plan.ok());
  check_topological_order(*plan);
  struct Row {
    const char* later;
    const char* earlier;
    bool waits;
  };
  const Row rows[] = {
      {"old-cm", "new-cm", true},      {"old-ns", "new-cm", true},       {"old-ns", "old-cm", true},
      {"old-crd", "old-widget", true}, {"old-role", "old-cm", true},     {"old-ns", "old-crd", true},
      {"old-cm", "old-ns", false},     {"old-widget", "old-crd", false}, {"old-cm", "old-widget", false},
      {"new-cm", "old-cm", false},
  };
  for (const Row& row : rows) {
    INFO(row.later << (row.waits ? " waits for " : " does not wait for ") << row.earlier);
    CHECK(waits_for(*plan, items, row.later, row.earlier) == row.waits);
  }
  // The Namespace delete names the deletes inside it directly (not only through tiers);
  // old-cm is also an explicit (hard) requirement of old-ns, so it is listed only there.
  const auto& old_ns = plan->nodes[index_of(items, "old-ns")];
  CHECK(old_ns.requires_nodes == std::vector<std::size_t>{index_of(items, "old-cm")});
  CHECK(std::find(old_ns.after_nodes.begin(), old_ns.after_nodes.end(), index_of(items, "old-cm")) ==
        old_ns.after_nodes.end());
  const auto& old_crd = plan->nodes[index_of(items, "old-crd")].after_nodes;
  CHECK(std::find(old_crd.begin(), old_crd.end(), index_of(items, "old-widget")) != old_crd.end());
}

TEST_CASE("require references resolve by ID, parent ID and object reference", "[ordering]") {
  std::vector<PlanItem> base = {
      item("db", "apps", "StatefulSet", "data", "postgres"), item("cm-a", "", "ConfigMap", "data", "a"),
      item("cm-b", "", "ConfigMap", "other", "a"),           item("pv", "", "PersistentVolume", "", "disk"),
      item("web", "apps", "Deployment", "data", "web"),      item("included-1", "", "Secret", "data", "s1"),
      item("included-2", "", "Secret", "data", "s2"),
  };
  base[5].parent_id = "secrets-file";
  base[6].parent_id = "secrets-file";
  struct Row {
    const char* reference;
    std::vector<const char*> expected;
  };
  const std::vector<Row> rows = {
      {"db", {"db"}},
      {"StatefulSet/data/postgres", {"db"}},
      {"StatefulSet.apps/data/postgres", {"db"}},
      {"ConfigMap/other/a", {"cm-b"}},
      {"PersistentVolume/disk", {"pv"}},
      {"secrets-file", {"included-1", "included-2"}},
  };
  for (const Row& row : rows) {
    INFO(row.reference);
    std::vector<PlanItem> items = base;
    items.push_back(item("app", "", "ConfigMap", "data", "app", {row.reference}));
    auto plan = states::plan_order(items);
    REQUIRE(plan.ok());
    std::vector<std::size_t> expected;
    for (const char* id : row.expected)
      expected.push_back(index_of(items, id));
    CHECK(plan->nodes.at(items.size() - 1).requires_nodes == expected);
  }
}

TEST_CASE("unknown, ambiguous and circular references fail with the states named", "[ordering]") {
  struct Row {
    const char* name;
    std::vector<PlanItem> items;
    std::vector<const char*> message_parts;
  };
  const std::vector<Row> rows = {
      {"unknown ID",
       {item("web", "apps", "Deployment", "default", "web", {"databse"})},
       {"state 'web' requires 'databse'", "no state declares"}},
      {"unknown object",
       {item("web", "apps", "Deployment", "default", "web", {"Secret/default/missing"})},
       {"'web'", "Secret/default/missing"}},
      {"wrong group",
       {item("db", "apps", "StatefulSet", "data", "pg"),
        item("web", "apps", "Deployment", "data", "web", {"StatefulSet.batch/data/pg"})},
       {"'web'", "StatefulSet.batch/data/pg"}},
      {"ambiguous Kind/name",
       {item("a", "", "ConfigMap", "one", "x"), item("b", "", "ConfigMap", "two", "x"),
        item("web", "apps", "Deployment", "data", "web", {"ConfigMap/x"})},
       {"'web'", "several namespaces"}},
      {"three-state cycle",
       {item("a", "", "ConfigMap", "default", "a", {"b"}), item("b", "", "ConfigMap", "default", "b", {"c"}),
        item("c", "", "ConfigMap", "default", "c", {"a"}), item("free", "", "ConfigMap", "default", "free")},
       {"dependency cycle: a -> b -> c -> a"}},
      {"self reference", {item("a", "", "ConfigMap", "default", "a", {"a"})}, {"dependency cycle: a -> a"}},
      {"require against tier order",
       {item("ns", "", "Namespace", "", "apps", {"cm"}), item("cm", "", "ConfigMap", "default", "c")},
       {"dependency cycle: ns -> cm -> (tier order: after every Namespaces) -> ns"}},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    auto plan = states::plan_order(row.items);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().kind == ErrorKind::invalid_input);
    for (const char* part : row.message_parts) {
      CHECK_THAT(plan.error().message, Catch::Contains(part));
    }
  }
}

TEST_CASE("Salt requisites: require_in, onchanges, watch and sls references become edges", "[ordering]") {
  std::vector<PlanItem> items = {
      item("config", "", "ConfigMap", "apps", "settings"), item("secret", "", "Secret", "apps", "token"),
      item("web", "apps", "Deployment", "apps", "web"),    item("migrate", "batch", "Job", "apps", "migrate"),
      item("quota", "", "ResourceQuota", "apps", "quota"), item("addon-a", "", "ConfigMap", "apps", "a"),
      item("addon-b", "", "ConfigMap", "apps", "b"),       item("dashboard", "", "ConfigMap", "apps", "dashboard"),
  };
  items[2].watch = {"config", "Secret/apps/token"};
  items[3].onchanges = {"config"};
  items[4].require_in = {"web", "migrate"};  // quota before both
  items[5].sls_file = items[6].sls_file = "/srv/salt/addons.sls";
  items[7].require = {"sls:/srv/salt/addons.sls"};
  auto plan = states::plan_order(items);
  REQUIRE(plan.ok());
  check_topological_order(*plan);
  CHECK(waits_for(*plan, items, "web", "config"));
  CHECK(waits_for(*plan, items, "web", "secret"));
  CHECK(waits_for(*plan, items, "migrate", "config"));
  CHECK(waits_for(*plan, items, "web", "quota"));
  CHECK(waits_for(*plan, items, "migrate", "quota"));
  CHECK_FALSE(waits_for(*plan, items, "quota", "web"));
  CHECK(waits_for(*plan, items, "dashboard", "addon-a"));
  CHECK(waits_for(*plan, items, "dashboard", "addon-b"));
  // The engine tells onchanges and watch requisites apart from plain ones.
  const auto& web = plan->nodes[index_of(items, "web")];
  CHECK(web.watch_nodes == std::vector<std::size_t>{index_of(items, "config"), index_of(items, "secret")});
  CHECK(web.onchanges_nodes.empty());
  const auto& migrate = plan->nodes[index_of(items, "migrate")];
  CHECK(migrate.onchanges_nodes == std::vector<std::size_t>{index_of(items, "config")});
  CHECK(migrate.watch_nodes.empty());
  // Hard dependencies: a failure of any of them stops the dependent.
  for (const char* required : {"config", "secret", "quota"}) {
    CHECK(std::count(web.requires_nodes.begin(), web.requires_nodes.end(), index_of(items, required)) == 1);
  }

  // A require_in cycle is a cycle like any other; a require_in naming nothing is an error.
  std::vector<PlanItem> cycle = {item("a", "", "ConfigMap", "default", "a", {"b"}),
                                 item("b", "", "ConfigMap", "default", "b")};
  cycle[0].require_in = {"b"};
  auto failed = states::plan_order(cycle);
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("dependency cycle"));
  std::vector<PlanItem> unknown = {item("a", "", "ConfigMap", "default", "a")};
  unknown[0].onchanges = {"confg"};
  auto unknown_plan = states::plan_order(unknown);
  REQUIRE_FALSE(unknown_plan.ok());
  CHECK_THAT(unknown_plan.error().message, Catch::Contains("state 'a' requires 'confg'"));
}

TEST_CASE("ten thousand states plan in well under 100 ms with a linear number of edges", "[ordering][performance]") {
  std::vector<PlanItem> items;
  items.reserve(10'000);
  for (int n = 0; n < 100; ++n) {
    const std::string ns = "ns-" + std::to_string(n);
    items.push_back(item(ns, "", "Namespace", "", ns));
    for (int i = 0; i < 98; ++i) {
      const std::string name = "cm-" + std::to_string(i);
      std::vector<std::string> require;
      if (i > 0)
        require.push_back("ConfigMap/" + ns + "/cm-" + std::to_string(i - 1));
      items.push_back(item(ns + "-" + name, "", "ConfigMap", ns, name, require));
    }
    items.push_back(item(ns + "-role", "rbac.authorization.k8s.io", "Role", ns, "r"));
  }
  REQUIRE(items.size() == 10'000);
  // CPU time of this process, not wall time: the build machine is shared, and a test
  // that fails because another job ran is no test of this code.
  const std::clock_t start = std::clock();
  auto plan = states::plan_order(items);
  const double ms = 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  REQUIRE(plan.ok());
  INFO("planning took " << ms << " ms of CPU time");
#ifndef KSTATE_SANITIZED
  CHECK(ms < 100);
#endif
  std::size_t edges = 0;
  for (const auto& node : plan->nodes)
    edges += node.requires_nodes.size() + node.after_nodes.size();
  CHECK(edges < 4 * items.size());
  check_topological_order(*plan);
  // Chains in different namespaces stay independent.
  CHECK_FALSE(waits_for(*plan, items, "ns-1-cm-5", "ns-0-cm-0"));
  CHECK(waits_for(*plan, items, "ns-1-cm-5", "ns-1-cm-0"));
}

TEST_CASE("plan items are read from loaded states", "[ordering]") {
  struct Row {
    const char* name;
    const char* object;
    std::vector<std::string> require;
    PlanItem expected;
  };
  PlanItem crd_item = crd("crd", "example.com", "Widget");
  crd_item.name = "widgets.example.com";
  const std::vector<Row> rows = {
      {"namespaced with require",
       R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"apps"}})",
       {"config", "Secret/apps/token"},
       item("s", "apps", "Deployment", "apps", "web", {"config", "Secret/apps/token"})},
      {"core cluster-scoped",
       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}})",
       {},
       item("s", "", "Namespace", "", "apps")},
      {"CRD",
       R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
          "spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"}}})",
       {},
       crd_item},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    manifests::State state;
    state.id = "s";
    auto object = json::parse(row.object);
    REQUIRE(object.ok());
    state.object = std::move(object).value();
    state.require = row.require;
    const PlanItem got = states::plan_item_from_state(state);
    CHECK(got.group == row.expected.group);
    CHECK(got.kind == row.expected.kind);
    CHECK(got.ns == row.expected.ns);
    CHECK(got.name == row.expected.name);
    CHECK(got.require == row.expected.require);
    CHECK(got.defines_group == row.expected.defines_group);
    CHECK(got.defines_kind == row.expected.defines_kind);
  }
}

TEST_CASE("randomized directories plan consistently and cycles are reported as real chains", "[ordering][randomized]") {
  std::mt19937 random(7);
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); };
  struct Kind {
    const char* group;
    const char* kind;
    bool namespaced;
  };
  const Kind kinds[] = {{"", "Namespace", false},
                        {"", "ConfigMap", true},
                        {"", "ServiceAccount", true},
                        {"rbac.authorization.k8s.io", "Role", true},
                        {"storage.k8s.io", "StorageClass", false},
                        {"apps", "Deployment", true}};
  for (int round = 0; round < 50; ++round) {
    INFO("round " << round);
    std::vector<PlanItem> items;
    for (std::size_t i = 0; i < 200; ++i) {
      const Kind& kind = kinds[pick(std::size(kinds))];
      const Function function = pick(5) == 0 ? Function::object_absent : Function::object_present;
      const std::string ns = kind.namespaced ? "ns-" + std::to_string(pick(4)) : "";
      items.push_back(item("s" + std::to_string(i), kind.group, kind.kind, ns, "o" + std::to_string(i), {}, function));
    }
    // Requires that agree with tier order: on an earlier item of the same run position or before it.
    const auto position = [](const PlanItem& it) {
      const int tier = static_cast<int>(states::tier_of(it.group, it.kind));
      return it.function == Function::object_absent ? 2 * states::tier_count - 1 - tier : tier;
    };
    for (std::size_t i = 1; i < items.size(); ++i) {
      for (int r = 0; r < 2; ++r) {
        const std::size_t target = pick(i);
        if (position(items[target]) <= position(items[i]))
          items[i].require.push_back(items[target].id);
      }
    }
    auto plan = states::plan_order(items);
    REQUIRE(plan.ok());
    check_topological_order(*plan);
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (const std::string& reference : items[i].require)
        CHECK(std::count(plan->nodes[i].requires_nodes.begin(), plan->nodes[i].requires_nodes.end(),
                         index_of(items, reference)) == 1);
    }

    // Close a loop among items of one position: the error must name a real chain.
    std::map<int, std::vector<std::size_t>> by_position;
    for (std::size_t i = 0; i < items.size(); ++i)
      by_position[position(items[i])].push_back(i);
    std::vector<std::size_t> group;
    for (auto& [p, members] : by_position) {
      if (members.size() >= 3) {
        group = members;
        break;
      }
    }
    REQUIRE(group.size() >= 3);
    const std::size_t a = group[0], b = group[1], c = group[2];
    items[a].require.push_back(items[b].id);
    items[b].require.push_back(items[c].id);
    items[c].require.push_back(items[a].id);
    auto cyclic = states::plan_order(items);
    REQUIRE_FALSE(cyclic.ok());
    std::string message = cyclic.error().message;
    const std::string prefix = "dependency cycle: ";
    REQUIRE(message.rfind(prefix, 0) == 0);
    message = message.substr(prefix.size(), message.find(" (\"a -> b\"") - prefix.size());
    std::vector<std::string> chain;
    for (std::size_t start = 0;;) {
      std::size_t arrow = message.find(" -> ", start);
      chain.push_back(message.substr(start, arrow - start));
      if (arrow == std::string::npos)
        break;
      start = arrow + 4;
    }
    INFO(cyclic.error().message);
    REQUIRE(chain.size() >= 3);
    CHECK(chain.front() == chain.back());
    for (std::size_t k = 0; k + 1 < chain.size(); ++k) {
      const auto& from = items[index_of(items, chain[k])];
      CHECK(std::find(from.require.begin(), from.require.end(), chain[k + 1]) != from.require.end());
    }
  }
}

}  // namespace ordering_test
