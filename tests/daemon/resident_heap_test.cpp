// The daemon's heap between cycles: the "[heap]" mapping is found in /proc/self/maps,
// warm_heap faults a heap whose free pages were given back (malloc_trim) in again
// without touching what it holds, so that what a cycle allocates next costs no page
// faults, and after tune_heap_for_daemon a freed block of a LIST answer's size stays in
// the heap. Run in forked children, since the settings and the heap are process-wide.
#include "daemon/resident_heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace resident_heap_test {

using kstate::daemon::main_heap_range;
using kstate::daemon::warm_heap;

namespace {

constexpr int child_passed = 0;
constexpr int child_failed = 1;
constexpr int child_unsupported = 2;  // MADV_POPULATE_WRITE is Linux 5.14

// Runs `check` in a forked child; its exit code.
template <class Check>
int in_child(Check check) {
  pid_t child = fork();
  if (child == 0) {
    _exit(check());
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : child_failed;
}

std::string proc_self_maps() {
  std::ifstream maps("/proc/self/maps");
  std::ostringstream text;
  text << maps.rdbuf();
  return text.str();
}

// Pages of [start, end) in memory (mincore).
std::size_t resident_pages(std::uintptr_t start, std::uintptr_t end) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((end - start + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(start), end - start, in_core.data()) != 0) {
    return 0;
  }
  std::size_t resident = 0;
  for (unsigned char flags : in_core) {
    resident += flags & 1;
  }
  return resident;
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST_CASE("the main heap is the [heap] line of /proc/self/maps") {
  const std::string maps =
      "55d0c8a00000-55d0c8a2e000 r--p 00000000 fd:01 1054 /usr/bin/kstate\n"
      "55d0c9c84000-55d0ca6b3000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f1b3c000000-7f1b3c021000 rw-p 00000000 00:00 0 \n"
      "7ffd5b9e4000-7ffd5ba05000 rw-p 00000000 00:00 0                          [stack]\n";
  auto heap = main_heap_range(maps);
  REQUIRE(heap);
  CHECK(heap->start == 0x55d0c9c84000);
  CHECK(heap->end == 0x55d0ca6b3000);

  // Split in two mappings (part of it with other flags): both.
  auto split = main_heap_range(
      "55d0c9c84000-55d0ca000000 rw-p 00000000 00:00 0 [heap]\n"
      "55d0ca000000-55d0ca6b3000 rw-p 00000000 00:00 0 [heap]\n"
      "7f1b3c000000-7f1b3c021000 rw-p 00000000 00:00 0 \n");
  REQUIRE(split);
  CHECK(split->start == 0x55d0c9c84000);
  CHECK(split->end == 0x55d0ca6b3000);
  CHECK_FALSE(main_heap_range("7ffd5b9e4000-7ffd5ba05000 rw-p 00000000 00:00 0 [stack]\n"));
  CHECK_FALSE(main_heap_range(""));
  CHECK_FALSE(main_heap_range("zz-55d0ca6b3000 rw-p 00000000 00:00 0 [heap]\n"));
  CHECK_FALSE(main_heap_range("55d0ca6b3000-55d0c9c84000 rw-p 00000000 00:00 0 [heap]\n"));  // (end before start)
#if !defined(KSTATE_SANITIZED)  // (AddressSanitizer's allocator maps its own memory: no brk heap)
  // This process has one too (glibc's main arena).
  CHECK(main_heap_range(proc_self_maps()));
#endif
}

TEST_CASE("a heap whose free memory was given back is faulted in again in one call, its contents kept") {
#if defined(KSTATE_SANITIZED)  // (the test code is built uninstrumented; the allocator is still ASan's)
  SUCCEED("not applicable under AddressSanitizer: it brings its own allocator");
  return;
#endif
  const int outcome = in_child([] {
    kstate::daemon::tune_heap_for_daemon();
    // 8 MB of small blocks (a cycle's documents and strings), one of them kept.
    std::vector<char*> blocks;
    for (int i = 0; i < 2048; ++i) {
      blocks.push_back(static_cast<char*>(std::malloc(4000)));
      std::memset(blocks.back(), 'x', 4000);
    }
    char* kept = blocks[1024];
    std::memcpy(kept, "still here", 11);
    for (char* block : blocks) {
      if (block != kept) {
        std::free(block);
      }
    }
    malloc_trim(0);  // what the daemon does after a quiet second
    auto heap = main_heap_range(proc_self_maps());
    if (!heap) {
      return child_failed;
    }
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t before = resident_pages(heap->start, heap->end);
    const std::size_t faulted = warm_heap(0, std::size_t{64} << 20);
    if (faulted == 0) {
      return child_unsupported;
    }
    const std::size_t after = resident_pages(heap->start, heap->end);
    const bool whole_heap = faulted == heap->end - heap->start && after == (heap->end - heap->start) / page;
    // (the blocks above the kept one went with the heap's top; the 4 MB below it stayed mapped)
    const bool was_given_back = before + (std::size_t{3} << 20) / page < after;
    return whole_heap && was_given_back && std::strcmp(kept, "still here") == 0 ? child_passed : child_failed;
  });
  if (outcome == child_unsupported) {
    WARN("MADV_POPULATE_WRITE is not supported by this kernel: warm_heap does nothing");
    return;
  }
  CHECK(outcome == child_passed);
}

TEST_CASE("after the warm-up, a block larger than the heap held is used without page faults") {
#if defined(KSTATE_SANITIZED)
  SUCCEED("not applicable under AddressSanitizer: it brings its own allocator");
  return;
#endif
  // Faults counted while 3 MB are written, with and without the warm-up's 4 MB at the top.
  const auto faults_writing_3_mb = [](bool warm) {
    return in_child([warm] {
      kstate::daemon::tune_heap_for_daemon();
      malloc_trim(0);
      if (warm && warm_heap(std::size_t{4} << 20, std::size_t{64} << 20) == 0) {
        return child_unsupported;
      }
      const std::size_t size = std::size_t{3} << 20;
      char* block = static_cast<char*>(std::malloc(size));
      const long before = minor_faults();
      std::memset(block, 'y', size);
      const long faults = minor_faults() - before;
      std::free(block);
      // (the exit code carries the verdict: fewer than 64 faults for 768 pages)
      return faults < 64 ? child_passed : child_failed;
    });
  };
  const int warmed = faults_writing_3_mb(true);
  if (warmed == child_unsupported) {
    WARN("MADV_POPULATE_WRITE is not supported by this kernel: warm_heap does nothing");
    return;
  }
  CHECK(warmed == child_passed);
  CHECK(faults_writing_3_mb(false) == child_failed);  // without it: a fault per page
}

TEST_CASE("after memory was given back, the heap grows back to where the last cycle took it, without faults then") {
#if defined(KSTATE_SANITIZED)
  SUCCEED("not applicable under AddressSanitizer: it brings its own allocator");
  return;
#endif
  // A cycle's 7 MB table (10,000 states) taken from the top of the heap, then given
  // back; the next cycle writes it again after the warm-up, with and without growing
  // the heap back to where the first cycle left its end.
  const auto faults_writing_7_mb_again = [](bool grow_back) {
    return in_child([grow_back] {
      kstate::daemon::tune_heap_for_daemon();
      const std::size_t size = std::size_t{7} << 20;
      char* table = static_cast<char*>(std::malloc(size));
      std::memset(table, 'z', size);
      const std::uintptr_t end_after_cycle = kstate::daemon::heap_end();
      std::free(table);
      malloc_trim(0);
      if (kstate::daemon::heap_end() + size / 2 > end_after_cycle) {
        return child_failed;  // the trim was expected to lower the heap's end
      }
      if (grow_back &&
          (kstate::daemon::grow_heap_to(end_after_cycle) == 0 || kstate::daemon::heap_end() < end_after_cycle)) {
        return child_failed;
      }
      if (warm_heap(std::size_t{4} << 20, std::size_t{64} << 20) == 0) {
        return child_unsupported;
      }
      table = static_cast<char*>(std::malloc(size));
      const long before = minor_faults();
      std::memset(table, 'z', size);
      const long faults = minor_faults() - before;
      std::free(table);
      return faults < 64 ? child_passed : child_failed;  // 1,792 pages
    });
  };
  const int grown = faults_writing_7_mb_again(true);
  if (grown == child_unsupported) {
    WARN("MADV_POPULATE_WRITE is not supported by this kernel: warm_heap does nothing");
    return;
  }
  CHECK(grown == child_passed);
  CHECK(faults_writing_7_mb_again(false) == child_failed);  // the 4 MB block alone leaves 3 MB to fault
  // Already that far: nothing to do.
  CHECK(in_child([] { return kstate::daemon::grow_heap_to(kstate::daemon::heap_end()) == 0 ? 0 : 1; }) == 0);
}

TEST_CASE("tuned for the daemon, a freed 2 MB block stays in the heap instead of being unmapped or trimmed") {
#if defined(KSTATE_SANITIZED)
  SUCCEED("not applicable under AddressSanitizer: it brings its own allocator");
  return;
#endif
  CHECK(in_child([] {
          kstate::daemon::tune_heap_for_daemon();
          const auto mapped_before = mallinfo2().hblks;
          void* block = std::malloc(std::size_t{2} << 20);
          const bool from_heap = block != nullptr && mallinfo2().hblks == mapped_before;
          const auto heap_before_free = mallinfo2().arena;
          std::free(block);
          const bool kept = mallinfo2().arena == heap_before_free;
          return from_heap && kept ? child_passed : child_failed;
        }) == child_passed);
}

}  // namespace resident_heap_test
