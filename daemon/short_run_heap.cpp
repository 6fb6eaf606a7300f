// See short_run_heap.hpp. mallopt and its thresholds are glibc's: with another C
// library both functions do nothing.
#include "daemon/short_run_heap.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kstate::daemon {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

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
  reserve_thread_heap(std::size_t{24} << 20);
}

void reserve_thread_heap(std::size_t bytes) {
#if defined(__GLIBC__)
  // Allocated and freed at once: the heap keeps it (no trimming), so the thread's next
  // allocations are carved from it without growing the heap again.
  void* block = std::malloc(bytes);
  if (block == nullptr) {
    return;
  }
  auto start = reinterpret_cast<std::uintptr_t>(block);
  std::uintptr_t aligned_start = (start + huge_page - 1) & ~(huge_page - 1);
  std::uintptr_t aligned_end = (start + bytes) & ~(huge_page - 1);
  if (aligned_end > aligned_start) {
    // Best effort: fails harmlessly where transparent huge pages are off.
    (void)madvise(reinterpret_cast<void*>(aligned_start), aligned_end - aligned_start, MADV_HUGEPAGE);
  }
  std::free(block);
#else
  (void)bytes;
#endif
}

}  // namespace kstate::daemon
