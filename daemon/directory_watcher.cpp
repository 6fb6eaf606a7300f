// inotify on Asio: the inotify descriptor is read with posix::stream_descriptor, events
// update a "touched" set, and a timer driven by the Debouncer flushes the batch.
// What a touched path means is decided at flush time by looking at the disk (lstat), so
// any editor's sequence of renames and temp files collapses to its end result.
#include "daemon/directory_watcher.hpp"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <system_error>

#include "daemon/debouncer.hpp"
#include "manifests/file_names.hpp"

namespace kstate::daemon {
namespace fs = std::filesystem;
namespace asio = boost::asio;

namespace {

constexpr std::uint32_t directory_mask = IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_FROM |
                                         IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                                         IN_EXCL_UNLINK;
constexpr std::uint32_t parent_mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;

// kubelet's AtomicWriter (ConfigMap and Secret volumes) swaps a `..data` symlink to a
// new `..<timestamp>` directory; the visible files are symlinks through it and see no event.
bool is_atomic_writer_entry(std::string_view name) {
  return name.starts_with("..");
}

bool is_under(const std::string& path, const std::string& directory) {
  return path.size() > directory.size() && path.compare(0, directory.size(), directory) == 0 &&
         path[directory.size()] == '/';
}

}  // namespace

struct DirectoryWatcher::Impl : std::enable_shared_from_this<DirectoryWatcher::Impl> {
  Impl(asio::any_io_executor executor, fs::path root_path, WatchOptions watch_options, Handler on_changes)
      : clock(watch_options.clock ? watch_options.clock : real_clock()),
        descriptor(executor),
        timer(clock->make_timer(executor)),
        root(root_path.lexically_normal()),
        options(watch_options),
        handler(std::move(on_changes)),
        debouncer(watch_options.debounce, watch_options.max_delay, watch_options.write_hold) {
    if (root.has_filename() == false && root.has_parent_path()) {
      root = root.parent_path();  // "dir/" -> "dir"
    }
  }

  std::shared_ptr<const Clock> clock;
  asio::posix::stream_descriptor descriptor;
  std::unique_ptr<Timer> timer;
  fs::path root;
  WatchOptions options;
  Handler handler;
  Debouncer debouncer;

  int inotify_fd = -1;
  int parent_watch = -1;
  bool root_present = false;
  bool stopped = false;
  std::map<int, std::string> directories;  // watch descriptor -> directory path
  std::set<std::string> known;             // files under root as of the last batch
  std::set<std::string> touched;
  std::set<std::string> writing;  // modified or created, not yet closed
  bool full_rescan = false;
  std::string rescan_reason;
  std::uint64_t overflows = 0;
  alignas(inotify_event) std::array<char, 64 * 1024> buffer{};

  void request_rescan(std::string reason) {
    if (!full_rescan) {
      rescan_reason = std::move(reason);
    }
    full_rescan = true;
  }

  // Watches `directory` and everything below it, collecting the files found.
  void add_tree(const std::string& directory, std::set<std::string>& files) {
    const int watch = inotify_add_watch(inotify_fd, directory.c_str(), directory_mask);
    if (watch < 0) {
      request_rescan("cannot watch " + directory + ": " + std::strerror(errno));
      return;
    }
    directories[watch] = directory;
    std::error_code ec;
    for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (manifests::is_skipped_name(name)) {
        continue;
      }
      std::error_code status_ec;
      const auto status = it->symlink_status(status_ec);
      if (status_ec) {
        continue;
      }
      if (fs::is_directory(status)) {
        add_tree(it->path().string(), files);
      } else {
        files.insert(it->path().string());
      }
    }
    if (ec) {
      request_rescan("cannot read " + directory + ": " + ec.message());
    }
  }

  void forget_watches_under(const std::string& directory) {
    for (auto it = directories.begin(); it != directories.end();) {
      if (it->second == directory || is_under(it->second, directory)) {
        inotify_rm_watch(inotify_fd, it->first);
        it = directories.erase(it);
      } else {
        ++it;
      }
    }
  }

  void touch_known_under(const std::string& directory) {
    for (auto it = known.upper_bound(directory); it != known.end() && is_under(*it, directory); ++it) {
      touched.insert(*it);
    }
  }

  void root_gone() {
    forget_watches_under(root.string());
    root_present = false;
    request_rescan("manifests directory " + root.string() + " was removed");
  }

  void root_appeared() {
    std::error_code ec;
    if (root_present || !fs::is_directory(root, ec)) {
      return;
    }
    root_present = true;
    std::set<std::string> files;
    add_tree(root.string(), files);
    request_rescan("manifests directory " + root.string() + " was (re)created");
  }

  void handle(const inotify_event& event, std::string_view name) {
    if ((event.mask & IN_Q_OVERFLOW) != 0) {
      ++overflows;
      request_rescan("inotify queue overflow");
      return;
    }
    if (event.wd == parent_watch) {
      if (name == root.filename().string()) {
        if ((event.mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
          if (root_present) {
            root_gone();  // replaced in one step (a symlink swapped, a folder renamed over it)
          }
          root_appeared();
        } else if ((event.mask & (IN_DELETE | IN_MOVED_FROM)) != 0 && root_present) {
          root_gone();
        }
      }
      return;
    }
    auto directory = directories.find(event.wd);
    if (directory == directories.end()) {
      return;  // a watch already forgotten
    }
    const std::string directory_path = directory->second;
    if ((event.mask & IN_IGNORED) != 0) {
      directories.erase(directory);
      if (directory_path == root.string() && root_present) {
        root_gone();
      }
      return;
    }
    if ((event.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
      if (directory_path == root.string()) {
        root_gone();
      }
      return;  // a subdirectory's own removal is handled through its parent's event
    }
    if (is_atomic_writer_entry(name)) {
      request_rescan("atomic update of " + directory_path + " (" + std::string(name) + ")");
      return;
    }
    if (name.empty() || manifests::is_skipped_name(name)) {
      return;
    }
    const std::string path = directory_path + "/" + std::string(name);
    if ((event.mask & IN_ISDIR) != 0) {
      if ((event.mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
        // Files may have been created before the watch was added: take them all.
        std::set<std::string> files;
        add_tree(path, files);
        touched.insert(files.begin(), files.end());
      } else if ((event.mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
        forget_watches_under(path);
        touch_known_under(path);
      }
      return;
    }
    touched.insert(path);
    if ((event.mask & IN_MODIFY) != 0) {
      writing.insert(path);
    } else if ((event.mask & IN_CREATE) != 0) {
      struct stat info {};
      // A new empty regular file is about to be written; a symlink or a hard link is complete.
      if (lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && !(info.st_size > 0 && info.st_nlink > 1)) {
        writing.insert(path);
      }
    } else if ((event.mask & (IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)) != 0) {
      writing.erase(path);
    }
  }

  void read_events() {
    descriptor.async_read_some(asio::buffer(buffer),
                               [self = shared_from_this()](const boost::system::error_code& ec, std::size_t size) {
                                 self->on_read(ec, size);
                               });
  }

  void on_read(const boost::system::error_code& ec, std::size_t size) {
    if (stopped || ec == asio::error::operation_aborted) {
      return;
    }
    if (ec) {
      spdlog::error("inotify read failed: {}", ec.message());
      request_rescan("inotify read failed: " + ec.message());
      schedule();
      return;
    }
    std::size_t offset = 0;
    while (offset + sizeof(inotify_event) <= size) {
      inotify_event event{};
      std::memcpy(&event, buffer.data() + offset, sizeof event);
      const char* name_start = buffer.data() + offset + sizeof event;
      const std::string_view name(name_start, event.len == 0 ? 0 : strnlen(name_start, event.len));
      handle(event, name);
      offset += sizeof event + event.len;
    }
    const bool batch_starts = !debouncer.pending();
    debouncer.record(clock->steady_now());
    schedule();
    read_events();
    if (batch_starts && options.on_batch_start) {
      options.on_batch_start();
    }
  }

  void schedule() {
    auto deadline = debouncer.deadline(!writing.empty());
    if (!deadline) {
      return;
    }
    timer->expires_at(*deadline);
    timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopped) {
        return;
      }
      if (self->debouncer.due(self->clock->steady_now(), !self->writing.empty())) {
        self->flush();
      } else {
        self->schedule();
      }
    });
  }

  void flush() {
    ChangeBatch batch;
    if (full_rescan) {
      // Re-walk the tree: directories created during an overflow get their watches.
      // No file lists: the consumer reloads the whole tree, and a vanished root must
      // not read as "every file was removed".
      std::set<std::string> files;
      std::error_code ec;
      if (root_present && fs::is_directory(root, ec)) {
        add_tree(root.string(), files);
      }
      batch.full_rescan = true;
      batch.rescan_reason = rescan_reason;
      known = std::move(files);
    } else {
      for (const auto& path : touched) {
        struct stat info {};
        if (lstat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
          batch.changed.push_back(path);
          known.insert(path);
        } else if (known.erase(path) != 0) {
          batch.removed.push_back(path);
        }
      }
    }
    touched.clear();
    writing.clear();
    full_rescan = false;
    rescan_reason.clear();
    debouncer.reset();
    if (!batch.empty()) {
      handler(std::move(batch));
    }
  }
};

DirectoryWatcher::DirectoryWatcher(asio::any_io_executor executor, fs::path root, WatchOptions options, Handler handler)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(root), options, std::move(handler))) {}

DirectoryWatcher::~DirectoryWatcher() {
  stop();
}

Status DirectoryWatcher::start() {
  auto& impl = *impl_;
  impl.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (impl.inotify_fd < 0) {
    return Error(ErrorKind::io, std::string("inotify_init1: ") + std::strerror(errno));
  }
  impl.descriptor.assign(impl.inotify_fd);
  const fs::path parent = impl.root.has_parent_path() ? impl.root.parent_path() : fs::path(".");
  impl.parent_watch = inotify_add_watch(impl.inotify_fd, parent.c_str(), parent_mask);
  if (impl.parent_watch < 0) {
    return Error(ErrorKind::io,
                 "cannot watch " + parent.string() + " (parent of the manifests directory): " + std::strerror(errno));
  }
  std::error_code ec;
  if (fs::is_directory(impl.root, ec)) {
    impl.root_present = true;
    impl.add_tree(impl.root.string(), impl.known);
  }
  impl.read_events();
  return ok_status();
}

void DirectoryWatcher::stop() {
  if (!impl_ || impl_->stopped) {
    return;
  }
  impl_->stopped = true;
  boost::system::error_code ignored;
  impl_->timer->cancel();
  impl_->descriptor.close(ignored);  // closes the inotify descriptor too
}

std::uint64_t DirectoryWatcher::overflow_count() const {
  return impl_->overflows;
}

std::size_t DirectoryWatcher::watched_directory_count() const {
  return impl_->directories.size();
}

}  // namespace kstate::daemon
