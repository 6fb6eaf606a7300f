// KEP-3659 ApplySet marks: the parent ID matches what an independent computation
// (the openssl command line, as kubectl's RawURLEncoding of sha256) gives, members get
// both labels, and the parent Secret carries the ID, tooling, group-kinds and inventory.
#include "states/applyset.hpp"

#include <catch2/catch.hpp>
#include <cstdio>

#include "core/encoding.hpp"

namespace applyset_test {

using namespace kstate;

namespace {

// sha256 -> base64 -> URL-safe alphabet -> no padding, by the openssl and coreutils tools.
std::string id_from_shell(const std::string& identity) {
  const std::string command =
      "printf '%s' '" + identity + "' | openssl dgst -sha256 -binary | base64 -w0 | tr '+/' '-_' | tr -d '='";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr)
    output += buffer;
  REQUIRE(pclose(pipe) == 0);
  return "applyset-" + output + "-v1";
}

states::InventoryEntry entry(std::string group, std::string version, std::string kind, std::string ns, std::string name,
                             std::string uid) {
  return {std::move(group), std::move(version), std::move(kind), std::move(ns),
          std::move(name),  std::move(uid),     "dir/file.yaml"};
}

}  // namespace

TEST_CASE("the ApplySet ID is kubectl's base64url(sha256(name.namespace.kind.group))", "[applyset]") {
  struct Row {
    const char* name;
    const char* ns;
    const char* kind;
    const char* group;
  };
  const Row rows[] = {
      {"kstate", "kube-system", "Secret", ""},
      {"my-set", "default", "Secret", ""},
      {"x", "y", "ConfigMap", ""},
      {"prod", "", "Application", "nyl.io"},
      {"a", "b", "Secret", ""},
      {"kstate-2", "ops", "Secret", ""},
  };
  bool saw_url_alphabet = false;
  for (const Row& row : rows) {
    const std::string identity = std::string(row.name) + "." + row.ns + "." + row.kind + "." + row.group;
    INFO(identity);
    const std::string id = states::applyset_id(row.name, row.ns, row.kind, row.group);
    CHECK(id == id_from_shell(identity));
    CHECK(id.size() == std::string("applyset-").size() + 43 + std::string("-v1").size());
    CHECK(id.find_first_of("+/=") == std::string::npos);
    saw_url_alphabet = saw_url_alphabet || id.substr(9, 43).find_first_of("-_") != std::string::npos;
  }
  CHECK(saw_url_alphabet);  // the rows exercise the URL-safe replacements
  CHECK(states::applyset_id(states::ApplySetParent{}) == id_from_shell("kstate.kube-system.Secret."));
}

TEST_CASE("member labels are added in place and recognised on live objects", "[applyset]") {
  const std::string id = states::applyset_id("kstate", "kube-system");
  struct Row {
    const char* name;
    const char* object;
  };
  const Row rows[] = {
      {"no metadata", R"({"kind":"ConfigMap"})"},
      {"no labels", R"({"kind":"ConfigMap","metadata":{"name":"c"}})"},
      {"other labels kept", R"({"kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"web"}}})"},
      {"foreign values overwritten",
       R"({"kind":"ConfigMap","metadata":{"labels":{"app.kubernetes.io/managed-by":"Helm","applyset.kubernetes.io/part-of":"applyset-other-v1"}}})"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    auto document = json::parse(row.object);
    REQUIRE(document.ok());
    CHECK_FALSE(states::has_member_labels(*document, id));
    states::add_member_labels(*document, id, document->GetAllocator());
    CHECK(states::has_member_labels(*document, id));
    const json::Value* labels = json::find_path(*document, {"metadata", "labels"});
    REQUIRE(labels != nullptr);
    CHECK(json::get_string(*labels, "app.kubernetes.io/managed-by") == "kstate");
    CHECK(json::get_string(*labels, "applyset.kubernetes.io/part-of") == id);
    if (std::string(row.name) == "other labels kept")
      CHECK(json::get_string(*labels, "app") == "web");
  }
  auto only_part_of = json::parse(R"({"metadata":{"labels":{"applyset.kubernetes.io/part-of":")" + id + R"("}}})");
  REQUIRE(only_part_of.ok());
  CHECK_FALSE(states::has_member_labels(*only_part_of, id));
}

TEST_CASE("the parent Secret carries the ApplySet labels, annotations and inventory", "[applyset]") {
  states::Inventory inventory;
  inventory.entries = {
      entry("apps", "v1", "Deployment", "web", "frontend", "u1"),
      entry("", "v1", "ConfigMap", "web", "settings", "u2"),
      entry("", "v1", "ConfigMap", "kube-system", "local", "u3"),
      entry("", "v1", "Namespace", "", "web", "u4"),
      entry("example.com", "v1", "Widget", "tools", "w", "u5"),
      entry("apps", "v1", "Deployment", "tools", "backend", "u6"),
  };
  CHECK(states::contains_group_kinds(inventory) == "ConfigMap,Deployment.apps,Namespace,Widget.example.com");

  states::ApplySetParent parent{"kstate", "kube-system"};
  json::Document secret = states::make_parent_secret(parent, "1.2.3", inventory);
  CHECK(json::get_string(secret, "apiVersion") == "v1");
  CHECK(json::get_string(secret, "kind") == "Secret");
  CHECK(json::string_or(json::find_path(secret, {"metadata", "name"}), "") == "kstate");
  CHECK(json::string_or(json::find_path(secret, {"metadata", "namespace"}), "") == "kube-system");
  CHECK(json::string_or(json::find_path(secret, {"metadata", "labels", "applyset.kubernetes.io/id"}), "") ==
        id_from_shell("kstate.kube-system.Secret."));
  const json::Value* annotations = json::find_path(secret, {"metadata", "annotations"});
  REQUIRE(annotations != nullptr);
  CHECK(json::get_string(*annotations, "applyset.kubernetes.io/tooling") == "kstate/1.2.3");
  CHECK(json::get_string(*annotations, "applyset.kubernetes.io/contains-group-kinds") ==
        "ConfigMap,Deployment.apps,Namespace,Widget.example.com");
  CHECK(json::get_string(*annotations, "applyset.kubernetes.io/additional-namespaces") == "tools,web");

  // The inventory round-trips through the Secret as the engine will read it back.
  auto loaded = states::load_inventory(&secret);
  CHECK(loaded.status == states::InventoryStatus::ok);
  auto expected = inventory;
  std::sort(expected.entries.begin(), expected.entries.end(),
            [](const auto& a, const auto& b) { return a.key() < b.key(); });
  CHECK(loaded.inventory.entries == expected.entries);
}

}  // namespace applyset_test
