// Manifest permission checks and private folders on real files: what is refused
// (group/world-writable files and folders, files not owned by root when kstate runs as
// root, through symbolic links too) and with which message, and that the daemon's
// folders end up 0700.
#include "daemon/file_security.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <map>

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

namespace {

// A file system of folders and links, owner and mode each, for the check of the
// folders above the manifests without being other users.
struct FakeEntry {
  uid_t owner = 0;
  mode_t mode = S_IFDIR | 0755;
  std::string link;  // a symbolic link's target
};
kstate::daemon::PathStat fake_paths(const std::map<std::string, FakeEntry>& entries) {
  kstate::daemon::PathStat paths;
  paths.lstat = [entries](const std::string& path, struct stat& info) {
    auto found = entries.find(path);
    if (found == entries.end()) {
      return -1;
    }
    info = {};
    info.st_uid = found->second.owner;
    info.st_mode = found->second.link.empty() ? found->second.mode : (S_IFLNK | 0777);
    return 0;
  };
  paths.read_link = [entries](const std::string& path) -> std::optional<std::string> {
    auto found = entries.find(path);
    if (found == entries.end() || found->second.link.empty()) {
      return std::nullopt;
    }
    return found->second.link;
  };
  return paths;
}

}  // namespace

TEST_CASE("the folders above manifests-dir are judged as sshd's StrictModes does", "[file_security]") {
  using kstate::daemon::manifests_dir_problem;
  const unsigned daemon_user = 0;
  std::map<std::string, FakeEntry> tree{
      {"/", {}},
      {"/etc", {}},
      {"/etc/kstate", {}},
      {"/etc/kstate/manifests", {}},
      {"/tmp", {0, S_IFDIR | 01777, ""}},
      {"/tmp/kstate", {0, S_IFDIR | 0700, ""}},
  };
  CHECK_FALSE(manifests_dir_problem("/etc/kstate/manifests", daemon_user, fake_paths(tree)));
  // A folder that does not exist yet: its parent decides who may create it.
  CHECK_FALSE(manifests_dir_problem("/etc/kstate/later/manifests", daemon_user, fake_paths(tree)));
  // /tmp: everyone may write it, but the sticky bit lets no one swap root's entries.
  CHECK_FALSE(manifests_dir_problem("/tmp/kstate", daemon_user, fake_paths(tree)));

  struct Row {
    const char* name;
    std::function<void(std::map<std::string, FakeEntry>&)> change;
    std::string dir;
    unsigned euid;
    const char* message_part;  // empty: accepted
  };
  const std::vector<Row> rows = {
      {"a parent writable by others", [](auto& t) { t["/etc/kstate"].mode = S_IFDIR | 0757; }, "/etc/kstate/manifests",
       0, "the folder /etc/kstate on the way to the manifests is writable by group or others"},
      {"a parent writable by its group", [](auto& t) { t["/etc"].mode = S_IFDIR | 0775; }, "/etc/kstate/manifests", 0,
       "the folder /etc on the way"},
      {"the manifests folder itself owned by another user", [](auto& t) { t["/etc/kstate/manifests"].owner = 1000; },
       "/etc/kstate/manifests", 0, "/etc/kstate/manifests on the way to the manifests is owned by uid 1000"},
      {"a parent owned by another user", [](auto& t) { t["/etc/kstate"].owner = 1000; }, "/etc/kstate/manifests", 0,
       "owned by uid 1000"},
      {"owned by the daemon's own user", [](auto& t) { t["/etc/kstate"].owner = 998; }, "/etc/kstate/manifests", 998,
       ""},
      {"a sticky folder not owned by root", [](auto& t) { t["/tmp"].owner = 1000; }, "/tmp/kstate", 0,
       "the folder /tmp on the way"},
      {"a world-writable folder without the sticky bit", [](auto& t) { t["/tmp"].mode = S_IFDIR | 0777; },
       "/tmp/kstate", 0, "writable by group or others"},
      {"manifests-dir a symbolic link owned by root to a good folder",
       [](auto& t) {
         t["/srv"] = {};
         t["/srv/manifests"] = {};
         t["/etc/kstate/manifests"] = {0, 0, "/srv/manifests"};
       },
       "/etc/kstate/manifests", 0, ""},
      {"manifests-dir replaced by a symbolic link owned by another user",
       [](auto& t) {
         t["/srv"] = {};
         t["/srv/manifests"] = {};
         t["/etc/kstate/manifests"] = {1000, 0, "/srv/manifests"};
       },
       "/etc/kstate/manifests", 0,
       "the symbolic link /etc/kstate/manifests on the way to the manifests is owned by uid 1000"},
      {"a root-owned link to a folder under a folder others may write",
       [](auto& t) {
         t["/home"] = {0, S_IFDIR | 0777, ""};
         t["/home/evil"] = {1000, S_IFDIR | 0755, ""};
         t["/etc/kstate/manifests"] = {0, 0, "../../home/evil"};
       },
       "/etc/kstate/manifests", 0, "the folder /home on the way"},
      {"a relative link further down the path",
       [](auto& t) {
         t["/etc/kstate"] = {0, 0, "kstate-real"};
         t["/etc/kstate-real"] = {1000, S_IFDIR | 0755, ""};
         t["/etc/kstate-real/manifests"] = {};
       },
       "/etc/kstate/manifests", 0, "the folder /etc/kstate-real on the way to the manifests is owned by uid 1000"},
      {"a link loop",
       [](auto& t) {
         t["/etc/kstate/manifests"] = {0, 0, "/etc/kstate/manifests"};
       },
       "/etc/kstate/manifests", 0, "too many symbolic links"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    std::map<std::string, FakeEntry> changed = tree;
    row.change(changed);
    auto problem = manifests_dir_problem(row.dir, row.euid, fake_paths(changed));
    if (std::string(row.message_part).empty()) {
      CHECK_FALSE(problem);
    } else {
      REQUIRE(problem);
      CHECK_THAT(*problem, Catch::Contains(row.message_part));
      CHECK(problem->find('\n') == std::string::npos);  // one line
    }
  }
}

TEST_CASE("the folders above manifests-dir on the real file system", "[file_security]") {
  using kstate::daemon::manifests_dir_problem;
  TempDir dir("kstate-strict");
  const fs::path parent = dir.path() / "etc";
  const fs::path manifests = parent / "manifests";
  fs::create_directories(manifests);
  fs::permissions(parent, fs::perms(0755));
  fs::permissions(manifests, fs::perms(0755));
  const unsigned euid = ::geteuid();
  CHECK_FALSE(manifests_dir_problem(manifests.string(), euid));
  fs::permissions(parent, fs::perms(0777));
  auto problem = manifests_dir_problem(manifests.string(), euid);
  REQUIRE(problem);
  CHECK_THAT(*problem, Catch::Contains("the folder " + parent.string() + " on the way to the manifests is writable"));
  fs::permissions(parent, fs::perms(0755));
  if (euid == 0) {
    // Root can play the unprivileged user who owns a folder on the way.
    REQUIRE(::chown(parent.c_str(), 4321, 4321) == 0);
    problem = manifests_dir_problem(manifests.string(), euid);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("owned by uid 4321"));
    REQUIRE(::chown(parent.c_str(), 0, 0) == 0);
    const fs::path link = dir.path() / "link";
    fs::create_directory_symlink(manifests, link);
    CHECK_FALSE(manifests_dir_problem(link.string(), euid));
    REQUIRE(::lchown(link.c_str(), 4321, 4321) == 0);
    problem = manifests_dir_problem(link.string(), euid);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("the symbolic link " + link.string()));
  }
}

}  // namespace file_security_test
