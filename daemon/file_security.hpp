// File-system checks of the daemon's trust boundary. Whoever can write a manifest (or
// a folder on the way to it) can make kstate create anything in the cluster, so such
// manifests are refused unless the config says otherwise (check-manifest-permissions:
// false); and the daemon's own folders (discovery cache, state) are private to it.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace kstate::daemon {

// Why `file` (a manifest under the folder `root`) must not be trusted, or nullopt:
// the file, or any folder from its own up to `root`, is writable by group or others,
// or - when kstate runs as root (`euid` 0) - is not owned by root. A symbolic link is
// judged by its target (and the target's folder), like ConfigMap volumes' `..data`.
// The message names the offending path and the fix.
std::optional<std::string> manifest_permission_problem(const std::string& file, const std::string& root, unsigned euid);

// The same, remembering each folder's verdict in `folders` (folder -> problem), so that
// one scan of many files stats every folder once. Use a fresh map for each scan: a
// folder's mode may change between scans.
using FolderVerdicts = std::map<std::string, std::optional<std::string>>;
// `link_info`: the file's lstat when the caller has it (the folder walk's), else null.
std::optional<std::string> manifest_permission_problem(const std::string& file, const std::string& root, unsigned euid,
                                                       FolderVerdicts& folders, const struct stat* link_info = nullptr);

// What the check of the folders above the manifests reads of a path: lstat(2) (0 on
// success) and readlink(2). Injected by tests, which play other owners and modes
// without being them.
struct PathStat {
  std::function<int(const std::string& path, struct stat& info)> lstat;
  std::function<std::optional<std::string>(const std::string& path)> read_link;
  static PathStat system();
};

// Why the daemon must not trust `manifests_dir`, or nullopt: like sshd's StrictModes,
// the folder and every folder above it up to "/" must be owned by root or by the
// daemon's user (`euid`) and not writable by group or others, and a symbolic link on
// the way must be owned by root or that user too (then its target is judged the same
// way); otherwise whoever may write there could swap the folder for one of their own
// and have kstate prune everything it manages. One exception, because it is as safe: a
// folder writable by everyone with the sticky bit and owned by root (/tmp) lets no one
// else rename or remove an entry owned by root or the daemon's user. Parts of the path
// that do not exist yet are not judged (their parent decides who may create them). The
// message is one line naming the path and the fix.
std::optional<std::string> manifests_dir_problem(const std::string& manifests_dir, unsigned euid,
                                                 const PathStat& paths = PathStat::system());

// Creates `dir` (and missing parents) with mode 0700; an existing folder of ours that
// group or others can enter is tightened to 0700. Errors name the folder.
Status ensure_private_directory(const std::string& dir);

}  // namespace kstate::daemon
