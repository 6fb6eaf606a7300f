// The state-function matrix, end to end against kstate-emulator: every function and
// strategy (object_present with apply, replace and create-only; object_updated with a
// merge patch and with server-side apply; object_absent) against every live state
// (absent, equal, different), for a namespaced and a cluster-scoped kind, in test
// mode and then for real, through the real `kstate` binary. One table says what a user must see for each case: the
// result (True, False or None), whether the state reports a change, the comment, and what the object looks like
// afterwards. All cases run in one directory, so they also run concurrently, as in real use; test mode must not move a
// single resourceVersion.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace states_matrix_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

// `stale`: the object carries a field (a label) that an earlier manifest had and the
// current one dropped; the values the manifest names are equal. For kstate's own
// objects only the configuration hash can see that difference.
enum class Live { absent, equal, different, stale };
const char* to_string(Live live) {
  switch (live) {
    case Live::absent:
      return "absent";
    case Live::equal:
      return "equal";
    case Live::different:
      return "different";
    case Live::stale:
      return "stale";
  }
  return "?";
}

// One function (with its strategy) of the matrix.
struct Function {
  std::string name;      // "present-apply", ... (prefix of state IDs and object names)
  std::string state;     // object_present / object_updated / object_absent
  std::string strategy;  // empty: the default
  bool kstate_owned;     // live objects are set up by an earlier `kstate apply` (else by another client)
};

const std::vector<Function> functions = {
    {"present-apply", "object_present", "apply", true},
    {"present-replace", "object_present", "replace", true},
    {"present-create-only", "object_present", "create-only", true},
    {"updated-merge", "object_updated", "", false},
    {"updated-apply", "object_updated", "apply", false},
    {"absent", "object_absent", "", false},
};

// One kind of the matrix: how its objects look with a given "mode" value, where they
// live, and how to read the mode back.
struct Kind {
  std::string prefix;  // of state IDs and object names
  std::string api_version;
  std::string kind;
  std::string collection;  // API path of the collection
  bool namespaced;
  // The fields that carry the mode, as flow-style YAML (kstate's manifests) ...
  std::function<std::string(const std::string& mode)> fields;
  // ... and as JSON, with one more field ("other") set by another client.
  std::function<std::string(const std::string& mode)> foreign_json;
  std::function<std::string(const json::Value& object)> mode_of;
  std::function<std::string(const json::Value& object)> other_of;
};

std::string field(const json::Value& object, std::initializer_list<std::string_view> path) {
  const json::Value* v = json::find_path(object, path);
  if (v == nullptr) {
    return {};
  }
  return v->IsString() ? std::string(v->GetString()) : json::dump(*v);
}

const std::vector<Kind> kinds = {
    {"cm", "v1", "ConfigMap", "/api/v1/namespaces/matrix/configmaps", true,
     [](const std::string& mode) { return "data: {mode: " + mode + "}"; },
     [](const std::string& mode) { return R"("data":{"mode":")" + mode + R"(","other":"kept"})"; },
     [](const json::Value& object) {
       return field(object, {"data", "mode"});
     },
     [](const json::Value& object) {
       return field(object, {"data", "other"});
     }},
    {"role", "rbac.authorization.k8s.io/v1", "ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles", false,
     [](const std::string& mode) { return "rules: [{apiGroups: [\"\"], resources: [" + mode + "], verbs: [get]}]"; },
     [](const std::string& mode) {
       return R"("metadata":{"labels":{"other":"kept"}},"rules":[{"apiGroups":[""],"resources":[")" + mode +
              R"("],"verbs":["get"]}])";
     },
     [](const json::Value& object) {
       const json::Value* rules = json::find(object, "rules");
       const json::Value* resources =
           rules != nullptr && rules->IsArray() && !rules->Empty() ? json::find((*rules)[0], "resources") : nullptr;
       return resources != nullptr && resources->IsArray() && !resources->Empty()
                  ? std::string(json::string_or(&(*resources)[0], ""))
                  : std::string();
     },
     [](const json::Value& object) {
       return field(object, {"metadata", "labels", "other"});
     }},
};

const Live all_live_states[] = {Live::absent, Live::equal, Live::different, Live::stale};

// What a user must see for one case in one mode.
struct Expected {
  std::optional<bool> result;  // nullopt: None (pending, test mode)
  bool changed;
  std::string comment;  // the comment starts with this
};

struct Outcome {
  Expected test;
  Expected real;
  std::optional<std::string> mode_after;  // data.mode after the real run; nullopt: the object is gone
  bool stale_label_after = false;         // the dropped label is still there after the real run
};

const std::optional<bool> none = std::nullopt;

std::string object_name(const Kind& kind, const Function& function, Live live) {
  return kind.prefix + "-" + function.name + "-" + to_string(live);
}

std::string display_name(const Kind& kind, const std::string& name) {
  return kind.kind + "/" + (kind.namespaced ? "matrix/" : "") + name;
}

Outcome expected_outcome(const Kind& kind, const Function& function, Live live) {
  const std::string& f = function.name;
  if (f.rfind("present-", 0) == 0) {
    if (live == Live::absent) {
      return {{none, true, "would be created"}, {true, true, "created"}, "new"};
    }
    if (f == "present-create-only") {
      std::string kept = "already exists (create-only: never updated)";
      return {{true, false, kept}, {true, false, kept}, live == Live::different ? "old" : "new", live == Live::stale};
    }
    if (live == Live::equal) {
      return {{true, false, "already good"}, {true, false, "already good"}, "new"};
    }
    return {{none, true, "would be updated"}, {true, true, "updated"}, "new"};
  }
  if (f.rfind("updated-", 0) == 0) {
    if (live == Live::absent) {
      std::string missing = display_name(kind, object_name(kind, function, live)) + " does not exist";
      return {{false, false, missing}, {false, false, missing}, std::nullopt};
    }
    if (live == Live::equal || live == Live::stale) {  // a patch only names fields to set
      return {{true, false, "already good"}, {true, false, "already good"}, "new", live == Live::stale};
    }
    return {{none, true, "would be updated"}, {true, true, "updated"}, "new"};
  }
  if (live == Live::absent) {
    return {{true, false, "already absent"}, {true, false, "already absent"}, std::nullopt};
  }
  return {{none, true, "would be deleted"}, {true, true, "deleted"}, std::nullopt};
}

// kstate's own manifest of an object (for the set-up of object_present's live
// objects), with the label a later manifest drops when `stale`.
std::string own_manifest(const Kind& kind, const std::string& name, const std::string& mode, bool stale) {
  return "apiVersion: " + kind.api_version + "\nkind: " + kind.kind + "\nmetadata: {name: " + name +
         (kind.namespaced ? ", namespace: matrix" : "") + (stale ? ", labels: {dropped: \"yes\"}" : "") + "}\n" +
         kind.fields(mode) + "\n";
}

// The state document of one case (state ID = object name).
std::string state_document(const Kind& kind, const Function& function, Live live) {
  std::string name = object_name(kind, function, live);
  std::string text = name + ":\n  " + function.state + ":\n";
  if (!function.strategy.empty()) {
    text += "    strategy: " + function.strategy + "\n";
  }
  if (function.state == "object_absent") {
    return text + "    apiVersion: " + kind.api_version + "\n    kind: " + kind.kind + "\n    name: " + name + "\n" +
           (kind.namespaced ? "    namespace: matrix\n" : "");
  }
  return text + "    manifest:\n      apiVersion: " + kind.api_version + "\n      kind: " + kind.kind +
         "\n      metadata: {name: " + name + (kind.namespaced ? ", namespace: matrix" : "") + "}\n      " +
         kind.fields("new") + "\n";
}

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-matrix"};

  ProcessResult kstate(const std::vector<std::string>& args) {
    std::vector<std::string> argv{KSTATE_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    if (args.front() == "apply" || args.front() == "test") {
      argv.insert(argv.end(), {"--applyset-name", "kstate"});  // (a one-shot run records into a named set only)
    }
    argv.insert(argv.end(),
                {"--kubeconfig", emulator.kubeconfig_path().string(), "--cache-dir", (work.path() / "cache").string()});
    return kstate::testing::run_process(argv);
  }
  json::Document get(const std::string& path) {
    auto reply = emulator.request("GET", path);
    if (reply.status == 404) {
      return json::Document();
    }
    REQUIRE(reply.status == 200);
    auto doc = json::parse(reply.body);
    REQUIRE(doc.ok());
    return std::move(doc).value();
  }
  // An object created by another client, with one more field than kstate's manifests.
  void post_foreign(const Kind& kind, const std::string& name, const std::string& mode, bool stale) {
    auto body = json::parse("{" + kind.foreign_json(mode) + "}");
    REQUIRE(body.ok());
    auto& allocator = body->GetAllocator();
    json::set_string(*body, "apiVersion", kind.api_version, allocator);
    json::set_string(*body, "kind", kind.kind, allocator);
    auto& metadata = json::ensure_object(*body, "metadata", allocator);
    json::set_string(metadata, "name", name, allocator);
    if (stale) {
      json::set_string(json::ensure_object(metadata, "labels", allocator), "dropped", "yes", allocator);
    }
    auto reply = emulator.request("POST", kind.collection, json::dump(*body));
    INFO(reply.body);
    REQUIRE(reply.status == 201);
  }
  // "Kind/name" -> resourceVersion of every object of the matrix' kinds.
  std::map<std::string, std::string> versions() {
    std::map<std::string, std::string> out;
    for (const auto& kind : kinds) {
      auto list = get(kind.collection);
      for (const auto& item : json::find(list, "items")->GetArray()) {
        out[kind.kind + "/" + field(item, {"metadata", "name"})] = field(item, {"metadata", "resourceVersion"});
      }
    }
    return out;
  }
};

// The results of a `-o json` run by state ID.
std::map<std::string, json::Document> results_by_id(const ProcessResult& run) {
  auto parsed = json::parse(run.out);
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  REQUIRE(parsed.ok());
  std::map<std::string, json::Document> out;
  for (const auto& member : json::find(*parsed, "local")->GetObject()) {
    out[field(member.value, {"id"})] = json::copy(member.value);
  }
  return out;
}

void check_result(const json::Value& result, const Expected& expected) {
  const json::Value* value = json::find(result, "result");
  REQUIRE(value != nullptr);
  if (expected.result.has_value()) {
    CHECK(value->IsBool());
    CHECK((value->IsBool() && value->GetBool() == *expected.result));
  } else {
    CHECK(value->IsNull());
  }
  const json::Value* changes = json::find(result, "changes");
  bool changed = changes != nullptr && changes->IsObject() && changes->MemberCount() > 0;
  CHECK(changed == expected.changed);
  std::string comment = field(result, {"comment"});
  CHECK(comment.rfind(expected.comment, 0) == 0);
}

}  // namespace

TEST_CASE("state matrix: each function and strategy against absent, equal and different objects, test then real") {
  Cluster cluster;
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces",
                       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"matrix"}})")
              .status == 201);

  // Live objects: kstate's own (an earlier apply) for object_present, another
  // client's for object_updated and object_absent.
  auto setup = cluster.work.path() / "setup";
  auto cases = cluster.work.path() / "cases";
  int count = 0;
  for (const auto& kind : kinds) {
    for (const auto& function : functions) {
      for (Live live : all_live_states) {
        std::string name = object_name(kind, function, live);
        write_file(cases / (name + ".yaml"), state_document(kind, function, live));
        ++count;
        if (live == Live::absent) {
          continue;
        }
        std::string mode = live == Live::different ? "old" : "new";
        if (function.kstate_owned) {
          write_file(setup / (name + ".yaml"), own_manifest(kind, name, mode, live == Live::stale));
        } else {
          cluster.post_foreign(kind, name, mode, live == Live::stale);
        }
      }
    }
  }
  auto prepared = cluster.kstate({"apply", setup.string()});
  {
    INFO("setup: " << prepared.out << prepared.err);
    REQUIRE(prepared.exit_code == 0);
  }

  // Test mode: every case reports what it would do, and nothing in the cluster moves.
  auto before = cluster.versions();
  cluster.emulator.reset_request_log();
  auto test = cluster.kstate({"test", cases.string(), "-o", "json"});
  CHECK(test.exit_code == 2);  // object_updated of an absent object fails
  auto tested = results_by_id(test);
  CHECK(tested.size() == static_cast<std::size_t>(count));
  CHECK(cluster.versions() == before);
  auto log = json::parse(cluster.emulator.request_log());
  REQUIRE(log.ok());
  int dry_writes = 0;
  for (const auto& entry : json::find(*log, "requests")->GetArray()) {
    if (field(entry, {"method"}) != "GET") {
      INFO(field(entry, {"method"}) << " " << field(entry, {"path"}) << "?" << field(entry, {"query"}));
      CHECK(field(entry, {"query"}).find("dryRun=All") != std::string::npos);
      ++dry_writes;
    }
  }
  CHECK(dry_writes > 0);

  auto applied_run = cluster.kstate({"apply", cases.string(), "-o", "json"});
  CHECK(applied_run.exit_code == 2);
  auto applied = results_by_id(applied_run);
  auto again_run = cluster.kstate({"apply", cases.string(), "-o", "json"});
  auto again = results_by_id(again_run);

  for (const auto& kind : kinds) {
    for (const auto& function : functions) {
      for (Live live : all_live_states) {
        std::string name = object_name(kind, function, live);
        Outcome outcome = expected_outcome(kind, function, live);
        INFO("case " << name);
        REQUIRE(tested.count(name) == 1);
        REQUIRE(applied.count(name) == 1);
        {
          INFO("test mode: " << json::dump(tested[name]));
          check_result(tested[name], outcome.test);
        }
        {
          INFO("real mode: " << json::dump(applied[name]));
          check_result(applied[name], outcome.real);
        }
        auto after = cluster.get(kind.collection + "/" + name);
        if (outcome.mode_after) {
          REQUIRE(after.IsObject());
          CHECK(kind.mode_of(after) == *outcome.mode_after);
          CHECK((field(after, {"metadata", "labels", "dropped"}) == "yes") == outcome.stale_label_after);
          if (!function.kstate_owned) {
            CHECK(kind.other_of(after) == "kept");  // a patch leaves the rest alone
          }
          if (function.state == "object_updated" && live == Live::different) {
            // The patch kind shows in managedFields: a merge patch is an Update by kstate's
            // field manager; server-side apply an Apply by a manager of the state's own.
            std::string expected = function.strategy == "apply" ? "kstate:" + name + "=Apply" : "kstate=Update";
            std::string found;
            for (const auto& entry : json::find_path(after, {"metadata", "managedFields"})->GetArray()) {
              std::string manager = field(entry, {"manager"});
              if (manager == "kstate" || manager.rfind("kstate:", 0) == 0) {
                found += manager + "=" + field(entry, {"operation"});
              }
            }
            CHECK(found == expected);
          }
        } else {
          CHECK(after.IsNull());
        }
        // A second real run finds every case converged (object_updated of a missing
        // object still fails).
        INFO("second run: " << json::dump(again[name]));
        bool missing = function.state == "object_updated" && live == Live::absent;
        check_result(again[name], Expected{!missing, false, ""});
      }
    }
  }
}

TEST_CASE("object_updated with a strategy of object_present's fails naming the strategies it takes") {
  Cluster cluster;
  auto dir = cluster.work.path() / "wrong";
  write_file(dir / "scale.yaml", R"(scale:
  object_updated:
    strategy: replace
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: default}, data: {a: b}}
)");
  REQUIRE(cluster.emulator
              .request("POST", "/api/v1/namespaces/default/configmaps",
                       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"c"}})")
              .status == 201);
  auto run = cluster.kstate({"apply", dir.string()});
  CHECK(run.exit_code == 2);
  CHECK(run.out.find("object_updated takes `strategy: apply` (server-side apply) or no strategy (a merge patch), "
                     "not replace") != std::string::npos);
  CHECK(field(cluster.get("/api/v1/namespaces/default/configmaps/settings"), {"data", "a"}) == "c");
}

}  // namespace states_matrix_test
