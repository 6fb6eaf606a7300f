// RAII temporary directory for tests: created empty under $TMPDIR (or /tmp),
// removed with everything in it when the object goes out of scope.
//
//   kstate::testing::TempDir dir;
//   write_file(dir.path() / "a.yaml", "...");
#pragma once

#include <filesystem>
#include <string>

namespace kstate::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kstate-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Small helpers for test files (create parent directories; throw on failure).
void write_file(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

}  // namespace kstate::testing
