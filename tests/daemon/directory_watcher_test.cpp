// The watcher against real inotify and real files: editors' save patterns, slow writers,
// ConfigMap volume updates, a removed and recreated root, new subdirectories and a real
// queue overflow. The debounce runs on a simulated clock (tests/support/manual_clock.hpp):
// inotify queues an event before the file operation returns, so a test reads the
// events already queued, then lets simulated time pass; none waits in real time.
#include "daemon/directory_watcher.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "tests/support/manual_clock.hpp"

namespace directory_watcher_test {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using kstate::daemon::ChangeBatch;
using kstate::daemon::DirectoryWatcher;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

struct WatchedTree {
  fs::path base;
  fs::path root;
  boost::asio::io_context io;
  std::shared_ptr<kstate::testing::ManualClock> clock = std::make_shared<kstate::testing::ManualClock>(io);
  std::vector<ChangeBatch> batches;
  std::vector<std::string> contents_at_batch;  // content of `probe` when each batch arrived
  std::vector<std::size_t> batch_starts;       // at each on_batch_start: how many batches had arrived
  fs::path probe;
  std::unique_ptr<DirectoryWatcher> watcher;

  explicit WatchedTree(bool create_root = true) {
    std::random_device random;
    base = fs::temp_directory_path() / ("kstate-watch-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    root = base / "manifests";
    fs::create_directories(base);
    if (create_root) {
      fs::create_directories(root);
    }
  }
  ~WatchedTree() {
    watcher.reset();
    std::error_code ignored;
    fs::remove_all(base, ignored);
  }

  void start() {
    kstate::daemon::WatchOptions options;
    options.debounce = 40ms;
    options.max_delay = 2s;
    options.write_hold = 3s;
    options.on_batch_start = [this] { batch_starts.push_back(batches.size()); };
    options.clock = clock;
    watcher = std::make_unique<DirectoryWatcher>(io.get_executor(), root, options, [this](ChangeBatch batch) {
      contents_at_batch.push_back(probe.empty() ? std::string() : read_file(probe));
      batches.push_back(std::move(batch));
    });
    REQUIRE(watcher->start().ok());
  }

  // The next batch within `window` of simulated time: the events already queued are
  // read, then time moves on a quarter of the debounce at a time.
  std::optional<ChangeBatch> batch_within(std::chrono::milliseconds window) {
    const std::size_t seen = batches.size();
    for (auto elapsed = 0ms; batches.size() == seen && elapsed < window; elapsed += 10ms) {
      io.restart();
      io.poll();  // reads what inotify has queued (the operations were done before)
      clock->advance(10ms);
    }
    if (batches.size() == seen) {
      return std::nullopt;
    }
    return batches[seen];
  }
  std::optional<ChangeBatch> next_batch() { return batch_within(10s); }

  // True when no batch arrives for several debounce periods.
  bool quiet_for(std::chrono::milliseconds window = 250ms) { return !batch_within(window).has_value(); }

  std::string at(const std::string& relative) const { return (root / relative).string(); }
};

using Paths = std::vector<std::string>;

}  // namespace

TEST_CASE("watcher: create, append and delete are reported once each") {
  WatchedTree tree;
  write_file(tree.root / "existing.yaml", "a: 1\n");
  tree.start();

  write_file(tree.root / "new.yaml", "b: 1\n");
  auto created = tree.next_batch();
  REQUIRE(created);
  CHECK(created->changed == Paths{tree.at("new.yaml")});
  CHECK(created->removed.empty());
  CHECK_FALSE(created->full_rescan);

  std::ofstream(tree.root / "existing.yaml", std::ios::app) << "c: 2\n";
  auto appended = tree.next_batch();
  REQUIRE(appended);
  CHECK(appended->changed == Paths{tree.at("existing.yaml")});

  fs::remove(tree.root / "existing.yaml");
  auto removed = tree.next_batch();
  REQUIRE(removed);
  CHECK(removed->changed.empty());
  CHECK(removed->removed == Paths{tree.at("existing.yaml")});
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: the first event of each batch is announced at once, before the batch is reported") {
  WatchedTree tree;
  tree.start();

  // A file written: several events (create, write, close), one batch, announced once,
  // before it.
  write_file(tree.root / "a.yaml", "a: 1\n");
  auto first = tree.next_batch();
  REQUIRE(first);
  CHECK(first->changed == Paths{tree.at("a.yaml")});
  CHECK(tree.batch_starts == std::vector<std::size_t>{0});

  write_file(tree.root / "b.yaml", "b: 1\n");
  REQUIRE(tree.next_batch());
  fs::remove(tree.root / "b.yaml");
  auto removed = tree.next_batch();
  REQUIRE(removed);
  CHECK(removed->removed == Paths{tree.at("b.yaml")});
  CHECK(tree.batch_starts == std::vector<std::size_t>{0, 1, 2});
  CHECK(tree.quiet_for());
  CHECK(tree.batch_starts.size() == 3);
}

TEST_CASE("watcher: vim's save (4913 probe, backup rename, new file) is one change of the file") {
  WatchedTree tree;
  write_file(tree.root / "app.yaml", "replicas: 1\n");
  tree.start();

  SECTION("the exact sequence vim performs") {
    write_file(tree.root / "4913", "");
    fs::remove(tree.root / "4913");
    fs::rename(tree.root / "app.yaml", tree.root / "app.yaml~");
    write_file(tree.root / "app.yaml", "replicas: 2\n");
    fs::remove(tree.root / "app.yaml~");
  }
  SECTION("real vim") {
    const std::string command = "cd '" + tree.root.string() +
                                "' && vim -N -u NONE -i NONE -n -es -c 'set backup writebackup backupcopy=no' "
                                "-c '%s/1/2/' -c 'wq' app.yaml </dev/null >/dev/null 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->changed == Paths{tree.at("app.yaml")});
  CHECK(batch->removed.empty());
  CHECK(read_file(tree.root / "app.yaml") == "replicas: 2\n");
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: names the loader never reads (emacs' #autosave#, .swp, vim's 4913 probe) wake nothing") {
  WatchedTree tree;
  write_file(tree.root / "app.yaml", "replicas: 1\n");
  tree.start();
  write_file(tree.root / "#app.yaml#", "replicas: 2\n");
  write_file(tree.root / "app.yaml.swp", "swap");
  write_file(tree.root / "4913", "");
  CHECK(tree.quiet_for());
  CHECK(tree.batches.empty());
}

TEST_CASE("watcher: emacs' save (lock symlink, backup, rewrite) is one change of the file") {
  WatchedTree tree;
  write_file(tree.root / "app.yaml", "replicas: 1\n");
  tree.start();
  fs::create_symlink("user@host.1234:1700000000", tree.root / ".#app.yaml");
  fs::rename(tree.root / "app.yaml", tree.root / "app.yaml~");
  write_file(tree.root / "app.yaml", "replicas: 3\n");
  fs::remove(tree.root / ".#app.yaml");
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->changed == Paths{tree.at("app.yaml")});
  CHECK(batch->removed.empty());
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: sed -i (temp file renamed over) is one change of the file") {
  WatchedTree tree;
  write_file(tree.root / "app.yaml", "image: nginx:1.25\n");
  tree.start();
  const std::string command = "sed -i 's/1.25/1.27/' '" + tree.at("app.yaml") + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->changed == Paths{tree.at("app.yaml")});
  CHECK(batch->removed.empty());
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: a slow writer (cat > file, pauses longer than debounce) gives one batch after close") {
  WatchedTree tree;
  tree.probe = tree.root / "slow.yaml";
  tree.start();
  const std::string full = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\n";
  std::ofstream out(tree.probe);
  std::istringstream lines(full);
  for (std::string line; std::getline(lines, line);) {
    out << line << "\n" << std::flush;
    CHECK_FALSE(tree.batch_within(100ms));  // a pause longer than the 40 ms debounce: still open for writing
  }
  out.close();
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->changed == Paths{tree.at("slow.yaml")});
  CHECK(tree.contents_at_batch.back() == full);  // never seen half-written
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: the ConfigMap volume ..data symlink swap asks for a full rescan") {
  WatchedTree tree;
  fs::create_directory(tree.root / "..2026_11_21_10_00_00.1");
  write_file(tree.root / "..2026_11_21_10_00_00.1" / "app.yaml", "v: 1\n");
  fs::create_directory_symlink("..2026_11_21_10_00_00.1", tree.root / "..data");
  fs::create_symlink("..data/app.yaml", tree.root / "app.yaml");
  tree.start();

  // kubelet's AtomicWriter: new timestamped dir, ..data_tmp symlink renamed over ..data.
  fs::create_directory(tree.root / "..2026_11_21_10_05_00.2");
  write_file(tree.root / "..2026_11_21_10_05_00.2" / "app.yaml", "v: 2\n");
  fs::create_directory_symlink("..2026_11_21_10_05_00.2", tree.root / "..data_tmp");
  fs::rename(tree.root / "..data_tmp", tree.root / "..data");
  fs::remove_all(tree.root / "..2026_11_21_10_00_00.1");

  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->full_rescan);
  CHECK_THAT(batch->rescan_reason, Catch::Contains("atomic update"));
  CHECK(batch->removed.empty());
  CHECK(read_file(tree.root / "app.yaml") == "v: 2\n");
  CHECK(tree.quiet_for());
}

TEST_CASE("watcher: the whole directory removed then recreated is a full rescan, never deletes") {
  WatchedTree tree;
  fs::create_directory(tree.root / "apps");
  write_file(tree.root / "apps" / "web.yaml", "a: 1\n");
  tree.start();
  REQUIRE(tree.watcher->watched_directory_count() == 2);

  fs::remove_all(tree.root);
  auto removed = tree.next_batch();
  REQUIRE(removed);
  CHECK(removed->full_rescan);
  CHECK_THAT(removed->rescan_reason, Catch::Contains("was removed"));
  CHECK(removed->removed.empty());

  fs::create_directories(tree.root / "apps");
  write_file(tree.root / "apps" / "web.yaml", "a: 2\n");
  auto recreated = tree.next_batch();
  REQUIRE(recreated);
  CHECK(recreated->full_rescan);
  CHECK_THAT(recreated->rescan_reason, Catch::Contains("created"));

  // The new tree is watched: a later edit is an ordinary change.
  std::ofstream(tree.root / "apps" / "web.yaml", std::ios::app) << "b: 3\n";
  auto edited = tree.next_batch();
  REQUIRE(edited);
  CHECK_FALSE(edited->full_rescan);
  CHECK(edited->changed == Paths{tree.at("apps/web.yaml")});
}

TEST_CASE("watcher: a root that does not exist yet is picked up when created") {
  WatchedTree tree(false);
  tree.start();
  fs::create_directory(tree.root);
  auto created = tree.next_batch();
  REQUIRE(created);
  CHECK(created->full_rescan);
  write_file(tree.root / "late.yaml", "x: 1\n");
  auto file = tree.next_batch();
  REQUIRE(file);
  CHECK(file->changed == Paths{tree.at("late.yaml")});
}

TEST_CASE("watcher: a new subdirectory tree with files is watched and its files reported") {
  WatchedTree tree;
  tree.start();
  fs::create_directories(tree.root / "team" / "deeper");
  write_file(tree.root / "team" / "a.yaml", "a: 1\n");
  write_file(tree.root / "team" / "deeper" / "b.yaml", "b: 1\n");
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->changed == Paths{tree.at("team/a.yaml"), tree.at("team/deeper/b.yaml")});
  CHECK(tree.watcher->watched_directory_count() == 3);

  write_file(tree.root / "team" / "deeper" / "b.yaml", "b: 2\n");
  auto edited = tree.next_batch();
  REQUIRE(edited);
  CHECK(edited->changed == Paths{tree.at("team/deeper/b.yaml")});

  // Moving the subtree out of the manifests folder removes its files.
  fs::rename(tree.root / "team", tree.base / "team");
  auto moved = tree.next_batch();
  REQUIRE(moved);
  CHECK(moved->removed == Paths{tree.at("team/a.yaml"), tree.at("team/deeper/b.yaml")});
  CHECK(tree.watcher->watched_directory_count() == 1);
}

TEST_CASE("watcher: a real inotify queue overflow is counted and asks for a full rescan") {
  WatchedTree tree;
  tree.start();
  // Permission changes alternating between two files (inotify merges identical consecutive
  // events only) fill the queue cheaply while the loop is not reading.
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  long limit = 16384;
  limit_file >> limit;
  write_file(tree.root / "a.yaml", "a: 1\n");
  write_file(tree.root / "b.yaml", "b: 1\n");
  // chmod gives IN_ATTRIB (setting times would give IN_MODIFY, which marks a write in progress).
  for (long i = 0; i < limit + 100; ++i) {
    fs::permissions(tree.root / (i % 2 == 0 ? "a.yaml" : "b.yaml"),
                    (i / 2) % 2 == 0 ? fs::perms(0640) : fs::perms(0644));
  }
  auto batch = tree.next_batch();
  REQUIRE(batch);
  CHECK(batch->full_rescan);
  CHECK_THAT(batch->rescan_reason, Catch::Contains("overflow"));
  CHECK(tree.watcher->overflow_count() >= 1);

  // After the rescan, ordinary events flow again.
  tree.quiet_for();
  fs::remove(tree.root / "a.yaml");
  auto removed = tree.next_batch();
  REQUIRE(removed);
  CHECK(removed->removed == Paths{tree.at("a.yaml")});
}

TEST_CASE("watcher: a root symlink swapped to another folder is a full rescan, and the new folder is watched") {
  WatchedTree tree(false);
  fs::create_directories(tree.base / "release-1");
  fs::create_directories(tree.base / "release-2");
  write_file(tree.base / "release-1" / "app.yaml", "v: 1\n");
  write_file(tree.base / "release-2" / "app.yaml", "v: 2\n");
  fs::create_directory_symlink("release-1", tree.root);
  tree.start();

  // `ln -sfn release-2 manifests` done atomically: new link renamed over the old one.
  fs::create_directory_symlink("release-2", tree.base / "manifests.tmp");
  fs::rename(tree.base / "manifests.tmp", tree.root);
  auto swapped = tree.next_batch();
  REQUIRE(swapped);
  CHECK(swapped->full_rescan);
  CHECK(read_file(tree.root / "app.yaml") == "v: 2\n");

  std::ofstream(tree.base / "release-2" / "app.yaml", std::ios::app) << "w: 3\n";
  auto edited = tree.next_batch();
  REQUIRE(edited);
  CHECK(edited->changed == Paths{tree.at("app.yaml")});
  // The old folder is no longer watched.
  std::ofstream(tree.base / "release-1" / "app.yaml", std::ios::app) << "w: 4\n";
  CHECK(tree.quiet_for());
}

}  // namespace directory_watcher_test
