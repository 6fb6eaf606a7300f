// How the daemon's heap is kept between cycles. The daemon gives its free memory back
// once it has been quiet for a second (StatesReconciler::set_memory_release), so that
// its idle resident memory is small. The next cycle, typically one edited file, then
// faults those pages in again one 4 KiB page at a time, and on the bench VMs a fault
// costs 2-15 us (the guest's page tables are shadowed by the host): with 1,000 objects
// managed, 15 of the 23 ms a one-file cycle took (bench/RESULTS.md, eighteenth round).
// Every such cycle is preceded by idle time, the watcher's debounce (20 ms by default):
// the heap is faulted back in there, in one system call (warm_heap). glibc only: with
// another C library, or under AddressSanitizer (its own allocator), nothing is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kstate::daemon {

// Process-wide, once at start-up, on the main thread: blocks under 8 MB (a LIST
// answer, the engine's per-state tables, a 10,000-object inventory) come from the heap
// rather than from mmap, where each use would fault fresh pages in and unmap them
// after; and free() never shrinks the heap: the daemon gives memory back itself, when
// quiet (malloc_trim), instead of in the middle of a cycle that will need it again.
void tune_heap_for_daemon();

struct AddressRange {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
};

// The main heap ("[heap]", the brk area glibc's main arena grows) in the text of
// /proc/self/maps, adjacent "[heap]" mappings as one; nullopt when there is none.
std::optional<AddressRange> main_heap_range(std::string_view proc_maps);

// Where the main heap ends now (the program break). Giving memory back (malloc_trim)
// lowers it; the daemon notes it after a file cycle so that the next warm-up can grow
// the heap back there. 0 where that is not known (another allocator).
std::uintptr_t heap_end();

// Grows the main heap until it ends at `end` at least: blocks of 4 MB (under the mmap
// threshold, so that they come from the heap) allocated until the end has moved there,
// then freed, which the heap keeps (tune_heap_for_daemon). Nothing when it already
// does. Returns how far the end moved.
std::size_t grow_heap_to(std::uintptr_t end);

// Faults the main heap in (MADV_POPULATE_WRITE, Linux 5.14; free memory is not
// written, only backed by pages again), at most `max_bytes` of it from its start, after
// growing it by `grow_bytes` at its top (a block allocated and freed at once, which
// the heap keeps: tune_heap_for_daemon) so that a cycle that needs more than the heap
// holds finds those pages ready too. Returns the bytes faulted in: 0 where that is not
// possible (an older kernel, no /proc, another allocator).
std::size_t warm_heap(std::size_t grow_bytes, std::size_t max_bytes);

}  // namespace kstate::daemon
