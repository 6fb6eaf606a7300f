// Whether a manifest file may be used for prune (daemon/manifest_settle.hpp): the
// decision as a table, and the observation of real files, including one held open for
// writing by another process and a FIFO (which must not block).
#include "daemon/manifest_settle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "tests/support/temp_dir.hpp"

namespace manifest_settle_test {

using kstate::daemon::classify_manifest;
using kstate::daemon::ManifestObservation;
using kstate::daemon::ManifestSettle;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using namespace std::chrono_literals;
using SystemClock = std::chrono::system_clock;

TEST_CASE("classify_manifest: what keeps a file's objects from prune", "[settle]") {
  const SystemClock::time_point now = SystemClock::time_point(1'000'000s);
  const auto file = [&](mode_t type, off_t size, SystemClock::duration age, std::optional<bool> writing) {
    ManifestObservation observed;
    observed.exists = true;
    observed.type = type;
    observed.size = size;
    observed.changed_at = now - age;
    observed.open_for_writing = writing;
    return observed;
  };
  struct Row {
    const char* name;
    ManifestObservation observed;
    SystemClock::duration window;
    ManifestSettle expected;
  };
  const std::vector<Row> rows = {
      {"a settled file", file(S_IFREG, 120, 10s, false), 2s, ManifestSettle::settled},
      {"removed", ManifestObservation{}, 2s, ManifestSettle::missing},
      {"open for writing", file(S_IFREG, 120, 10s, true), 2s, ManifestSettle::being_written},
      {"open for writing, no window (kstate apply)", file(S_IFREG, 120, 10s, true), 0s, ManifestSettle::being_written},
      {"changed 1 s ago", file(S_IFREG, 120, 1s, false), 2s, ManifestSettle::just_changed},
      {"changed 2 s ago", file(S_IFREG, 120, 2s, false), 2s, ManifestSettle::settled},
      {"changed in the future (clock stepped back)", file(S_IFREG, 120, -30s, false), 2s, ManifestSettle::just_changed},
      {"changed 1 s ago, no window", file(S_IFREG, 120, 1s, false), 0s, ManifestSettle::settled},
      {"no lease answer, settled by time", file(S_IFREG, 120, 10s, std::nullopt), 2s, ManifestSettle::settled},
      {"truncated to 0 bytes a moment ago", file(S_IFREG, 0, 1s, false), 2s, ManifestSettle::just_changed},
      {"0 bytes for a while", file(S_IFREG, 0, 10s, false), 2s, ManifestSettle::empty},
      {"a FIFO", file(S_IFIFO, 0, 10s, std::nullopt), 2s, ManifestSettle::not_a_file},
      {"a socket", file(S_IFSOCK, 0, 10s, std::nullopt), 2s, ManifestSettle::not_a_file},
      {"a character device", file(S_IFCHR, 0, 10s, std::nullopt), 2s, ManifestSettle::not_a_file},
      {"a folder", file(S_IFDIR, 4096, 10s, std::nullopt), 2s, ManifestSettle::not_a_file},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const ManifestSettle settle = classify_manifest(row.observed, now, row.window);
    CHECK(kstate::daemon::to_string(settle) == std::string(kstate::daemon::to_string(row.expected)));
    CHECK(kstate::daemon::holds_prune(settle) ==
          (row.expected != ManifestSettle::settled && row.expected != ManifestSettle::missing));
  }
}

TEST_CASE("observe_manifest: real files, one held open for writing by another process, and a FIFO", "[settle]") {
  TempDir dir("kstate-settle");
  const std::string path = (dir.path() / "app.yaml").string();
  write_file(path, "kind: ConfigMap\n");
  ManifestObservation observed = kstate::daemon::observe_manifest(path);
  CHECK(observed.exists);
  CHECK(observed.type == S_IFREG);
  CHECK(observed.size == 16);
  CHECK(SystemClock::now() - observed.changed_at < 60s);
  if (!observed.open_for_writing.has_value()) {
    WARN("file leases are not available here (need root or the file's owner, and a local file system)");
    return;
  }
  CHECK_FALSE(*observed.open_for_writing);

  // Another process holds it open for writing (a writer paused half-way).
  int ready[2];
  int release[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(release) == 0);
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    char byte = fd >= 0 ? '1' : '0';
    (void)!::write(ready[1], &byte, 1);
    (void)!::read(release[0], &byte, 1);
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  REQUIRE(byte == '1');
  observed = kstate::daemon::observe_manifest(path);
  CHECK(observed.open_for_writing == std::optional<bool>(true));
  CHECK(observed.size == 0);
  CHECK(classify_manifest(observed, SystemClock::now(), 0s) == ManifestSettle::being_written);
  byte = 'x';
  REQUIRE(::write(release[1], &byte, 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(writer, &status, 0) == writer);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) {
    ::close(fd);
  }
  observed = kstate::daemon::observe_manifest(path);
  CHECK(observed.open_for_writing == std::optional<bool>(false));
  CHECK(classify_manifest(observed, SystemClock::now() + 10s) == ManifestSettle::empty);

  // A FIFO where a manifest was: observed without opening it (which would block).
  const std::string fifo = (dir.path() / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  observed = kstate::daemon::observe_manifest(fifo);
  CHECK(observed.type == S_IFIFO);
  CHECK_FALSE(observed.open_for_writing.has_value());
  CHECK(classify_manifest(observed, SystemClock::now()) == ManifestSettle::not_a_file);
  CHECK(classify_manifest(kstate::daemon::observe_manifest((dir.path() / "gone.yaml").string()), SystemClock::now()) ==
        ManifestSettle::missing);
}

}  // namespace manifest_settle_test
