// The allocator settings of `kstate apply` / `kstate test`: reserving a thread's heap
// costs no resident memory until it is used, and after tuning, blocks of a LIST
// answer's size come from the heap (reused) instead of being mapped and unmapped each
// time. Run in a child process, since the settings are process-wide.
#include "daemon/short_run_heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace short_run_heap_test {

namespace {

long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Runs `check` in a forked child; true when it returned true.
template <class Check>
bool in_child(Check check) {
  pid_t child = fork();
  if (child == 0) {
    _exit(check() ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The VmFlags of the mapping holding `address` (/proc/self/smaps), e.g. "rd wr mr mw me ac hg".
std::string vm_flags_at(const void* address) {
  const auto where = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0;
    std::uintptr_t to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= where && where < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8);
    }
  }
  return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
  return (" " + flags + " ").find(" " + flag + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("a first huge page slower than ordinary pages leaves the rest in ordinary pages; a fast one keeps them") {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) {
    SUCCEED("no transparent huge pages in this kernel");
    return;
  }
  constexpr std::size_t huge = std::size_t{2} << 20;
  constexpr std::size_t length = 4 * huge;
  void* mapped = mmap(nullptr, length + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  char* start = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(mapped) + huge - 1) & ~(huge - 1));
  // A clock on which each reading is `step` after the last: the one fault timed takes `step`.
  auto clock_with_step = [](std::chrono::microseconds step) {
    auto time = std::make_shared<std::chrono::steady_clock::time_point>();
    return [time, step] { return *time += step; };
  };

  CHECK_FALSE(kstate::daemon::request_huge_pages(start, 2 * huge, clock_with_step(std::chrono::milliseconds(2))));
  CHECK(has_flag(vm_flags_at(start), "hg"));  // the page already touched stays as it is
  CHECK(has_flag(vm_flags_at(start + huge), "nh"));
  CHECK_FALSE(has_flag(vm_flags_at(start + huge), "hg"));
  CHECK(start[0] == 0);  // touched (and written) by the probe

  CHECK(kstate::daemon::request_huge_pages(start + 2 * huge, 2 * huge, clock_with_step(std::chrono::microseconds(80))));
  CHECK(has_flag(vm_flags_at(start + 3 * huge), "hg"));
  CHECK_FALSE(has_flag(vm_flags_at(start + 3 * huge), "nh"));
  munmap(mapped, length + huge);
}

TEST_CASE("memory left in ordinary pages is faulted in at once, as much as asked; huge pages kept are not") {
  constexpr std::size_t huge = std::size_t{2} << 20;
  constexpr std::size_t length = 4 * huge;
  const long page = sysconf(_SC_PAGESIZE);
  void* mapped = mmap(nullptr, 2 * length + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  char* start = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(mapped) + huge - 1) & ~(huge - 1));
  if (madvise(start, static_cast<std::size_t>(page), 23 /* MADV_POPULATE_WRITE */) != 0) {
    munmap(mapped, 2 * length + huge);
    SUCCEED("kernel older than 5.14: no MADV_POPULATE_WRITE, pages fault in one by one");
    return;
  }
  // Resident pages among [from, from + bytes), by mincore.
  auto resident_pages = [page](const char* from, std::size_t bytes) {
    std::vector<unsigned char> pages(bytes / static_cast<std::size_t>(page));
    REQUIRE(mincore(const_cast<char*>(from), bytes, pages.data()) == 0);
    return std::count_if(pages.begin(), pages.end(), [](unsigned char flags) { return (flags & 1) != 0; });
  };
  const long per_huge_page = static_cast<long>(huge) / page;
  auto clock_with_step = [](std::chrono::microseconds step) {
    auto time = std::make_shared<std::chrono::steady_clock::time_point>();
    return [time, step] { return *time += step; };
  };

  // A slow first huge page: the next 2 MB (asked) are resident without being touched,
  // what follows is not.
  CHECK_FALSE(
      kstate::daemon::request_huge_pages(start + length, length, clock_with_step(std::chrono::milliseconds(2)), huge));
  CHECK(resident_pages(start + length + huge, huge) == per_huge_page);
  CHECK(resident_pages(start + length + 2 * huge, 2 * huge) == 0);

  // A fast one: huge pages stay requested and nothing is faulted in beyond the probe.
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) {
    CHECK(kstate::daemon::request_huge_pages(start, length, clock_with_step(std::chrono::microseconds(80)), huge));
    CHECK(resident_pages(start + huge, length - huge) == 0);
  }
  munmap(mapped, 2 * length + huge);
}

TEST_CASE("reserving a thread's heap adds almost no resident memory, and the thread then allocates from it") {
  long before = 0;
  long after = 0;
  bool usable = false;
  std::thread worker([&] {
    before = resident_kb();
    kstate::daemon::reserve_thread_heap(std::size_t{16} << 20);
    after = resident_kb();
    void* block = std::malloc(std::size_t{8} << 20);
    if (block != nullptr) {
      std::memset(block, 1, std::size_t{8} << 20);
      usable = static_cast<unsigned char*>(block)[12345] == 1;
      std::free(block);
    }
  });
  worker.join();
  CHECK(after - before < 4096);
  CHECK(usable);
}

TEST_CASE("after tuning for a short run, a 2 MB block is carved from the heap instead of mapped on its own") {
#if defined(KSTATE_SANITIZED)  // (not __SANITIZE_ADDRESS__: test code is built uninstrumented)
  // AddressSanitizer brings its own allocator: glibc's settings and counters do not
  // apply (the default preset runs this test).
  SUCCEED("not applicable under AddressSanitizer");
  return;
#endif
  // glibc's starting threshold (this test process may have raised it already).
  const auto start_from_default = [] { mallopt(M_MMAP_THRESHOLD, 128 * 1024); };
  CHECK(in_child([&] {
    start_from_default();
    kstate::daemon::tune_heap_for_short_run();
    const auto mapped_before = mallinfo2().hblks;
    void* block = std::malloc(std::size_t{2} << 20);
    const auto mapped_after = mallinfo2().hblks;
    std::free(block);
    return block != nullptr && mapped_after == mapped_before;
  }));
  // Without the tuning glibc maps it on its own.
  CHECK(in_child([&] {
    start_from_default();
    const auto mapped_before = mallinfo2().hblks;
    void* block = std::malloc(std::size_t{2} << 20);
    const auto mapped_after = mallinfo2().hblks;
    std::free(block);
    return block != nullptr && mapped_after == mapped_before + 1;
  }));
}

}  // namespace short_run_heap_test
