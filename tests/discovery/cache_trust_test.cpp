// The discovery cache trusts only what nobody else could have written
// (discovery/cache.hpp): an entry decides where objects are sent, and its checksum only
// catches corruption (anyone can recompute it). A planted entry that maps ConfigMap to
// the `secrets` endpoint, in a folder owned by another user or writable by others, is
// ignored (with a warning) and discovery asks the server; kstate never writes into
// such a folder either, nor follows a link planted where its files go.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "core/dynamic_client.hpp"
#include "discovery/cache.hpp"
#include "discovery/client.hpp"
#include "tests/support/emulator.hpp"
#include "tests/support/temp_dir.hpp"

namespace cache_trust_test {

using namespace kstate;
using namespace kstate::discovery;
using kstate::testing::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr uid_t other_user = 65534;  // nobody

// An entry that sends ConfigMaps to the Secret endpoint, its checksum recomputed.
CacheEntry planted_entry(const std::string& server) {
  CacheEntry entry;
  entry.server = server;
  entry.fetched_at = std::chrono::system_clock::now();
  entry.format = "aggregated v2";
  ApiResource configmaps;
  configmaps.version = "v1";
  configmaps.kind = "ConfigMap";
  configmaps.plural = "secrets";
  configmaps.namespaced = true;
  configmaps.verbs = {"get", "list", "create", "patch", "delete"};
  entry.core_resources = {configmaps};
  return entry;
}

// Writes the entry as an attacker would: the file and its folders by hand.
void plant(const std::string& file, const CacheEntry& entry) {
  fs::create_directories(fs::path(file).parent_path());
  kstate::testing::write_file(file, serialize_cache_entry(entry));
}

}  // namespace

TEST_CASE("discovery cache: files and folders others could write are neither read nor written",
          "[discovery][cache][security]") {
  TempDir dir;
  const std::string cache_dir = (dir.path() / "cache").string();
  const std::string file = cache_file_for(cache_dir, "https://10.0.0.1:6443");
  const std::string host_folder = fs::path(file).parent_path().string();
  const CacheEntry entry = planted_entry("https://10.0.0.1:6443");
  REQUIRE(write_cache(file, entry).ok());
  REQUIRE(read_cache(file).ok());

  struct Case {
    const char* what;
    std::function<void()> make_untrusted;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"file writable by others", [&] { ::chmod(file.c_str(), 0666); }, file + " is writable by group or others"},
      {"file writable by its group", [&] { ::chmod(file.c_str(), 0620); }, "is writable by group or others"},
      {"file owned by another user", [&] { REQUIRE(::chown(file.c_str(), other_user, -1) == 0); },
       file + " is owned by another user (uid 65534)"},
      {"host folder owned by another user", [&] { REQUIRE(::chown(host_folder.c_str(), other_user, -1) == 0); },
       host_folder + " is owned by another user"},
      {"discovery folder writable by others", [&] { ::chmod((cache_dir + "/discovery").c_str(), 0777); },
       cache_dir + "/discovery is writable by group or others"},
      {"cache-dir owned by another user", [&] { REQUIRE(::chown(cache_dir.c_str(), other_user, -1) == 0); },
       cache_dir + " is owned by another user"},
      {"a symbolic link where the file goes",
       [&] {
         fs::remove(file);
         fs::create_symlink("/etc/hostname", file);
       },
       file + " is not a regular file"},
  };
  for (const auto& one : cases) {
    INFO(one.what);
    fs::remove_all(cache_dir);
    REQUIRE(write_cache(file, entry).ok());
    one.make_untrusted();
    auto read = read_cache(file);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().kind == ErrorKind::forbidden);
    CHECK_THAT(read.error().message, Catch::StartsWith("not trusted: "));
    CHECK_THAT(read.error().message, Catch::Contains(one.expected));
  }
  // kstate does not write into a folder someone else controls.
  fs::remove_all(cache_dir);
  fs::create_directories(host_folder);
  REQUIRE(::chown(host_folder.c_str(), other_user, -1) == 0);
  auto written = write_cache(file, entry);
  REQUIRE_FALSE(written.ok());
  CHECK_THAT(written.error().message, Catch::Contains("not written: " + host_folder + " is owned by another user"));
  CHECK_FALSE(fs::exists(file));
  // Nor does it follow a link left where its temporary file goes.
  fs::remove_all(cache_dir);
  fs::create_directories(host_folder);
  ::chmod(host_folder.c_str(), 0700);
  const fs::path target = dir.path() / "victim";
  kstate::testing::write_file(target, "untouched");
  fs::create_symlink(target, file + ".tmp." + std::to_string(::getpid()));
  REQUIRE(write_cache(file, entry).ok());
  CHECK(kstate::testing::read_file(target) == "untouched");
  WARN(cases.size() << " kinds of untrusted cache entries refused; none written into a folder of another user");
}

TEST_CASE("discovery cache: a planted entry in a folder of another user is ignored, discovery asks the server",
          "[discovery][cache][security][emulator]") {
  kstate::testing::Emulator emulator;
  TempDir dir;
  const std::string cache_dir = (dir.path() / "cache").string();
  boost::asio::io_context io;
  KubeconfigSources sources;
  sources.kubeconfig_flag = emulator.kubeconfig_path().string();
  auto client = make_client(io.get_executor(), sources, TransportOptions{});
  REQUIRE(client.ok());
  const std::string server = (*client)->config.server;
  const std::string file = cache_file_for(cache_dir, server);
  plant(file, planted_entry(server));
  REQUIRE(::chown(fs::path(file).parent_path().c_str(), other_user, -1) == 0);

  DiscoveryOptions options;
  options.cache_dir = cache_dir;
  DiscoveryClient discovery(*(*client)->transport, server, options);
  REQUIRE(run_sync(io, discovery.load()).ok());
  CHECK_FALSE(discovery.stats().from_cache);
  CHECK(discovery.stats().requests > 0);
  const auto* configmaps = discovery.mapper().find({"", "v1", "ConfigMap"});
  REQUIRE(configmaps != nullptr);
  CHECK(configmaps->plural == "configmaps");
}

}  // namespace cache_trust_test
