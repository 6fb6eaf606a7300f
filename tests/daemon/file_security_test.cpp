// Manifest permission checks and private folders on real files: what is refused
// (group/world-writable files and folders, files not owned by root when kstate runs as
// root, through symbolic links too) and with which message, and that the daemon's
// folders end up 0700.
#include "daemon/file_security.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace file_security_test {

using kstate::daemon::ensure_private_directory;
using kstate::daemon::manifest_permission_problem;
using kstate::testing::TempDir;
using kstate::testing::write_file;
namespace fs = std::filesystem;

namespace {

unsigned mode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

TEST_CASE("manifest permissions: private files and folders pass, writable ones are refused by name") {
  TempDir dir("kstate-perm");
  const fs::path root = dir.path() / "manifests";
  const fs::path file = root / "apps" / "web.yaml";
  write_file(file, "kind: ConfigMap\n");
  fs::permissions(root, fs::perms(0755));
  fs::permissions(root / "apps", fs::perms(0755));
  fs::permissions(file, fs::perms(0644));
  const unsigned euid = ::geteuid();
  CHECK_FALSE(manifest_permission_problem(file.string(), root.string(), euid));

  SECTION("a group-writable file") {
    fs::permissions(file, fs::perms(0664));
    auto problem = manifest_permission_problem(file.string(), root.string(), euid);
    REQUIRE(problem);
    CHECK(*problem == "refused: the file " + file.string() + " is writable by group or others (fix: chmod go-w " +
                          file.string() + ", or set check-manifest-permissions: false)");
  }
  SECTION("a world-writable subfolder") {
    fs::permissions(root / "apps", fs::perms(0757));
    auto problem = manifest_permission_problem(file.string(), root.string(), euid);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::StartsWith("refused: the folder " + (root / "apps").string() + " is writable"));
  }
  SECTION("the manifests folder itself") {
    fs::permissions(root, fs::perms(0775));
    auto problem = manifest_permission_problem(file.string(), root.string(), euid);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::StartsWith("refused: the folder " + root.string() + " is writable"));
  }
  SECTION("folders above the manifests folder are not judged") {
    fs::permissions(dir.path(), fs::perms(0777));
    CHECK_FALSE(manifest_permission_problem(file.string(), root.string(), euid));
  }
  SECTION("a symbolic link is judged by its target's folder (ConfigMap ..data layout)") {
    const fs::path data = root / "..2026_11_21";
    write_file(data / "cm.yaml", "kind: ConfigMap\n");
    fs::permissions(data / "cm.yaml", fs::perms(0644));
    fs::permissions(data, fs::perms(0755));
    fs::create_directory_symlink(data.filename(), root / "..data");
    fs::create_symlink(fs::path("..data") / "cm.yaml", root / "cm.yaml");
    CHECK_FALSE(manifest_permission_problem((root / "cm.yaml").string(), root.string(), euid));
    fs::permissions(data, fs::perms(0777));
    auto problem = manifest_permission_problem((root / "cm.yaml").string(), root.string(), euid);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("the folder " + data.string() + " is writable by group or others"));
  }
}

TEST_CASE("manifest permissions: when kstate runs as root, files and folders must be owned by root") {
  TempDir dir("kstate-perm-owner");
  const fs::path root = dir.path() / "manifests";
  const fs::path file = root / "web.yaml";
  write_file(file, "kind: ConfigMap\n");
  fs::permissions(root, fs::perms(0755));
  fs::permissions(file, fs::perms(0644));
  if (::geteuid() != 0) {
    // Only root can give a file away; the rule itself is checked with the euid it is given.
    auto problem = manifest_permission_problem(file.string(), root.string(), 0);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("not root, and kstate runs as root"));
    return;
  }
  CHECK_FALSE(manifest_permission_problem(file.string(), root.string(), 0));
  REQUIRE(::chown(file.c_str(), 65534, 65534) == 0);
  auto problem = manifest_permission_problem(file.string(), root.string(), 0);
  REQUIRE(problem);
  CHECK(*problem == "refused: the file " + file.string() +
                        " is owned by uid 65534, not root, and kstate runs as root (fix: chown root " + file.string() +
                        ", or set check-manifest-permissions: false)");
  // The same file is fine for a kstate that does not run as root.
  CHECK_FALSE(manifest_permission_problem(file.string(), root.string(), 1000));
}

TEST_CASE("private folders: created 0700, an existing open folder of ours tightened to 0700") {
  TempDir dir("kstate-private");
  const fs::path created = dir.path() / "cache" / "kstate";
  REQUIRE(ensure_private_directory(created.string()));
  CHECK(mode_of(created) == 0700);
  CHECK(mode_of(dir.path() / "cache") == 0700);

  const fs::path open = dir.path() / "state";
  fs::create_directory(open);
  fs::permissions(open, fs::perms(0755));
  REQUIRE(ensure_private_directory(open.string()));
  CHECK(mode_of(open) == 0700);

  write_file(dir.path() / "file", "x");
  auto not_folder = ensure_private_directory((dir.path() / "file").string());
  REQUIRE_FALSE(not_folder);
  CHECK_THAT(not_folder.error().message, Catch::EndsWith("file is not a folder"));
}

}  // namespace file_security_test
