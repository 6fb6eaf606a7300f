// Allocator settings for the short-lived commands (`kstate apply`, `kstate test`).
// glibc's defaults suit a long-running process that should give memory back: they
// grow a thread's heap one page at a time (one mprotect each), return freed memory to
// the kernel, and so fault the same pages in again later. A one-shot command that
// parses a thousand manifests and as many live objects paid about 15% of its time in
// those page faults and mprotect calls (bench/RESULTS.md). The daemon keeps the
// defaults: its resident memory is what it is judged on.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

namespace kstate::daemon {

// Process-wide: heaps grow in big steps, and nothing is returned to the kernel before
// exit. Call once, early, on the main thread (it also reserves that thread's heap).
void tune_heap_for_short_run();

// On each thread that allocates a lot: reserves `bytes` of its heap at once, asking
// for transparent huge pages where the kernel grants them on request (madvise mode)
// and where they come cheap (request_huge_pages). Reserved memory is not touched but
// for one huge page, so it costs little resident memory until it is used; unless
// `populate_bytes` is given: then the part below the first 2 MB boundary (where the
// thread's first allocations go) and, when the rest stays in ordinary pages, the first
// `populate_bytes` of it are faulted in at once (MADV_POPULATE_WRITE, Linux 5.14), one
// system call instead of one fault per 4 KiB page. On the bench VMs a fault costs
// 2-15 us (the guest's page tables are shadowed by the host); a 1,000-object cold
// apply took ~2,500 of them in ordinary pages (bench/RESULTS.md, sixteenth round).
void reserve_thread_heap(std::size_t bytes, std::size_t populate_bytes = 0);

using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;

// Asks for transparent huge pages over [start, start + length) (2 MB aligned, the
// caller's memory), touches the first one and times that fault: when it took longer
// than 2 MB of ordinary pages would, the rest is left in ordinary pages. In a virtual
// machine that gives freed memory back to its host (virtio-balloon free page
// reporting, as on the bench VMs), a huge page the kernel takes from such memory
// faults in 512 host pages: 1.2-2.4 ms for 2 MB against 0.1 ms for a recently freed
// one, and ~0.7 ms for 2 MB of ordinary pages, which come from recently freed memory.
// Returns whether huge pages stay requested. `now` is the clock (tests pass their own).
// When they do not, the first `populate_bytes` of what is left in ordinary pages are
// faulted in at once.
bool request_huge_pages(char* start, std::size_t length, const SteadyClock& now, std::size_t populate_bytes = 0);

}  // namespace kstate::daemon
