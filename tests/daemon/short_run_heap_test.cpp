// The allocator settings of `kstate apply` / `kstate test`: reserving a thread's heap
// costs no resident memory until it is used, and after tuning, blocks of a LIST
// answer's size come from the heap (reused) instead of being mapped and unmapped each
// time. Run in a child process, since the settings are process-wide.
#include "daemon/short_run_heap.hpp"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

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

}  // namespace

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
#if defined(__SANITIZE_ADDRESS__)
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
