// The inventory built page by page from the fixture cluster (tests/inventory/data/
// cluster.yaml: three nodes on containerd, Docker and CRI-O, and pods whose statuses
// carry every imageID form): nodes with their details, one entry per distinct digest
// with every place it runs (init and ephemeral containers included), containers not
// started, the --digest and --image filters, and answers that are not lists. Items are
// read as list answers give them, without kind and apiVersion.
#include "inventory/summary.hpp"

#include <catch2/catch.hpp>
#include <filesystem>

#include "manifests/yaml_to_json.hpp"
#include "tests/support/temp_dir.hpp"

namespace summary_test {

using namespace kstate;
using namespace kstate::inventory;

namespace {

const std::string app_digest = "sha256:bf1c5d0dcbd621410c4cba6de49131c02de0f050fb39c49180882adc0fd28fde";
const std::string busybox_local_id = "sha256:1b34b523c27e255843637c7e33830f8589bce920f25a0cf5a3b7304eea6cbca6";
const std::string migrate_digest = "sha256:3ae95314ef609077157a8d5050b9c095363f4b35e1a6088aeb44ce2004dc9560";
const std::string busybox_digest = "sha256:3c26c8e5e75a2132ce9abb95283e5c64be547749decb3106a6a1ed32fe64d43f";
const std::string redis_local_id = "sha256:bdd910a64ea016d5abeae65d7fd952d862e5d977f0374f93402787021d277955";

// The fixture's objects of one kind as LIST pages of `page_size` items, each item
// stripped of kind and apiVersion as list answers are.
std::vector<json::Document> pages_of(const std::string& kind, std::size_t page_size) {
  auto text =
      kstate::testing::read_file(std::filesystem::path(KSTATE_SOURCE_DIR) / "tests/inventory/data/cluster.yaml");
  auto stream = manifests::parse_yaml_documents(text);
  REQUIRE(stream.errors.empty());
  std::vector<json::Document> pages;
  for (auto& document : stream.documents) {
    if (json::string_or(json::find(document.json, "kind"), "") != kind) {
      continue;
    }
    if (pages.empty() || json::find(pages.back(), "items")->Size() == page_size) {
      pages.emplace_back();
      pages.back().SetObject();
      json::set(pages.back(), "items", json::Value(rapidjson::kArrayType), pages.back().GetAllocator());
    }
    document.json.RemoveMember("kind");
    document.json.RemoveMember("apiVersion");
    auto& page = pages.back();
    json::find(page, "items")->PushBack(json::Value(document.json, page.GetAllocator()), page.GetAllocator());
  }
  return pages;
}

Inventory build(Filter filter = {}, std::size_t page_size = 2) {
  Inventory inventory(Scope{true, ""}, std::move(filter));
  for (auto& page : pages_of("Node", page_size)) {
    REQUIRE(inventory.add_nodes(page).ok());
  }
  for (auto& page : pages_of("Pod", page_size)) {
    REQUIRE(inventory.add_pods(page).ok());
  }
  inventory.finish();
  return inventory;
}

const Image& image_with(const Inventory& inventory, DigestKind kind, const std::string& digest) {
  auto found = inventory.images().find({kind, digest});
  REQUIRE(found != inventory.images().end());
  return found->second;
}

std::vector<std::string> places(const Image& image) {
  std::vector<std::string> out;
  for (const auto& container : image.containers) {
    out.push_back(std::string(container.namespace_name) + "/" + std::string(container.pod) + "/" +
                  std::string(container.name));
  }
  return out;
}

DigestQuery query(const std::string& text) {
  auto parsed = parse_digest_query(text);
  REQUIRE(parsed.ok());
  return parsed.value();
}

}  // namespace

TEST_CASE("nodes: roles, Ready, platform, runtime and resources, sorted by name", "[inventory][summary]") {
  auto inventory = build();
  REQUIRE(inventory.nodes().size() == 3);
  CHECK(inventory.counts().nodes == 3);
  const Node& cp = inventory.nodes()[0];
  CHECK(cp.name == "cp-1");
  CHECK(cp.roles == std::vector<std::string>{"control-plane"});
  CHECK(cp.ready.status == "True");
  CHECK(cp.ready.reason == "KubeletReady");
  CHECK(cp.ready.since == "2024-05-01T08:00:12Z");
  CHECK(cp.architecture == "amd64");
  CHECK(cp.operating_system == "linux");
  CHECK(cp.os_image == "Ubuntu 22.04.4 LTS");
  CHECK(cp.kernel_version == "5.15.0-105-generic");
  CHECK(cp.container_runtime == "containerd");
  CHECK(cp.container_runtime_version == "1.7.12");
  CHECK(cp.kubelet_version == "v1.31.0");
  CHECK(cp.capacity.cpu == "4");
  CHECK(cp.capacity.memory == "16331016Ki");
  CHECK(cp.allocatable.cpu == "3800m");
  CHECK(cp.allocatable.memory == "15204616Ki");

  const Node& crio = inventory.nodes()[1];
  CHECK(crio.name == "worker-crio");
  CHECK(crio.roles.empty());
  CHECK(crio.ready.status == "False");
  CHECK(crio.ready.reason == "KubeletNotReady");
  CHECK(crio.container_runtime == "cri-o");
  CHECK(crio.container_runtime_version == "1.28.2");

  const Node& docker = inventory.nodes()[2];
  CHECK(docker.name == "worker-docker");
  CHECK(docker.roles == std::vector<std::string>{"edge", "worker"});  // kubernetes.io/role too
  CHECK(docker.architecture == "arm64");
  CHECK(docker.container_runtime == "docker");
}

TEST_CASE("images: one entry per digest with every place it runs, whatever the runtime's form",
          "[inventory][summary]") {
  auto inventory = build();
  CHECK(inventory.counts().pods == 7);
  CHECK(inventory.counts().containers == 11);
  CHECK(inventory.images().size() == 8);

  // The same build under docker-pullable:// (dockershim) and as a CRI repo digest (containerd).
  const Image& app = image_with(inventory, DigestKind::repo_digest, app_digest);
  CHECK(places(app) == std::vector<std::string>{"default/web-containerd/app", "default/web-docker/app"});
  CHECK(app.repositories == std::set<std::string>{"registry.example.com/team/app"});
  CHECK(app.references ==
        std::set<std::string>{"registry.example.com/team/app:1.2", "registry.example.com/team/app@" + app_digest});
  CHECK(app.runtimes == std::set<std::string>{"containerd", "docker"});
  const Container& on_docker = app.containers[1];
  CHECK(on_docker.node == "worker-docker");
  CHECK(on_docker.phase == "Running");
  CHECK(on_docker.state == "running");
  CHECK(on_docker.since == "2024-05-02T08:15:03Z");
  CHECK(on_docker.ready);
  CHECK(on_docker.type == ContainerType::container);
  CHECK(on_docker.runtime == "docker");
  CHECK(on_docker.image_id == "docker-pullable://registry.example.com/team/app@" + app_digest);

  // A docker:// local image ID is not a repo digest.
  const Image& sidecar = image_with(inventory, DigestKind::image_id, busybox_local_id);
  CHECK(places(sidecar) == std::vector<std::string>{"default/web-docker/sidecar"});
  CHECK(sidecar.repositories.empty());
  CHECK(sidecar.runtimes == std::set<std::string>{"docker"});

  // An init container that completed counts, with its termination.
  const Image& migrate = image_with(inventory, DigestKind::repo_digest, migrate_digest);
  REQUIRE(migrate.containers.size() == 1);
  CHECK(migrate.containers[0].type == ContainerType::init);
  CHECK(migrate.containers[0].state == "terminated");
  CHECK(migrate.containers[0].reason == "Completed");
  CHECK(migrate.containers[0].since == "2024-05-02T08:15:01Z");

  // So does an ephemeral (debug) container.
  const Image& debugger = image_with(inventory, DigestKind::repo_digest, busybox_digest);
  REQUIRE(debugger.containers.size() == 1);
  CHECK(debugger.containers[0].type == ContainerType::ephemeral);
  CHECK(debugger.containers[0].name == "debugger-x7k2p");
  CHECK(debugger.references == std::set<std::string>{"busybox:1.36"});  // what the pod asked for, not the status
  CHECK(debugger.repositories == std::set<std::string>{"docker.io/library/busybox"});

  // CRI-O's local image ID (sha256: without a repository).
  const Image& redis = image_with(inventory, DigestKind::image_id, redis_local_id);
  CHECK(places(redis) == std::vector<std::string>{"shop/api-crio/cache"});
  CHECK(redis.runtimes == std::set<std::string>{"cri-o"});

  // A crashed container waiting to restart ran: it is where the image runs, since its last exit.
  bool crash_found = false;
  for (const auto& [key, image] : inventory.images()) {
    for (const auto& container : image.containers) {
      if (container.pod == "crash") {
        crash_found = true;
        CHECK(container.state == "waiting");
        CHECK(container.reason == "CrashLoopBackOff");
        CHECK(container.since == "2024-05-02T08:59:30Z");
        CHECK_FALSE(container.ready);
      }
    }
  }
  CHECK(crash_found);
}

TEST_CASE("containers without an imageID are listed as not started", "[inventory][summary]") {
  auto inventory = build();
  REQUIRE(inventory.not_started().size() == 2);
  const Container& creating = inventory.not_started()[0];
  CHECK(creating.namespace_name == "shop");
  CHECK(creating.pod == "api-next");
  CHECK(creating.node == "worker-crio");
  CHECK(creating.phase == "Pending");
  CHECK(creating.state == "waiting");
  CHECK(creating.reason == "ContainerCreating");
  CHECK(creating.image == "quay.io/shop/api:2.1");
  const Container& unscheduled = inventory.not_started()[1];
  CHECK(unscheduled.pod == "unscheduled");
  CHECK(unscheduled.node.empty());
  CHECK(unscheduled.state.empty());  // no container status at all
  CHECK(unscheduled.image == "registry.example.com/team/app@" + app_digest);
}

TEST_CASE("the page size does not change the answer", "[inventory][summary]") {
  auto by_one = build({}, 1);
  auto by_hundred = build({}, 100);
  CHECK(by_one.counts().pods == by_hundred.counts().pods);
  REQUIRE(by_one.images().size() == by_hundred.images().size());
  for (const auto& [key, image] : by_one.images()) {
    CHECK(places(image) == places(by_hundred.images().at(key)));
  }
  CHECK(by_one.not_started().size() == by_hundred.not_started().size());
}

TEST_CASE("the digest filter keeps what runs each digest asked, counts both forms, and says what runs nowhere",
          "[inventory][summary]") {
  Filter filter;
  filter.digests = {query("registry.example.com/team/app@" + app_digest), query(busybox_local_id),
                    query(redis_local_id), query("sha256:" + std::string(64, '0')), query(app_digest)};
  auto inventory = build(filter);
  REQUIRE(inventory.digest_answers().size() == 4);  // the same digest asked twice is one answer
  const auto& app = inventory.digest_answers()[0];
  CHECK(app.repo_digest_matches == 2);  // docker-pullable:// and containerd's repo digest
  CHECK(app.image_id_matches == 0);
  CHECK(app.found());
  CHECK(inventory.digest_answers()[1].image_id_matches == 1);  // docker://sha256:
  CHECK(inventory.digest_answers()[2].image_id_matches == 1);  // CRI-O's sha256:
  CHECK_FALSE(inventory.digest_answers()[3].found());
  CHECK_FALSE(inventory.every_digest_found());
  CHECK(inventory.images().size() == 3);
  // The unscheduled pod pins the app build: listed as not started, not counted as found.
  REQUIRE(inventory.not_started().size() == 1);
  CHECK(inventory.not_started()[0].pod == "unscheduled");

  Filter found_only;
  found_only.digests = {query(app_digest)};
  CHECK(build(found_only).every_digest_found());
}

TEST_CASE("the image filter keeps one repository, however the reference is written", "[inventory][summary]") {
  Filter filter;
  filter.repository = normalize_repository("docker.io/library/busybox");
  auto inventory = build(filter);
  // busybox:1.36 (the debug container) and busybox:1.36-local (the sidecar, a docker://
  // image ID): one repository by name.
  REQUIRE(inventory.images().size() == 2);
  CHECK(inventory.images().count({DigestKind::repo_digest, busybox_digest}) == 1);
  CHECK(inventory.images().count({DigestKind::image_id, busybox_local_id}) == 1);
  CHECK(inventory.not_started().empty());

  Filter app;
  app.repository = normalize_repository("registry.example.com/team/app");
  auto apps = build(app);
  REQUIRE(apps.images().size() == 1);
  CHECK(places(apps.images().begin()->second).size() == 2);
  REQUIRE(apps.not_started().size() == 1);  // the unscheduled pod asks for it
  CHECK(apps.counts().containers == 11);    // counts are of everything seen
}

TEST_CASE("an answer that is not a list is an error, and odd items are skipped", "[inventory][summary]") {
  Inventory inventory(Scope{}, Filter{});
  auto status = json::parse(R"({"kind":"Status","status":"Failure"})").value();
  auto refused = inventory.add_pods(status);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("LIST pods") != std::string::npos);
  CHECK_FALSE(inventory.add_nodes(status).ok());
  auto odd = json::parse(R"({"items":[1,"x",{"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":)"
                         R"("c","image":"nginx"}]}}]})")
                 .value();
  REQUIRE(inventory.add_pods(odd).ok());
  inventory.finish();
  CHECK(inventory.counts().pods == 1);
  REQUIRE(inventory.not_started().size() == 1);
  CHECK(inventory.not_started()[0].phase.empty());
}

}  // namespace summary_test
