// Watches the manifests tree with inotify (directories, not files, so new files and
// subdirectories are seen) and reports debounced batches: which files changed, which
// were removed, or that a full rescan is needed (queue overflow, the root removed or
// recreated, a ConfigMap-style `..data` swap, an unreadable directory). Paths that
// appear and vanish within one batch (vim's 4913 probe, sed's temp file) are never
// reported; hidden names and backups (editor swap, lock and `~` files) are ignored. A full rescan must
// never be read as "everything was removed": the consumer reloads the whole tree.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace kstate::daemon {

struct ChangeBatch {
  std::vector<std::string> changed;  // files that exist now and may have new content (sorted)
  std::vector<std::string> removed;  // files that existed and are gone (sorted)
  // Reload the whole tree; `changed` and `removed` are then empty.
  bool full_rescan = false;
  std::string rescan_reason;  // why, for logs and STATUS

  bool empty() const { return changed.empty() && removed.empty() && !full_rescan; }
};

struct WatchOptions {
  std::chrono::steady_clock::duration debounce = std::chrono::milliseconds(300);
  // A tree that never goes quiet is still reported this long after its first event.
  std::chrono::steady_clock::duration max_delay = std::chrono::seconds(5);
  // A file opened for writing and not yet closed is held back this long at most.
  std::chrono::steady_clock::duration write_hold = std::chrono::seconds(30);
  // Called on the first event of each batch, once its debounce has started: the
  // reconciler may prepare for the cycle that follows while the tree settles.
  std::function<void()> on_batch_start;
  // The debounce's time and timer (tests: a simulated clock); the real clock when null.
  std::shared_ptr<const Clock> clock;
};

class DirectoryWatcher {
 public:
  using Handler = std::function<void(ChangeBatch)>;

  // `root` need not exist yet: its parent is watched so that its creation is seen.
  DirectoryWatcher(boost::asio::any_io_executor executor, std::filesystem::path root, WatchOptions options,
                   Handler handler);
  ~DirectoryWatcher();
  DirectoryWatcher(const DirectoryWatcher&) = delete;
  DirectoryWatcher& operator=(const DirectoryWatcher&) = delete;

  // Sets up inotify and the watches and starts reading; errors if inotify is unavailable
  // or the root's parent cannot be watched.
  Status start();
  // Stops reading; no handler runs afterwards.
  void stop();

  // IN_Q_OVERFLOW events seen since start (exported as a metric).
  std::uint64_t overflow_count() const;
  // Directories currently watched (for tests and debug logs).
  std::size_t watched_directory_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace kstate::daemon
