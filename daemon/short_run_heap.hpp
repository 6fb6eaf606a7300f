// Allocator settings for the short-lived commands (`kstate apply`, `kstate test`).
// glibc's defaults suit a long-running process that should give memory back: they
// grow a thread's heap one page at a time (one mprotect each), return freed memory to
// the kernel, and so fault the same pages in again later. A one-shot command that
// parses a thousand manifests and as many live objects paid about 15% of its time in
// those page faults and mprotect calls (bench/RESULTS.md). The daemon keeps the
// defaults: its resident memory is what it is judged on.
#pragma once

#include <cstddef>

namespace kstate::daemon {

// Process-wide: heaps grow in big steps, and nothing is returned to the kernel before
// exit. Call once, early, on the main thread (it also reserves that thread's heap).
void tune_heap_for_short_run();

// On each thread that allocates a lot: reserves `bytes` of its heap at once, asking
// for transparent huge pages where the kernel grants them on request (madvise mode).
// Reserved memory is not touched, so it costs no resident memory until it is used.
void reserve_thread_heap(std::size_t bytes);

}  // namespace kstate::daemon
