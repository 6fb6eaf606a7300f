// See resident_heap.hpp. mallopt, malloc_trim and the "[heap]" mapping are glibc's.
#include "daemon/resident_heap.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kstate::daemon {
namespace {

#if !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

#if defined(__SANITIZE_ADDRESS__)
constexpr bool own_allocator = false;
#elif defined(__GLIBC__)
constexpr bool own_allocator = true;
#else
constexpr bool own_allocator = false;
#endif

std::optional<std::uintptr_t> parse_hex(std::string_view text) {
  std::uintptr_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

void tune_heap_for_daemon() {
  if constexpr (own_allocator) {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  }
}

std::optional<AddressRange> main_heap_range(std::string_view proc_maps) {
  // Each line: "start-end perms offset dev inode [path]". The heap may be split in
  // several mappings (parts with other flags, e.g. huge pages asked for): the run of
  // adjacent ones.
  std::optional<AddressRange> heap;
  while (!proc_maps.empty()) {
    const std::size_t newline = proc_maps.find('\n');
    std::string_view line = proc_maps.substr(0, newline);
    proc_maps.remove_prefix(newline == std::string_view::npos ? proc_maps.size() : newline + 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    constexpr std::string_view heap_name = "[heap]";
    if (line.size() < heap_name.size() || line.substr(line.size() - heap_name.size()) != heap_name) {
      if (heap) {
        break;
      }
      continue;
    }
    const std::string_view range = line.substr(0, line.find(' '));
    const std::size_t dash = range.find('-');
    if (dash == std::string_view::npos) {
      break;
    }
    auto start = parse_hex(range.substr(0, dash));
    auto end = parse_hex(range.substr(dash + 1));
    if (!start || !end || *end <= *start) {
      break;
    }
    if (!heap) {
      heap = AddressRange{*start, *end};
    } else if (*start == heap->end) {
      heap->end = *end;
    } else {
      break;
    }
  }
  return heap;
}

std::uintptr_t heap_end() {
  if constexpr (!own_allocator) {
    return 0;
  }
  return reinterpret_cast<std::uintptr_t>(::sbrk(0));
}

std::size_t grow_heap_to(std::uintptr_t end) {
  const std::uintptr_t start = heap_end();
  if (!own_allocator || start == 0 || start >= end) {
    return 0;
  }
  // A block may come from a free one inside the heap rather than from its top: a few
  // more tries than the distance needs.
  constexpr std::size_t block_bytes = std::size_t{4} << 20;
  const std::size_t tries = (end - start) / block_bytes + 16;
  std::vector<void*> blocks;
  while (blocks.size() < tries && heap_end() < end) {
    void* block = std::malloc(block_bytes);
    if (block == nullptr) {
      break;
    }
    *static_cast<volatile char*>(block) = 0;  // (so that the compiler cannot drop the pair)
    blocks.push_back(block);
  }
  for (void* block : blocks) {
    std::free(block);
  }
  const std::uintptr_t now = heap_end();
  return now > start ? now - start : 0;
}

std::size_t warm_heap(std::size_t grow_bytes, std::size_t max_bytes) {
  if constexpr (!own_allocator) {
    (void)grow_bytes;
    (void)max_bytes;
    return 0;
  }
  if (grow_bytes > 0) {
    // Served from the top of the heap when no free block is that large; freed at once,
    // it stays there (no trim before the daemon's own). Written to, so that the
    // compiler cannot drop the pair.
    void* block = std::malloc(grow_bytes);
    if (block != nullptr) {
      *static_cast<volatile char*>(block) = 0;
      std::free(block);
    }
  }
  std::ifstream maps_file("/proc/self/maps");
  if (!maps_file) {
    return 0;
  }
  std::ostringstream maps;
  maps << maps_file.rdbuf();
  auto heap = main_heap_range(maps.str());
  if (!heap) {
    return 0;
  }
  const std::size_t length = std::min<std::size_t>(heap->end - heap->start, max_bytes);
  if (madvise(reinterpret_cast<void*>(heap->start), length, MADV_POPULATE_WRITE) != 0) {
    return 0;
  }
  return length;
}

}  // namespace kstate::daemon
