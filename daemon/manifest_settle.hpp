// Whether a manifest file may be trusted for prune, and read at all: a file that is
// still being written (a truncated file held open, a half-written document) or that
// changed moments ago (an object cut from one file and about to be pasted into
// another) says nothing final about what is declared, and a 0-byte file, a FIFO, a
// socket or a device where a manifest was is an accident, not a request to delete
// everything it declared. The decision (classify_manifest) is a pure function with
// table tests; observe_manifest gathers what it needs.
//
// "Open for writing" is the kernel's own answer: a read lease (fcntl F_SETLEASE
// F_RDLCK) is refused with EAGAIN while any process has the file open for writing or
// mapped writable (the inode's write count), and released at once when granted. One
// open, two fcntl calls and a close per file examined (only the files a cycle reads
// anew or whose objects prune would delete), where scanning /proc/*/fd would read
// every descriptor of every process; and unlike inotify's IN_MODIFY/IN_CLOSE_WRITE
// pairs it also sees writers that opened the file before the daemon started or have
// not written yet. Leases need root (CAP_LEASE) or the file's owner and a local file
// system: where one is refused, the changed-recently window alone decides (a writer
// that pauses longer than it is then missed; docs/ownership.md says so).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace kstate::daemon {

enum class ManifestSettle {
  settled,        // a regular file with content, not open for writing, unchanged for the window
  missing,        // no such file: removed (its objects may be pruned)
  being_written,  // open for writing by some process
  just_changed,   // modified (or its inode changed) within the window
  empty,          // a regular file of 0 bytes
  not_a_file,     // a FIFO, socket, device or folder where a manifest was
};
const char* to_string(ManifestSettle settle);
// Whether the file's objects must be kept whatever it declares now.
bool holds_prune(ManifestSettle settle);

struct ManifestObservation {
  bool exists = false;
  mode_t type = 0;  // st_mode & S_IFMT, after following symbolic links
  off_t size = 0;
  // The later of st_mtime and st_ctime (a rename or chmod moves ctime only).
  std::chrono::system_clock::time_point changed_at{};
  // nullopt: could not be asked (no lease for this file system or user).
  std::optional<bool> open_for_writing;
};

// How long a file must be unchanged to count as settled (the issue's "changed within
// the last 2 s"): editors and `kubectl`-style writers finish well within it.
inline constexpr std::chrono::seconds settle_window{2};

// `window` zero: no changed-recently rule (`kstate apply`, whose files a CI job has
// just checked out).
ManifestSettle classify_manifest(const ManifestObservation& file, std::chrono::system_clock::time_point now,
                                 std::chrono::system_clock::duration window = settle_window);

// stat(2) of the path (following symbolic links), and for a regular file with content
// the lease probe. Never opens anything but a regular file, so a FIFO never blocks.
ManifestObservation observe_manifest(const std::string& path);

// For prune (states::ReconcileOptions::check_sources): the manifest files among
// `sources` whose objects must be kept, and why. `known` answers first for files
// already judged this cycle.
std::map<std::string, ManifestSettle> held_manifests(
    const std::set<std::string>& sources, std::chrono::system_clock::time_point now,
    std::chrono::system_clock::duration window = settle_window,
    const std::function<std::optional<ManifestSettle>(const std::string&)>& known = {});
// The same as ReconcileOptions::check_sources answers it (file -> why, as a user reads it).
std::map<std::string, std::string> reasons(const std::map<std::string, ManifestSettle>& held);

}  // namespace kstate::daemon
