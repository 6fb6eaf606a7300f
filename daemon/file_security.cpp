// Manifest permission checks and private folders (see file_security.hpp).
#include "daemon/file_security.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kstate::daemon {
namespace fs = std::filesystem;

namespace {

// The problem with a path whose (followed) status is `info`, or nullopt.
std::optional<std::string> mode_problem(const fs::path& path, const struct stat& info, bool is_folder, unsigned euid) {
  const char* what = is_folder ? "folder" : "file";
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return "refused: the " + std::string(what) + " " + path.string() +
           " is writable by group or others (fix: chmod go-w " + path.string() +
           ", or set check-manifest-permissions: false)";
  }
  if (euid == 0 && info.st_uid != 0) {
    return "refused: the " + std::string(what) + " " + path.string() + " is owned by uid " +
           std::to_string(info.st_uid) + ", not root, and kstate runs as root (fix: chown root " + path.string() +
           ", or set check-manifest-permissions: false)";
  }
  return std::nullopt;
}

// The problem with one path (followed when a symbolic link), or nullopt.
std::optional<std::string> path_problem(const fs::path& path, bool is_folder, unsigned euid) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return std::nullopt;  // the loader reports why it cannot be read
  }
  return mode_problem(path, info, is_folder, euid);
}

}  // namespace

std::optional<std::string> manifest_permission_problem(const std::string& file, const std::string& root,
                                                       unsigned euid) {
  FolderVerdicts folders;
  return manifest_permission_problem(file, root, euid, folders);
}

std::optional<std::string> manifest_permission_problem(const std::string& file, const std::string& root, unsigned euid,
                                                       FolderVerdicts& folders, const struct stat* link_info) {
  const fs::path top = fs::path(root).lexically_normal();
  const fs::path path = fs::path(file).lexically_normal();
  // One lstat tells a plain file (checked as it is) from a symbolic link (checked by
  // its target, and its target's folder below); resyncs look at every file, so the
  // folder walk's lstat is used when the caller has it.
  struct stat own_link_info {};
  if (link_info == nullptr) {
    if (::lstat(path.c_str(), &own_link_info) != 0) {
      return std::nullopt;  // the loader reports why it cannot be read
    }
    link_info = &own_link_info;
  }
  const bool symlink = S_ISLNK(link_info->st_mode);
  if (auto problem = symlink ? path_problem(path, false, euid) : mode_problem(path, *link_info, false, euid)) {
    return problem;
  }
  // Every folder from the file's own up to the manifests folder (inclusive).
  for (fs::path folder = path.parent_path(); !folder.empty(); folder = folder.parent_path()) {
    auto [verdict, fresh] = folders.try_emplace(folder.string());
    if (fresh) {
      verdict->second = path_problem(folder, true, euid);
    }
    if (verdict->second) {
      return verdict->second;
    }
    if (folder == top || folder == folder.parent_path()) {
      break;
    }
  }
  // A symbolic link: whoever can write the target's folder can replace the target.
  std::error_code error;
  if (symlink) {
    const fs::path target = fs::canonical(path, error);
    if (!error) {
      if (auto problem = path_problem(target.parent_path(), true, euid)) {
        return problem;
      }
    }
  }
  return std::nullopt;
}

PathStat PathStat::system() {
  PathStat paths;
  paths.lstat = [](const std::string& path, struct stat& info) { return ::lstat(path.c_str(), &info); };
  paths.read_link = [](const std::string& path) -> std::optional<std::string> {
    std::error_code error;
    fs::path target = fs::read_symlink(path, error);
    return error ? std::nullopt : std::optional<std::string>(target.string());
  };
  return paths;
}

namespace {

constexpr int max_symbolic_links = 40;  // the kernel's ELOOP bound

// The problem with one existing entry on the way (lstat'ed, not a link), or nullopt.
std::optional<std::string> entry_problem(const std::string& path, const struct stat& info, unsigned euid) {
  if (info.st_uid != 0 && info.st_uid != euid) {
    return "refused: the folder " + path + " on the way to the manifests is owned by uid " +
           std::to_string(info.st_uid) +
           ", not root or kstate's user, so it could replace what kstate reads (fix: chown root " + path +
           ", or set check-manifest-permissions: false)";
  }
  const bool sticky_root = (info.st_mode & S_ISVTX) != 0 && info.st_uid == 0;
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_root) {
    return "refused: the folder " + path +
           " on the way to the manifests is writable by group or others, who could replace what kstate reads "
           "(fix: chmod go-w " +
           path + ", or set check-manifest-permissions: false)";
  }
  return std::nullopt;
}

// Judges `path` (absolute, normal) entry by entry from "/", each symbolic link and then
// the rest of the path from its target; `links` counts the links followed.
std::optional<std::string> judge_path(const fs::path& path, unsigned euid, const PathStat& paths, int& links) {
  fs::path walked;
  for (auto part = path.begin(); part != path.end(); ++part) {
    fs::path next = walked.empty() ? *part : walked / *part;
    if (part->empty() || *part == ".") {
      continue;
    }
    struct stat info {};
    if (paths.lstat(next.string(), info) != 0) {
      return std::nullopt;  // not there yet: its parent, judged already, decides who may create it
    }
    if (S_ISLNK(info.st_mode)) {
      if (info.st_uid != 0 && info.st_uid != euid) {
        return "refused: the symbolic link " + next.string() + " on the way to the manifests is owned by uid " +
               std::to_string(info.st_uid) +
               ", not root or kstate's user (fix: replace it with one owned by root, or set "
               "check-manifest-permissions: false)";
      }
      const std::optional<std::string> target = paths.read_link(next.string());
      if (!target) {
        return std::nullopt;  // unreadable: the walk of the manifests says why
      }
      if (++links > max_symbolic_links) {
        return "refused: too many symbolic links on the way to the manifests (at " + next.string() + ")";
      }
      fs::path rest = fs::path(*target).is_absolute() ? fs::path(*target) : walked / *target;
      for (auto tail = std::next(part); tail != path.end(); ++tail) {
        rest /= *tail;
      }
      return judge_path(rest.lexically_normal(), euid, paths, links);
    }
    if (auto problem = entry_problem(next.string(), info, euid)) {
      return problem;
    }
    walked = next;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> manifests_dir_problem(const std::string& manifests_dir, unsigned euid,
                                                 const PathStat& paths) {
  std::error_code error;
  const fs::path absolute = fs::absolute(manifests_dir, error).lexically_normal();
  if (error) {
    return std::nullopt;
  }
  int links = 0;
  return judge_path(absolute, euid, paths, links);
}

Status ensure_private_directory(const std::string& dir) {
  std::error_code error;
  if (!fs::exists(dir, error)) {
    fs::path partial;
    for (const auto& part : fs::path(dir)) {
      partial /= part;
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        return Error(ErrorKind::io, "cannot create " + partial.string() + ": " + std::strerror(errno));
      }
    }
    return ok_status();
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    return Error(ErrorKind::io, "cannot inspect " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(info.st_mode)) {
    return Error(ErrorKind::io, dir + " is not a folder");
  }
  if ((info.st_mode & 077) != 0 && info.st_uid == ::geteuid()) {
    if (::chmod(dir.c_str(), 0700) != 0) {
      return Error(ErrorKind::io, "cannot make " + dir + " private (chmod 0700): " + std::strerror(errno));
    }
  }
  return ok_status();
}

}  // namespace kstate::daemon
