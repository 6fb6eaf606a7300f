// See short_run_heap.hpp. mallopt and its thresholds are glibc's: with another C
// library both functions do nothing.
#include "daemon/short_run_heap.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kstate::daemon {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;
// What faulting in 2 MB of ordinary pages costs (bench/RESULTS.md, fifteenth round):
// a first huge page slower than this is taken to come from memory the host reclaimed.
constexpr std::chrono::microseconds slow_huge_page{500};

void populate(char* start, std::size_t length) {
#if !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL, and the pages fault in one by one
#endif
  if (length > 0) {
    (void)madvise(start, length, MADV_POPULATE_WRITE);
  }
}

}  // namespace

void tune_heap_for_short_run() {
#if defined(__GLIBC__)
  // Blocks under 32 MB (glibc's upper limit here) come from the heap instead of their own mmap (a 1.5 MB LIST
  // answer would otherwise be mapped, faulted in and unmapped on each use)...
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // ...the main heap grows 64 MB at a time, and is never trimmed.
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  reserve_thread_heap(std::size_t{24} << 20, std::size_t{8} << 20);
}

void reserve_thread_heap(std::size_t bytes, std::size_t populate_bytes) {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)  // (AddressSanitizer brings its own allocator)
  // Allocated and freed at once: the heap keeps it (no trimming), so the thread's next
  // allocations are carved from it without growing the heap again.
  void* block = std::malloc(bytes);
  if (block == nullptr) {
    return;
  }
  auto start = reinterpret_cast<std::uintptr_t>(block);
  std::uintptr_t aligned_start = (start + huge_page - 1) & ~(huge_page - 1);
  std::uintptr_t aligned_end = (start + bytes) & ~(huge_page - 1);
  if (populate_bytes > 0) {
    // The head below the first 2 MB boundary is in ordinary pages whatever comes next,
    // and it is where the thread's first allocations go.
    const std::uintptr_t page = 4096;
    const std::uintptr_t head_start = (start + page - 1) & ~(page - 1);
    const std::uintptr_t head_end = std::min(aligned_start, start + bytes);
    populate(reinterpret_cast<char*>(head_start), head_end > head_start ? head_end - head_start : 0);
  }
  if (aligned_end > aligned_start) {
    (void)request_huge_pages(
        reinterpret_cast<char*>(aligned_start), aligned_end - aligned_start,
        [] { return std::chrono::steady_clock::now(); }, populate_bytes);
  }
  std::free(block);
#else
  (void)bytes;
  (void)populate_bytes;
#endif
}

bool request_huge_pages(char* start, std::size_t length, const SteadyClock& now, std::size_t populate_bytes) {
  // Best effort: fails harmlessly where transparent huge pages are off.
  if (madvise(start, length, MADV_HUGEPAGE) != 0) {
    populate(start, std::min(length, populate_bytes));
    return false;
  }
  const auto before = now();
  // The caller's memory: one byte written faults the whole huge page in.
  *static_cast<volatile char*>(start) = 0;
  const auto took = now() - before;
  if (took <= slow_huge_page || length <= huge_page) {
    return true;
  }
  (void)madvise(start + huge_page, length - huge_page, MADV_NOHUGEPAGE);
  populate(start + huge_page, std::min(length - huge_page, populate_bytes));
  return false;
}

}  // namespace kstate::daemon
