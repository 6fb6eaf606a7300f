// The stat rule that lets a resync skip reading unchanged manifests: what it trusts
// (same stat, ctime older than the racy window) and that real rewrites on disk, even
// ones that keep the size and put the old mtime back, are never taken as unchanged.
#include "daemon/file_fingerprint.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace file_fingerprint_test {

using kstate::daemon::FileFingerprint;
using kstate::daemon::fingerprint_of;
using kstate::daemon::known_unchanged;
using kstate::daemon::ReadFingerprint;
using kstate::testing::TempDir;
using kstate::testing::write_file;
using namespace std::chrono_literals;

namespace {

FileFingerprint sample() {
  FileFingerprint fingerprint;
  fingerprint.device = 2049;
  fingerprint.inode = 1234;
  fingerprint.size = 310;
  fingerprint.modified = std::chrono::seconds(1'790'000'000);
  fingerprint.changed = std::chrono::seconds(1'790'000'000);
  return fingerprint;
}

std::chrono::system_clock::time_point at(std::chrono::nanoseconds since_epoch) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch));
}

// Puts the file's mtime back to `modified` (as touch -d, tar or rsync would).
void set_modified(const std::filesystem::path& path, std::chrono::nanoseconds modified) {
  timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  times[1].tv_sec = static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(modified).count());
  times[1].tv_nsec = static_cast<long>((modified % 1s).count());
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("a file is known unchanged only with the same stat and a ctime older than the racy window") {
  const FileFingerprint read = sample();
  const ReadFingerprint recorded{read, at(read.changed + 3s)};
  CHECK(known_unchanged(recorded, read));

  SECTION("a ctime within the window of the stat is not trusted: a second write may share it") {
    CHECK_FALSE(known_unchanged(ReadFingerprint{read, at(read.changed + 1s)}, read));
    CHECK_FALSE(known_unchanged(ReadFingerprint{read, at(read.changed + kstate::daemon::racy_window)}, read));
  }
  SECTION("a ctime after the stat (the clock was set back) is not trusted") {
    CHECK_FALSE(known_unchanged(ReadFingerprint{read, at(read.changed - 10s)}, read));
  }
  SECTION("any field that differs means the file may have changed") {
    FileFingerprint other = read;
    other.size += 1;
    CHECK_FALSE(known_unchanged(recorded, other));
    other = read;
    other.inode += 1;  // saved by rename, as editors and ConfigMap volumes do
    CHECK_FALSE(known_unchanged(recorded, other));
    other = read;
    other.device += 1;
    CHECK_FALSE(known_unchanged(recorded, other));
    other = read;
    other.modified += 1ns;
    CHECK_FALSE(known_unchanged(recorded, other));
    other = read;
    other.changed += 1ns;
    CHECK_FALSE(known_unchanged(recorded, other));
  }
}

TEST_CASE("rewrites on disk are never taken as unchanged, even with the same size and the old mtime put back") {
  TempDir dir;
  const auto file = dir.path() / "app.yaml";
  write_file(file, "kind: ConfigMap\nname: one\n");
  const auto stat_time = std::chrono::system_clock::now();
  const auto before = fingerprint_of(file.string());
  REQUIRE(before.has_value());
  CHECK(before->size == 26);
  const ReadFingerprint recorded{*before, stat_time};

  SECTION("written in place, same size, mtime restored") {
    write_file(file, "kind: ConfigMap\nname: two\n");
    set_modified(file, before->modified);
    const auto after = fingerprint_of(file.string());
    REQUIRE(after.has_value());
    CHECK(after->size == before->size);
    CHECK(after->modified == before->modified);
    CHECK_FALSE(known_unchanged(recorded, *after));
  }
  SECTION("replaced by a rename, same size, mtime restored") {
    write_file(dir.path() / "app.yaml.new", "kind: ConfigMap\nname: two\n");
    set_modified(dir.path() / "app.yaml.new", before->modified);
    std::filesystem::rename(dir.path() / "app.yaml.new", file);
    const auto after = fingerprint_of(file.string());
    REQUIRE(after.has_value());
    CHECK(after->inode != before->inode);
    CHECK_FALSE(known_unchanged(recorded, *after));
  }
  SECTION("removed") {
    std::filesystem::remove(file);
    CHECK_FALSE(fingerprint_of(file.string()).has_value());
  }
}

}  // namespace file_fingerprint_test
