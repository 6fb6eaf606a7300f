// The state-function matrix, end to end against kstate-emulator: every function and
// strategy (object_present with apply, replace and create-only; object_updated with a
// merge patch and with server-side apply; object_absent) against every live state
// (absent, equal, different), in test mode and then for real, through the real
// `kstate` binary. One table says what a user must see for each case: the result
// (True, False or None), whether the state reports a change, the comment, and what the
// object looks like afterwards. All cases run in one directory, so they also run
// concurrently, as in real use; test mode must not move a single resourceVersion.
#include <catch2/catch.hpp>
#include <map>
#include <optional>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace json = kstate::json;

namespace {

enum class Live { absent, equal, different };
const char* to_string(Live live) {
  switch (live) {
    case Live::absent:
      return "absent";
    case Live::equal:
      return "equal";
    case Live::different:
      return "different";
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
};

const std::optional<bool> none = std::nullopt;

Outcome expected_outcome(const Function& function, Live live) {
  const std::string& f = function.name;
  if (f.rfind("present-", 0) == 0) {
    if (live == Live::absent) {
      return {{none, true, "would be created"}, {true, true, "created"}, "new"};
    }
    if (f == "present-create-only") {
      std::string kept = "already exists (create-only: never updated)";
      return {{true, false, kept}, {true, false, kept}, live == Live::equal ? "new" : "old"};
    }
    if (live == Live::equal) {
      return {{true, false, "already good"}, {true, false, "already good"}, "new"};
    }
    return {{none, true, "would be updated"}, {true, true, "updated"}, "new"};
  }
  if (f.rfind("updated-", 0) == 0) {
    if (live == Live::absent) {
      std::string missing = "ConfigMap/matrix/" + f + "-absent does not exist";
      return {{false, false, missing}, {false, false, missing}, std::nullopt};
    }
    if (live == Live::equal) {
      return {{true, false, "already good"}, {true, false, "already good"}, "new"};
    }
    return {{none, true, "would be updated"}, {true, true, "updated"}, "new"};
  }
  if (live == Live::absent) {
    return {{true, false, "already absent"}, {true, false, "already absent"}, std::nullopt};
  }
  return {{none, true, "would be deleted"}, {true, true, "deleted"}, std::nullopt};
}

std::string object_name(const Function& function, Live live) {
  return function.name + "-" + to_string(live);
}

std::string config_map(const std::string& name, const std::string& mode, bool with_other) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: matrix}\ndata: {mode: " + mode +
         (with_other ? ", other: kept" : "") + "}\n";
}

// The state document of one case (state ID = object name).
std::string state_document(const Function& function, Live live) {
  std::string name = object_name(function, live);
  std::string text = name + ":\n  " + function.state + ":\n";
  if (!function.strategy.empty()) {
    text += "    strategy: " + function.strategy + "\n";
  }
  if (function.state == "object_absent") {
    return text + "    apiVersion: v1\n    kind: ConfigMap\n    name: " + name + "\n    namespace: matrix\n";
  }
  return text + "    manifest:\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: " + name +
         ", namespace: matrix}\n      data: {mode: new}\n";
}

std::string field(const json::Value& object, std::initializer_list<std::string_view> path) {
  const json::Value* v = json::find_path(object, path);
  if (v == nullptr) {
    return {};
  }
  return v->IsString() ? std::string(v->GetString()) : json::dump(*v);
}

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-matrix"};

  ProcessResult kstate(const std::vector<std::string>& args) {
    std::vector<std::string> argv{KSTATE_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
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
  void post_config_map(const std::string& name, const std::string& mode) {
    std::string body = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                       R"(","namespace":"matrix"},"data":{"mode":")" + mode + R"(","other":"kept"}})";
    REQUIRE(emulator.request("POST", "/api/v1/namespaces/matrix/configmaps", body).status == 201);
  }
  // name -> resourceVersion of every ConfigMap in the namespace.
  std::map<std::string, std::string> versions() {
    std::map<std::string, std::string> out;
    auto list = get("/api/v1/namespaces/matrix/configmaps");
    for (const auto& item : json::find(list, "items")->GetArray()) {
      out[field(item, {"metadata", "name"})] = field(item, {"metadata", "resourceVersion"});
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
  for (const auto& function : functions) {
    for (Live live : {Live::absent, Live::equal, Live::different}) {
      std::string name = object_name(function, live);
      write_file(cases / (name + ".yaml"), state_document(function, live));
      if (live == Live::absent) {
        continue;
      }
      std::string mode = live == Live::equal ? "new" : "old";
      if (function.kstate_owned) {
        write_file(setup / (name + ".yaml"), config_map(name, mode, false));
      } else {
        cluster.post_config_map(name, mode);
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

  for (const auto& function : functions) {
    for (Live live : {Live::absent, Live::equal, Live::different}) {
      std::string name = object_name(function, live);
      Outcome outcome = expected_outcome(function, live);
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
      auto after = cluster.get("/api/v1/namespaces/matrix/configmaps/" + name);
      if (outcome.mode_after) {
        REQUIRE(after.IsObject());
        CHECK(field(after, {"data", "mode"}) == *outcome.mode_after);
        if (!function.kstate_owned) {
          CHECK(field(after, {"data", "other"}) == "kept");  // a patch leaves the rest alone
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
