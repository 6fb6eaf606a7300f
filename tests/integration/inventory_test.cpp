// `kstate inventory` end to end against the emulator preloaded with the fixture cluster
// (tests/inventory/data/cluster.yaml: nodes on containerd, Docker and CRI-O; pods whose
// statuses carry every imageID form): the JSON and text reports, paged LISTs (limit and
// continue, as recording 18 shows them), --digest answering "where does this build
// run?" with exit codes 0/1/2, and the identities a user may hand over: a client
// certificate, a user name and password (basic auth), a read-only user, and one who may
// list pods but not nodes (403: the images are still listed, and the report says what
// was not allowed).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/process.hpp"

namespace inventory_test {

using kstate::testing::Emulator;
using kstate::testing::ProcessResult;
namespace json = kstate::json;

namespace {

const std::string app_digest = "sha256:bf1c5d0dcbd621410c4cba6de49131c02de0f050fb39c49180882adc0fd28fde";
const std::string busybox_local_id = "sha256:1b34b523c27e255843637c7e33830f8589bce920f25a0cf5a3b7304eea6cbca6";
const std::string redis_local_id = "sha256:bdd910a64ea016d5abeae65d7fd952d862e5d977f0374f93402787021d277955";
const std::string coredns_digest = "sha256:8a32e516d7415be524a7fcec482ad2918f2b6ef2a7f4cb8e2e232b361436b20b";

kstate::testing::EmulatorOptions with_fixture_cluster() {
  kstate::testing::EmulatorOptions options;
  options.extra_args = {"--preload",
                        (std::filesystem::path(KSTATE_SOURCE_DIR) / "tests/inventory/data/cluster.yaml").string()};
  return options;
}

// One emulator for every case that only reads (starting one per case would cost more
// than the cases themselves).
Emulator& cluster() {
  static Emulator emulator(with_fixture_cluster());
  return emulator;
}

ProcessResult inventory(std::vector<std::string> args, Emulator& emulator = cluster()) {
  std::vector<std::string> argv{KSTATE_BINARY, "inventory", "--kubeconfig", emulator.kubeconfig_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = kstate::testing::run_process(argv);
  UNSCOPED_INFO("kstate inventory exit " << result.exit_code << "\nstdout:\n"
                                         << result.out << "\nstderr:\n"
                                         << result.err);
  return result;
}

json::Document parse(const std::string& text) {
  auto document = json::parse(text);
  REQUIRE(document.ok());
  return std::move(document.value());
}

std::string text(const json::Value& object, std::initializer_list<std::string_view> path) {
  return std::string(json::string_or(json::find_path(object, path), ""));
}

const json::Value& image_with(const json::Value& report, const std::string& digest) {
  for (const auto& image : (*json::find(report, "images")).GetArray()) {
    if (text(image, {"digest"}) == digest) {
      return image;
    }
  }
  FAIL("no image " << digest);
  throw std::logic_error("unreachable");
}

// The first string of the array at `key`.
std::string first_of(const json::Value& object, std::string_view key) {
  const json::Value* array = json::find(object, key);
  REQUIRE(array != nullptr);
  REQUIRE(array->IsArray());
  REQUIRE(array->Size() > 0);
  return std::string(json::string_or(&(*array)[0], ""));
}

// The queries of the LISTs of this path in the emulator's request log.
std::vector<std::string> list_queries(Emulator& emulator, const std::string& path) {
  auto log = parse(emulator.request_log());
  std::vector<std::string> queries;
  for (const auto& entry : (*json::find(log, "requests")).GetArray()) {
    if (text(entry, {"method"}) == "GET" && text(entry, {"path"}) == path) {
      queries.push_back(text(entry, {"query"}));
    }
  }
  return queries;
}

}  // namespace

TEST_CASE("kstate inventory -A -o json: nodes, each digest and where it runs, containers not started",
          "[inventory][emulator]") {
  auto result = inventory({"-A", "-o", "json"});
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  auto report = parse(result.out);
  CHECK(json::find(report, "schemaVersion")->GetInt() == 1);
  CHECK(json::find_path(report, {"scope", "allNamespaces"})->GetBool());

  const auto& nodes = *json::find(report, "nodes");
  REQUIRE(nodes.Size() == 3);
  CHECK(text(nodes[0], {"name"}) == "cp-1");
  CHECK(first_of(nodes[0], "roles") == "control-plane");
  CHECK(text(nodes[0], {"ready", "status"}) == "True");
  CHECK(text(nodes[0], {"architecture"}) == "amd64");
  CHECK(text(nodes[0], {"osImage"}) == "Ubuntu 22.04.4 LTS");
  CHECK(text(nodes[0], {"kernelVersion"}) == "5.15.0-105-generic");
  CHECK(text(nodes[0], {"containerRuntime"}) == "containerd");
  CHECK(text(nodes[0], {"containerRuntimeVersion"}) == "1.7.12");
  CHECK(text(nodes[0], {"kubeletVersion"}) == "v1.31.0");
  CHECK(text(nodes[0], {"capacity", "cpu"}) == "4");
  CHECK(json::find_path(nodes[0], {"capacity", "cpuMillicores"})->GetInt64() == 4000);
  CHECK(json::find_path(nodes[0], {"allocatable", "cpuMillicores"})->GetInt64() == 3800);
  CHECK(json::find_path(nodes[0], {"capacity", "memoryBytes"})->GetInt64() == 16331016LL * 1024);
  CHECK(text(nodes[1], {"containerRuntime"}) == "cri-o");
  CHECK(text(nodes[1], {"ready", "status"}) == "False");
  CHECK(text(nodes[2], {"architecture"}) == "arm64");

  CHECK(json::find(report, "images")->Size() == 8);
  const auto& app = image_with(report, app_digest);
  CHECK(text(app, {"kind"}) == "repoDigest");
  const auto& app_containers = *json::find(app, "containers");
  REQUIRE(app_containers.Size() == 2);
  CHECK(text(app_containers[0], {"pod"}) == "web-containerd");
  CHECK(text(app_containers[0], {"runtime"}) == "containerd");
  CHECK(text(app_containers[0], {"imageID"}) == "registry.example.com/team/app@" + app_digest);
  CHECK(text(app_containers[1], {"pod"}) == "web-docker");
  CHECK(text(app_containers[1], {"node"}) == "worker-docker");
  CHECK(text(app_containers[1], {"phase"}) == "Running");
  CHECK(text(app_containers[1], {"since"}) == "2024-05-02T08:15:03Z");
  CHECK(text(app_containers[1], {"imageID"}) == "docker-pullable://registry.example.com/team/app@" + app_digest);
  CHECK(text(image_with(report, busybox_local_id), {"kind"}) == "imageID");
  CHECK(first_of(image_with(report, redis_local_id), "runtimes") == "cri-o");

  const auto& not_started = *json::find(report, "notStarted");
  REQUIRE(not_started.Size() == 2);
  CHECK(text(not_started[0], {"pod"}) == "api-next");
  CHECK(text(not_started[0], {"reason"}) == "ContainerCreating");
  CHECK(text(not_started[1], {"pod"}) == "unscheduled");
  CHECK(json::find(report, "incomplete")->Size() == 0);
  CHECK(json::find_path(report, {"counts", "pods"})->GetUint64() == 7);
  CHECK(json::find_path(report, {"counts", "containers"})->GetUint64() == 11);
  CHECK(json::find_path(report, {"counts", "requests"})->GetUint64() == 2);  // one LIST each, no discovery
}

TEST_CASE("kstate inventory reads in pages of --chunk-size with limit and continue, and the answer is the same",
          "[inventory][emulator]") {
  auto& emulator = cluster();
  auto whole = parse(inventory({"-A", "-o", "json"}).out);
  emulator.reset_request_log();
  auto paged_result = inventory({"-A", "-o", "json", "--chunk-size", "2"});
  REQUIRE(paged_result.exit_code == 0);
  auto paged = parse(paged_result.out);
  CHECK(json::dump(*json::find(paged, "images")) == json::dump(*json::find(whole, "images")));
  CHECK(json::dump(*json::find(paged, "nodes")) == json::dump(*json::find(whole, "nodes")));
  CHECK(json::dump(*json::find(paged, "notStarted")) == json::dump(*json::find(whole, "notStarted")));

  // 3 nodes in pages of 2, 7 pods in pages of 2: the first page without continue, every
  // later one with the token the previous page returned.
  auto nodes = list_queries(emulator, "/api/v1/nodes");
  auto pods = list_queries(emulator, "/api/v1/pods");
  REQUIRE(nodes.size() == 2);
  REQUIRE(pods.size() == 4);
  CHECK(nodes[0] == "limit=2");
  CHECK(pods[0] == "limit=2");
  for (std::size_t i = 1; i < pods.size(); ++i) {
    CHECK(pods[i].rfind("limit=2&continue=", 0) == 0);
  }
  CHECK(nodes[1].rfind("limit=2&continue=", 0) == 0);
  CHECK(json::find_path(paged, {"counts", "requests"})->GetUint64() == 6);
}

TEST_CASE("kstate inventory prints nodes, images and what has not started as text", "[inventory][emulator]") {
  auto result = inventory({"-A"});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.rfind("NODES (3)\nNAME ", 0) == 0);
  CHECK(result.out.find("cp-1            control-plane") != std::string::npos);
  CHECK(result.out.find("containerd 1.7.12") != std::string::npos);
  CHECK(result.out.find("IMAGES (8 digests, pods of all namespaces)\n\nsha256:") != std::string::npos);
  CHECK(result.out.find("\n\n" + app_digest +
                        "\n  repo digest, containerd, docker\n  repository: registry.example.com/team/app\n") !=
        std::string::npos);
  CHECK(result.out.find("default/web-docker/migrate") != std::string::npos);
  CHECK(result.out.find("terminated (Completed)") != std::string::npos);
  CHECK(result.out.find("NOT STARTED (2)") != std::string::npos);
  CHECK(result.out.find("waiting (ContainerCreating)") != std::string::npos);
  CHECK(result.out.find("read 3 nodes and 7 pods (11 containers) in 2 requests") != std::string::npos);
}

TEST_CASE("kstate inventory reads the context's namespace unless told -n or -A", "[inventory][emulator]") {
  auto in_default = parse(inventory({"-o", "json"}).out);  // the emulator's contexts use namespace default
  CHECK(text(in_default, {"scope", "namespace"}) == "default");
  CHECK(json::find_path(in_default, {"counts", "pods"})->GetUint64() == 3);
  auto in_shop = parse(inventory({"-n", "shop", "-o", "json"}).out);
  CHECK(json::find_path(in_shop, {"counts", "pods"})->GetUint64() == 3);
  CHECK(json::find(in_shop, "nodes")->Size() == 3);  // nodes are not namespaced
  auto both = inventory({"-n", "shop", "-A"});
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("excludes") != std::string::npos);
}

TEST_CASE("kstate inventory --digest: where a build runs, in every imageID form; exit 0 found, 1 not, 2 error",
          "[inventory][emulator]") {
  // A registry's RepoDigests entry, matched against docker-pullable:// and containerd's form.
  auto found = inventory({"-A", "-o", "json", "--digest", "registry.example.com/team/app@" + app_digest});
  REQUIRE(found.exit_code == 0);
  auto report = parse(found.out);
  const auto& answer = (*json::find(report, "digests"))[0];
  CHECK(json::find(answer, "found")->GetBool());
  CHECK(json::find(answer, "repoDigestMatches")->GetUint64() == 2);
  CHECK(json::find(report, "images")->Size() == 1);
  REQUIRE(json::find(report, "notStarted")->Size() == 1);  // the unscheduled pod that pins it
  CHECK(json::find(report, "nodes")->Size() == 3);

  // Local image IDs: docker://sha256: and CRI-O's sha256:, two digests in one flag.
  auto local = inventory({"-A", "--digest", busybox_local_id, redis_local_id});
  CHECK(local.exit_code == 0);
  CHECK(local.out.find(busybox_local_id + ": runs in 1 container (as local image ID)") != std::string::npos);
  CHECK(local.out.find(redis_local_id + ": runs in 1 container (as local image ID)") != std::string::npos);
  CHECK(local.out.find("NODES") == std::string::npos);

  // One of two runs nowhere: exit 1, and the report says which.
  auto missing = "sha256:" + std::string(64, '0');
  auto partly = inventory({"-A", "--digest", app_digest, "--digest", missing});
  CHECK(partly.exit_code == 1);
  CHECK(partly.out.find(missing + ": runs nowhere in all namespaces") != std::string::npos);

  // In one namespace: coredns runs in kube-system only, and the hint says -A.
  auto scoped = inventory({"-n", "default", "--digest", coredns_digest});
  CHECK(scoped.exit_code == 1);
  CHECK(scoped.err.find("only namespace default was searched; -A searches all") != std::string::npos);
  CHECK(inventory({"-A", "--digest", coredns_digest}).exit_code == 0);

  // Not a digest: a usage error, before any request.
  auto bad = inventory({"-A", "--digest", "registry.example.com/team/app:1.2"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("is not a digest") != std::string::npos);
}

TEST_CASE("kstate inventory --image keeps one repository", "[inventory][emulator]") {
  auto result = inventory({"-A", "-o", "json", "--image", "quay.io/shop/api"});
  REQUIRE(result.exit_code == 0);
  auto report = parse(result.out);
  REQUIRE(json::find(report, "images")->Size() == 1);
  CHECK(first_of((*json::find(report, "images"))[0], "repositories") == "quay.io/shop/api");
  REQUIRE(json::find(report, "notStarted")->Size() == 1);  // quay.io/shop/api:2.1, being created
  CHECK(text(report, {"scope", "image"}) == "quay.io/shop/api");
}

TEST_CASE("kstate inventory with a client certificate, and with basic auth as a read-only user",
          "[inventory][emulator]") {
  for (const char* context : {"cert-admin", "basic-reader"}) {
    INFO(context);
    auto result = inventory({"-A", "-o", "json", "--context", context});
    REQUIRE(result.exit_code == 0);
    auto report = parse(result.out);
    CHECK(json::find(report, "nodes")->Size() == 3);
    CHECK(json::find(report, "images")->Size() == 8);
  }
  auto log = parse(cluster().request_log());
  bool seen_basic = false;
  for (const auto& entry : (*json::find(log, "requests")).GetArray()) {
    seen_basic = seen_basic || (text(entry, {"user"}) == "basic-reader" && text(entry, {"path"}) == "/api/v1/pods");
  }
  CHECK(seen_basic);
}

TEST_CASE("kstate inventory as a user who may list pods but not nodes: images listed, the 403 reported",
          "[inventory][emulator]") {
  auto result = inventory({"-A", "-o", "json", "--context", "pod-reader"});
  CHECK(result.exit_code == 0);  // the images answer stands (inventory/outcome.hpp)
  CHECK(result.err.find("kstate inventory: warning: cannot list nodes (the images are listed without node "
                        "details): Forbidden: nodes is forbidden: User \"pod-reader\" cannot list resource "
                        "\"nodes\" in API group \"\" at the cluster scope") != std::string::npos);
  auto report = parse(result.out);
  CHECK(json::find(report, "nodes")->Size() == 0);
  CHECK(json::find(report, "images")->Size() == 8);
  const auto& incomplete = *json::find(report, "incomplete");
  REQUIRE(incomplete.Size() == 1);
  CHECK(text(incomplete[0], {"resource"}) == "nodes");
  CHECK(text(incomplete[0], {"verb"}) == "list");
  CHECK(json::find(incomplete[0], "code")->GetInt() == 403);
  CHECK(text(incomplete[0], {"reason"}) == "Forbidden");
  CHECK(
      text(incomplete[0], {"message"}) ==
      "nodes is forbidden: User \"pod-reader\" cannot list resource \"nodes\" in API group \"\" at the cluster scope");

  auto text_report = inventory({"-A", "--context", "pod-reader"});
  CHECK(text_report.out.find("INCOMPLETE\n  list nodes: nodes is forbidden: User \"pod-reader\"") != std::string::npos);
  auto digest = inventory({"-A", "--context", "pod-reader", "--digest", app_digest});
  CHECK(digest.exit_code == 0);
  CHECK(inventory({"-A", "--context", "pod-reader", "--digest", "sha256:" + std::string(64, '1')}).exit_code == 1);
}

TEST_CASE("kstate inventory with a wrong password: 401, exit 2, and the password is never shown",
          "[inventory][emulator]") {
  Emulator emulator(with_fixture_cluster());
  auto kubeconfig = kstate::testing::read_file(emulator.kubeconfig_path());
  auto at = kubeconfig.find("username: basic-reader\n    password: ");
  REQUIRE(at != std::string::npos);
  auto password_at = at + std::string("username: basic-reader\n    password: ").size();
  kubeconfig.replace(password_at, 32, std::string(32, 'x'));
  auto wrong = emulator.data_dir().parent_path() / "wrong-password";
  kstate::testing::write_file(wrong, kubeconfig);
  auto unauthorized = kstate::testing::run_process(
      {KSTATE_BINARY, "inventory", "-A", "--kubeconfig", wrong.string(), "--context", "basic-reader"});
  CHECK(unauthorized.exit_code == 2);
  CHECK(unauthorized.err.find("cannot list pods: Unauthorized") != std::string::npos);
  CHECK(unauthorized.err.find(std::string(32, 'x')) == std::string::npos);  // never the password
}

}  // namespace inventory_test
