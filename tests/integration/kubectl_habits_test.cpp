// kubectl's habits end to end, against kstate-emulator: manifests piped on stdin
// (`kubectl kustomize DIR | kstate test -`, `-f -` next to files, errors named
// <stdin>:line), the kubeconfig context's namespace and -n for objects that name
// none (and an object naming another namespace refused, as kubectl refuses it),
// `kstate diff` as `kstate test`, and -v 6 showing each request as kubectl's -v=6 does.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace kubectl_habits_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
using kstate::testing::TempDir;
using kstate::testing::write_file;

namespace {

struct Cluster {
  Emulator emulator;
  TempDir work{"kstate-kubectl-habits"};

  // kstate with the emulator's kubeconfig (or `kubeconfig`), stdin from `input`.
  ProcessResult kstate(std::vector<std::string> args, const std::optional<std::string>& input = std::nullopt,
                       const std::string& kubeconfig = "") {
    args.insert(args.begin(), KSTATE_BINARY);
    args.insert(args.end(), {"--kubeconfig", kubeconfig.empty() ? emulator.kubeconfig_path().string() : kubeconfig,
                             "--cache-dir", (work.path() / "cache").string()});
    kstate::testing::RunOptions options;
    options.stdin_data = input;
    auto result = kstate::testing::run_process(args, options);
    UNSCOPED_INFO("exit " << result.exit_code << "\nstdout:\n" << result.out << "\nstderr:\n" << result.err);
    return result;
  }
  int status_of(const std::string& path) { return emulator.request("GET", path).status; }
  void create_namespace(const std::string& name) {
    REQUIRE(emulator
                .request("POST", "/api/v1/namespaces",
                         R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})")
                .status == 201);
  }
};

std::string config_map(const std::string& name, const std::string& ns = "") {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" +
         (ns.empty() ? std::string() : "  namespace: " + ns + "\n") + "data:\n  key: value\n";
}

}  // namespace

TEST_CASE("kstate test - and apply -f - read YAML documents from stdin, as from kubectl kustomize") {
  Cluster cluster;
  const std::string piped = config_map("from-stdin-a") + "---\n" + config_map("from-stdin-b");

  auto pending = cluster.kstate({"test", "-"}, piped);
  CHECK(pending.exit_code == 1);
  CHECK(pending.out.find("ConfigMap/default/from-stdin-a would be created (<stdin>:1:1)\n") != std::string::npos);
  CHECK(pending.out.find("ConfigMap/default/from-stdin-b would be created (<stdin>:8:1)\n") != std::string::npos);
  CHECK(cluster.status_of("/api/v1/namespaces/default/configmaps/from-stdin-a") == 404);  // test writes nothing

  // -f - next to a file: both are applied.
  write_file(cluster.work.path() / "file.yaml", config_map("from-file"));
  auto applied = cluster.kstate({"apply", "-f", (cluster.work.path() / "file.yaml").string(), "-f", "-"}, piped);
  CHECK(applied.exit_code == 0);
  for (const char* name : {"from-stdin-a", "from-stdin-b", "from-file"}) {
    INFO(name);
    CHECK(cluster.status_of(std::string("/api/v1/namespaces/default/configmaps/") + name) == 200);
  }

  SECTION("a broken document on stdin is named <stdin>:line; the other documents still run") {
    auto broken = cluster.kstate({"apply", "-"}, config_map("good") +
                                                     "---\napiVersion: v1\nkind: ConfigMap\n"
                                                     "metadata:\n  name: [half\n");
    CHECK(broken.exit_code == 2);
    CHECK(broken.err.find("<stdin>:12:1: YAML syntax error") != std::string::npos);
    CHECK(cluster.status_of("/api/v1/namespaces/default/configmaps/good") == 200);
  }
  SECTION("one object declared on stdin and in a file with different content is one error, as within files") {
    write_file(cluster.work.path() / "same.yaml", config_map("twice"));
    auto conflict = cluster.kstate({"test", (cluster.work.path() / "same.yaml").string(), "-"},
                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\ndata:\n  key: other\n");
    CHECK(conflict.exit_code == 2);
    CHECK(conflict.err.find("<stdin>:1:1") != std::string::npos);
  }
}

TEST_CASE("objects without a namespace go to the kubeconfig context's namespace, or to -n's, as with kubectl") {
  Cluster cluster;
  cluster.create_namespace("team-a");
  cluster.create_namespace("shop");
  // The emulator's kubeconfig with `namespace: team-a` in its context.
  std::ifstream original(cluster.emulator.kubeconfig_path());
  std::string kubeconfig((std::istreambuf_iterator<char>(original)), std::istreambuf_iterator<char>());
  const std::string context_user = "    user: admin\n";
  const auto at = kubeconfig.find(context_user, kubeconfig.find("contexts:"));
  REQUIRE(at != std::string::npos);
  kubeconfig.insert(at + context_user.size(), "    namespace: team-a\n");
  const std::string team_kubeconfig = (cluster.work.path() / "kubeconfig-team-a").string();
  write_file(team_kubeconfig, kubeconfig);
  write_file(cluster.work.path() / "app.yaml", config_map("app"));
  const std::string app = (cluster.work.path() / "app.yaml").string();

  CHECK(cluster.kstate({"apply", app}, std::nullopt, team_kubeconfig).exit_code == 0);
  CHECK(cluster.status_of("/api/v1/namespaces/team-a/configmaps/app") == 200);
  CHECK(cluster.status_of("/api/v1/namespaces/default/configmaps/app") == 404);

  // -n wins over the context's namespace.
  CHECK(cluster.kstate({"apply", "-n", "shop", app}, std::nullopt, team_kubeconfig).exit_code == 0);
  CHECK(cluster.status_of("/api/v1/namespaces/shop/configmaps/app") == 200);

  // An object that names another namespace than -n's: refused with file:line, the rest applied.
  write_file(cluster.work.path() / "elsewhere.yaml", config_map("elsewhere", "team-a"));
  write_file(cluster.work.path() / "fine.yaml", config_map("fine"));
  auto mismatch = cluster.kstate({"apply", "-n", "shop", "-f", (cluster.work.path() / "elsewhere.yaml").string(), "-f",
                                  (cluster.work.path() / "fine.yaml").string()});
  CHECK(mismatch.exit_code == 2);
  CHECK(mismatch.err.find((cluster.work.path() / "elsewhere.yaml").string() +
                          ":1:1: ConfigMap/team-a/elsewhere: the object's namespace \"team-a\" does not match "
                          "-n/--namespace \"shop\"") != std::string::npos);
  CHECK(cluster.status_of("/api/v1/namespaces/team-a/configmaps/elsewhere") == 404);
  CHECK(cluster.status_of("/api/v1/namespaces/shop/configmaps/fine") == 200);
}

TEST_CASE("kstate diff is kstate test; -v 6 logs each request as kubectl -v=6 does") {
  Cluster cluster;
  write_file(cluster.work.path() / "app.yaml", config_map("app"));
  const std::string app = (cluster.work.path() / "app.yaml").string();
  auto diff = cluster.kstate({"diff", app});
  CHECK(diff.exit_code == 1);
  CHECK(diff.out.find("/app would be created (" + app + ":1:1)\n") != std::string::npos);
  CHECK(cluster.kstate({"test", app}).exit_code == 1);
  auto verbose = cluster.kstate({"diff", "-v", "6", app});
  CHECK(verbose.exit_code == 1);
  CHECK(std::regex_search(verbose.err, std::regex("trace GET /api[^ ]* -> [0-9]{3}")));
  CHECK(cluster.kstate({"diff", app}).err.find("-> 200") == std::string::npos);  // not at the default level
}

}  // namespace kubectl_habits_test
