// Safe prune. One baseline cycle in which prune deletes objects (a ConfigMap, a
// Namespace with a ConfigMap in it, a CRD and its custom resource); every guard is a
// row that changes one thing in that cycle and checks that what the baseline deletes
// is then kept, with the reason a user sees. An object outside the inventory (even one
// carrying kstate's labels) is never deleted in any row.
#include "states/prune.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "states/applyset.hpp"

namespace prune_test {

using namespace kstate;
using states::KeepReason;
using states::ObjectKey;

namespace {

const std::string applyset = states::applyset_id("kstate", "kube-system");

const ObjectKey old_cm{"", "ConfigMap", "web", "old"};
const ObjectKey declared_cm{"", "ConfigMap", "web", "declared"};
const ObjectKey inner_cm{"", "ConfigMap", "gone-ns", "x"};
const ObjectKey gone_ns{"", "Namespace", "", "gone-ns"};
const ObjectKey widget_crd{"apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com"};
const ObjectKey widget{"example.com", "Widget", "default", "w1"};
const ObjectKey stranger{"", "ConfigMap", "web", "stranger"};  // never in the inventory

states::LiveObject ours(const std::string& uid) {
  states::LiveObject live;
  live.state = states::LiveState::found;
  live.uid = uid;
  live.labels = {{"applyset.kubernetes.io/part-of", applyset}, {"app.kubernetes.io/managed-by", "kstate"}};
  return live;
}

void record(states::PruneInput& input, const ObjectKey& key, const std::string& uid) {
  input.inventory.entries.push_back({key.group, "v1", key.kind, key.ns, key.name, uid, "dir/file.yaml"});
  input.live[key] = ours(uid);
}

// The cycle in which prune is allowed and deletes five objects.
states::PruneInput baseline() {
  states::PruneInput input;
  input.applyset_id = applyset;
  input.guards.prune_enabled = true;
  record(input, old_cm, "u1");
  record(input, declared_cm, "u2");
  record(input, inner_cm, "u3");
  record(input, gone_ns, "u4");
  record(input, widget_crd, "u5");
  input.live[widget_crd].defines_group = "example.com";
  input.live[widget_crd].defines_kind = "Widget";
  record(input, widget, "u6");
  std::sort(input.inventory.entries.begin(), input.inventory.entries.end(),
            [](const auto& a, const auto& b) { return a.key() < b.key(); });
  input.declared = {declared_cm, {"", "ConfigMap", "other", "kept"}};
  input.live[stranger] = ours("u-stranger");
  return input;
}

states::InventoryEntry& entry_of(states::PruneInput& input, const ObjectKey& key) {
  for (auto& entry : input.inventory.entries) {
    if (entry.key() == key)
      return entry;
  }
  FAIL("not recorded: " << key.to_string());
  throw std::logic_error("unreachable");
}

std::vector<std::string> deleted(const states::PruneDecision& decision) {
  std::vector<std::string> names;
  for (const auto& planned : decision.deletes)
    names.push_back(std::to_string(planned.wave) + ":" + planned.entry.key().to_string());
  return names;
}

const states::KeptEntry* kept(const states::PruneDecision& decision, const ObjectKey& key) {
  for (const auto& entry : decision.kept) {
    if (entry.entry.key() == key)
      return &entry;
  }
  return nullptr;
}

const std::vector<std::string> baseline_deletes = {
    "0:ConfigMap/gone-ns/x",
    "0:ConfigMap/web/old",
    "0:Widget.example.com/default/w1",
    "1:CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
    "2:Namespace/gone-ns",
};

}  // namespace

TEST_CASE("without guards, prune deletes undeclared objects it owns, containers last", "[prune]") {
  const states::PruneDecision decision = states::decide_prune(baseline());
  CHECK(deleted(decision) == baseline_deletes);
  CHECK(decision.held_back_by.empty());
  REQUIRE(decision.kept.size() == 1);
  CHECK(decision.kept[0].entry.key() == declared_cm);
  CHECK(decision.kept[0].reason == KeepReason::declared);
  CHECK(decision.forget.empty());
}

TEST_CASE("each prune guard keeps what would otherwise be deleted", "[prune]") {
  struct Row {
    const char* name;
    std::function<void(states::PruneInput&)> change;
    std::vector<std::string> expected_deletes;
    ObjectKey subject;  // an object the baseline deletes
    KeepReason reason;
    const char* detail_part;
    bool forgotten;
  };
  const auto without = [](std::vector<std::string> list, const std::vector<std::string>& removed) {
    for (const auto& item : removed)
      list.erase(std::remove(list.begin(), list.end(), item), list.end());
    return list;
  };
  const std::vector<Row> rows = {
      {"a file failed to parse",
       [](auto& in) { in.guards.load_failed = true; },
       {},
       old_cm,
       KeepReason::guard,
       "failed to load",
       false},
      {"a state failed",
       [](auto& in) { in.guards.state_failed = true; },
       {},
       gone_ns,
       KeepReason::guard,
       "a state failed",
       false},
      {"discovery failed",
       [](auto& in) { in.guards.discovery_failed = true; },
       {},
       widget_crd,
       KeepReason::guard,
       "discovery failed",
       false},
      {"empty manifest directory",
       [](auto& in) {
         in.guards.manifests_empty = true;
         in.declared.clear();
       },
       {},
       old_cm,
       KeepReason::guard,
       "--allow-empty-prune",
       false},
      {"inventory corrupt",
       [](auto& in) { in.guards.inventory_corrupt = true; },
       {},
       old_cm,
       KeepReason::guard,
       "corrupt",
       false},
      {"prune off", [](auto& in) { in.guards.prune_enabled = false; }, {}, old_cm, KeepReason::guard, "--prune", false},
      {"UID mismatch", [](auto& in) { in.live[old_cm].uid = "someone-elses"; },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::uid_mismatch, "live UID someone-elses",
       true},
      {"managed-by label removed", [](auto& in) { in.live[old_cm].labels.erase("app.kubernetes.io/managed-by"); },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::labels_removed, "managed-by", true},
      {"part-of another ApplySet",
       [](auto& in) { in.live[old_cm].labels["applyset.kubernetes.io/part-of"] = "applyset-other-v1"; },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::labels_removed, "part-of", true},
      {"kstate.io/prune: disabled", [](auto& in) { in.live[old_cm].annotations["kstate.io/prune"] = "disabled"; },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::prune_disabled, "kstate.io/prune",
       false},
      {"Flux prune disabled",
       [](auto& in) { in.live[old_cm].annotations["kustomize.toolkit.fluxcd.io/prune"] = "disabled"; },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::prune_disabled, "fluxcd", false},
      {"addon-manager EnsureExists",
       [](auto& in) { in.live[old_cm].labels["addonmanager.kubernetes.io/mode"] = "EnsureExists"; },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::prune_disabled, "EnsureExists", false},
      {"declared again", [](auto& in) { in.declared.insert(old_cm); },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::declared, "", false},
      {"live object not read", [](auto& in) { in.live.erase(old_cm); },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::not_checked, "", false},
      {"already gone",
       [](auto& in) {
         in.live[old_cm] = states::LiveObject{};
         in.live[old_cm].state = states::LiveState::not_found;
       },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::already_gone, "", true},
      {"Namespace still holds a declared object", [](auto& in) { in.declared.insert(inner_cm); },
       without(baseline_deletes, {"0:ConfigMap/gone-ns/x", "2:Namespace/gone-ns"}), gone_ns,
       KeepReason::still_has_members, "ConfigMap/gone-ns/x", false},
      {"Namespace holds an object kstate may not prune",
       [](auto& in) { in.live[inner_cm].annotations["kstate.io/prune"] = "disabled"; },
       without(baseline_deletes, {"0:ConfigMap/gone-ns/x", "2:Namespace/gone-ns"}), gone_ns,
       KeepReason::still_has_members, "ConfigMap/gone-ns/x", false},
      {"Namespace holds an object taken over by someone else", [](auto& in) { in.live[inner_cm].labels.clear(); },
       without(baseline_deletes, {"0:ConfigMap/gone-ns/x", "2:Namespace/gone-ns"}), gone_ns,
       KeepReason::still_has_members, "ConfigMap/gone-ns/x", false},
      {"Namespace holds objects outside the inventory",
       [](auto& in) {
         in.containers_held[gone_ns] = {states::ContainerHold::Why::unmanaged_object, "ConfigMap/gone-ns/y"};
       },
       without(baseline_deletes, {"2:Namespace/gone-ns"}), gone_ns, KeepReason::holds_unmanaged,
       "ConfigMap/gone-ns/y, which kstate does not manage", false},
      {"a Namespace's contents could not all be listed (403, a group answering 503)",
       [](auto& in) {
         in.containers_held[gone_ns] = {states::ContainerHold::Why::not_listed,
                                        "its secrets could not be listed: Forbidden"};
       },
       without(baseline_deletes, {"2:Namespace/gone-ns"}), gone_ns, KeepReason::contents_unknown,
       "secrets could not be listed", false},
      {"a CRD whose custom resources could not be listed",
       [](auto& in) {
         in.containers_held[widget_crd] = {states::ContainerHold::Why::not_listed,
                                           "its widgets (example.com/v1) could not be listed: 503"};
       },
       {"0:ConfigMap/gone-ns/x", "0:ConfigMap/web/old", "0:Widget.example.com/default/w1", "1:Namespace/gone-ns"},
       widget_crd,
       KeepReason::contents_unknown,
       "widgets (example.com/v1)",
       false},
      {"a CRD holding a custom resource kstate does not manage",
       [](auto& in) {
         in.containers_held[widget_crd] = {states::ContainerHold::Why::unmanaged_object, "Widget/team/theirs"};
       },
       {"0:ConfigMap/gone-ns/x", "0:ConfigMap/web/old", "0:Widget.example.com/default/w1", "1:Namespace/gone-ns"},
       widget_crd,
       KeepReason::holds_unmanaged,
       "Widget/team/theirs, which kstate does not manage",
       false},
      {"recorded by another writer, never declared by this one",
       [](auto& in) { states::mark_inherited(entry_of(in, old_cm)); },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::inherited, "declared in dir/file.yaml",
       false},
      {"inherited, and gone: forgotten",
       [](auto& in) {
         states::mark_inherited(entry_of(in, old_cm));
         in.live[old_cm].state = states::LiveState::not_found;
       },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::already_gone, "", true},
      {"its manifest file is being written",
       [](auto& in) {
         entry_of(in, old_cm).source = "dir/old.yaml";
         in.sources_held["dir/old.yaml"] = "open for writing";
       },
       without(baseline_deletes, {"0:ConfigMap/web/old"}), old_cm, KeepReason::source_held,
       "dir/old.yaml: open for writing", false},
      {"a held file keeps the Namespace of its objects too",
       [](auto& in) {
         entry_of(in, inner_cm).source = "dir/ns.yaml";
         in.sources_held["dir/ns.yaml"] = "empty (0 bytes)";
       },
       without(baseline_deletes, {"0:ConfigMap/gone-ns/x", "2:Namespace/gone-ns"}), inner_cm, KeepReason::source_held,
       "empty (0 bytes)", false},
      {"another writer reconciles the set",
       [](auto& in) { in.guards.other_writer = true; },
       {},
       old_cm,
       KeepReason::guard,
       "another writer",
       false},
      {"CRD still has a custom resource with another UID",
       [](auto& in) { in.live[widget].uid = "recreated"; },
       {"0:ConfigMap/gone-ns/x", "0:ConfigMap/web/old", "1:Namespace/gone-ns"},
       widget_crd,
       KeepReason::still_has_members,
       "Widget.example.com/default/w1",
       false},
      {"CRD without live spec falls back to its group",
       [](auto& in) {
         in.live[widget_crd].defines_kind.clear();
         in.declared.insert({"example.com", "Gadget", "default", "g"});
       },
       {"0:ConfigMap/gone-ns/x", "0:ConfigMap/web/old", "0:Widget.example.com/default/w1", "1:Namespace/gone-ns"},
       widget_crd,
       KeepReason::still_has_members,
       "Gadget.example.com/default/g",
       false},
      {"empty directory with --allow-empty-prune",
       [](auto& in) {
         in.guards.manifests_empty = true;
         in.guards.allow_empty_prune = true;
         in.declared.clear();
       },
       {"0:ConfigMap/gone-ns/x", "0:ConfigMap/web/declared", "0:ConfigMap/web/old", "0:Widget.example.com/default/w1",
        "1:CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com", "2:Namespace/gone-ns"},
       declared_cm,
       KeepReason::declared,
       "",
       false},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    states::PruneInput input = baseline();
    row.change(input);
    const states::PruneDecision decision = states::decide_prune(input);
    CHECK(deleted(decision) == row.expected_deletes);
    for (const auto& planned : decision.deletes)
      CHECK(planned.entry.key() != stranger);
    // Every inventory entry is either deleted or kept with a reason.
    CHECK(decision.deletes.size() + decision.kept.size() == input.inventory.entries.size());
    if (std::string(row.name) == "empty directory with --allow-empty-prune")
      continue;  // the subject is deleted there
    const states::KeptEntry* subject = kept(decision, row.subject);
    REQUIRE(subject != nullptr);
    CHECK(states::to_string(subject->reason) == std::string(states::to_string(row.reason)));
    CHECK_THAT(subject->detail, Catch::Contains(row.detail_part));
    const bool forgotten =
        std::find(decision.forget.begin(), decision.forget.end(), row.subject) != decision.forget.end();
    CHECK(forgotten == row.forgotten);
    CHECK(decision.held_back_by.empty() == (row.reason != KeepReason::guard));
  }
}

TEST_CASE("live objects are read from their JSON", "[prune]") {
  auto object = json::parse(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"widgets.example.com","uid":"u5","labels":{"a":"b","n":1},"annotations":{"kstate.io/prune":"disabled"}},
    "spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"}}})");
  REQUIRE(object.ok());
  const states::LiveObject live = states::live_object_from_json(*object);
  CHECK(live.state == states::LiveState::found);
  CHECK(live.uid == "u5");
  CHECK(live.labels == std::map<std::string, std::string>{{"a", "b"}});
  CHECK(live.annotations.at("kstate.io/prune") == "disabled");
  CHECK(live.defines_group == "example.com");
  CHECK(live.defines_kind == "Widget");
  CHECK(live.defines_plural == "widgets");
  CHECK(live.defines_namespaced);  // (no scope: the API server's default)
  CHECK(live.served_versions.empty());
}

TEST_CASE("a live CRD says how to list its custom resources: plural, scope, served versions", "[prune]") {
  auto object = json::parse(R"({"kind":"CustomResourceDefinition","metadata":{"name":"gizmos.example.com","uid":"u"},
    "spec":{"group":"example.com","scope":"Cluster","names":{"kind":"Gizmo","plural":"gizmos"},
    "versions":[{"name":"v1","served":true},{"name":"v1beta1","served":false},{"name":"v2","served":true}]}})");
  REQUIRE(object.ok());
  const states::LiveObject live = states::live_object_from_json(*object);
  CHECK(live.defines_plural == "gizmos");
  CHECK_FALSE(live.defines_namespaced);
  CHECK(live.served_versions == std::vector<std::string>{"v1", "v2"});
}

TEST_CASE("an inherited entry keeps where it was declared, and is marked once", "[prune]") {
  states::InventoryEntry entry{"", "v1", "ConfigMap", "ns", "a", "u1", "/etc/kstate/manifests/a.yaml"};
  CHECK_FALSE(states::is_inherited(entry));
  states::mark_inherited(entry);
  CHECK(states::is_inherited(entry));
  CHECK(entry.source == "inherited:/etc/kstate/manifests/a.yaml");
  states::mark_inherited(entry);
  CHECK(entry.source == "inherited:/etc/kstate/manifests/a.yaml");
}

TEST_CASE("randomized cycles never delete what prune must not touch", "[prune][randomized]") {
  // Fixed seed: a failure is reproducible. Each round draws an inventory, live objects
  // (ours, re-created, taken over, opted out, gone, unread), declarations, guards and
  // foreign objects, then checks the safety properties of the decision.
  std::mt19937 random(20261121);
  const auto chance = [&](int percent) { return std::uniform_int_distribution<int>(0, 99)(random) < percent; };
  const std::vector<std::string> namespaces = {"a", "b", "c"};
  std::vector<ObjectKey> pool;
  for (const auto& ns : namespaces) {
    pool.push_back({"", "Namespace", "", ns});
    for (const char* name : {"x", "y"}) {
      pool.push_back({"", "ConfigMap", ns, name});
      pool.push_back({"", "Secret", ns, name});
      pool.push_back({"example.com", "Widget", ns, name});
    }
  }
  pool.push_back(widget_crd);
  std::size_t total_deletes = 0;
  for (int round = 0; round < 500; ++round) {
    states::PruneInput input;
    input.applyset_id = applyset;
    input.guards.prune_enabled = !chance(10);
    input.guards.load_failed = chance(10);
    input.guards.state_failed = chance(10);
    input.guards.discovery_failed = chance(5);
    input.guards.manifests_empty = chance(10);
    input.guards.allow_empty_prune = chance(50);
    input.guards.inventory_corrupt = chance(5);
    for (std::size_t k = 0; k < pool.size(); ++k) {
      const ObjectKey& key = pool[k];
      const bool recorded = chance(60);
      const std::string uid = "uid-" + std::to_string(k);
      if (recorded)
        input.inventory.entries.push_back({key.group, "v1", key.kind, key.ns, key.name, uid, "f.yaml"});
      if (chance(30))
        input.declared.insert(key);
      if (chance(10))
        continue;  // not read
      states::LiveObject live = ours(chance(10) ? "other" : uid);
      if (chance(10))
        live.state = states::LiveState::not_found;
      if (chance(10))
        live.labels.erase(chance(50) ? "app.kubernetes.io/managed-by" : "applyset.kubernetes.io/part-of");
      if (chance(5))
        live.annotations["kstate.io/prune"] = "disabled";
      if (key == widget_crd && chance(70)) {
        live.defines_group = "example.com";
        live.defines_kind = "Widget";
      }
      input.live[key] = live;
    }
    input.guards.other_writer = chance(5);
    if (chance(20))
      input.containers_held[pool[0]] = {
          chance(50) ? states::ContainerHold::Why::unmanaged_object : states::ContainerHold::Why::not_listed, ""};
    if (chance(20))
      input.containers_held[widget_crd] = {states::ContainerHold::Why::not_listed, ""};
    for (auto& entry : input.inventory.entries) {
      if (chance(10))
        states::mark_inherited(entry);
      else if (chance(10))
        entry.source = "held.yaml";
    }
    if (chance(50))
      input.sources_held["held.yaml"] = "open for writing";
    std::sort(input.inventory.entries.begin(), input.inventory.entries.end(),
              [](const auto& a, const auto& b) { return a.key() < b.key(); });

    const states::PruneDecision decision = states::decide_prune(input);
    INFO("round " << round);
    const bool guarded = !states::held_guards(input.guards).empty();
    if (guarded)
      CHECK(decision.deletes.empty());
    CHECK(decision.deletes.size() + decision.kept.size() == input.inventory.entries.size());
    std::set<ObjectKey> deleted_keys;
    int previous_wave = 0;
    for (const auto& planned : decision.deletes) {
      const ObjectKey key = planned.entry.key();
      deleted_keys.insert(key);
      const states::InventoryEntry* recorded = input.inventory.find(key);
      REQUIRE(recorded != nullptr);  // never outside the inventory
      CHECK(input.declared.count(key) == 0);
      const states::LiveObject& live = input.live.at(key);
      CHECK(live.state == states::LiveState::found);
      CHECK(live.uid == recorded->uid);
      CHECK(live.labels.count("app.kubernetes.io/managed-by") == 1);
      CHECK(live.labels.count("applyset.kubernetes.io/part-of") == 1);
      CHECK(live.annotations.count("kstate.io/prune") == 0);
      CHECK_FALSE(states::is_inherited(*recorded));
      CHECK(input.sources_held.count(recorded->source) == 0);
      CHECK(planned.wave >= previous_wave);
      previous_wave = planned.wave;
    }
    total_deletes += decision.deletes.size();
    // A deleted container holds nothing that stays: nothing declared, nothing recorded
    // that exists and is not deleted before it.
    for (const auto& planned : decision.deletes) {
      const ObjectKey container = planned.entry.key();
      if (container.kind != "Namespace" && container != widget_crd)
        continue;
      CHECK(input.containers_held.count(container) == 0);
      const auto holds = [&](const ObjectKey& other) {
        return container.kind == "Namespace" ? other.ns == container.name : other.kind == "Widget";
      };
      for (const ObjectKey& other : input.declared)
        CHECK_FALSE(holds(other));
      for (const auto& entry : input.inventory.entries) {
        if (!holds(entry.key()))
          continue;
        auto live = input.live.find(entry.key());
        const bool gone = live != input.live.end() && live->second.state == states::LiveState::not_found;
        CHECK((gone || deleted_keys.count(entry.key()) == 1));
      }
    }
  }
  CHECK(total_deletes > 100);  // the rounds do exercise deletion
}

}  // namespace prune_test
