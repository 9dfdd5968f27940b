#include "cli/thread_heap.h"

#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// MADV_COLLAPSE (Linux 6.1) where the C library's headers predate it.
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace rlscore::cli {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
// A thread's malloc heap: glibc gives each thread's arena a mapping of at most 64 MiB, which
// starts with the arena's bookkeeping and is made read-write whole at once when M_TOP_PAD is that
// large (as `rlscore score` sets it). Arenas side by side may show as one mapping.
constexpr uintptr_t kMaxHeap = uintptr_t{64} << 20;

struct Mapping {
  uintptr_t start = 0;
  uintptr_t end = 0;
};

// The private anonymous read-write mapping that holds `address`, from /proc/self/maps; an empty
// one when it is anything else or cannot be read.
Mapping AnonymousMappingOf(uintptr_t address) {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return {};
  Mapping found;
  // Room for a path of PATH_MAX after the fields, so that no line is read in two parts.
  char line[4096 + 256];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    uintmax_t start = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {};
    char device[16] = {};
    int path_at = 0;
    if (std::sscanf(line, "%jx-%jx %7s %jx %15s %ju %n", &start, &end, perms, &offset, device,
                    &inode, &path_at) < 6) {
      continue;
    }
    if (address < start || address >= end) continue;
    // No path after the inode (the format's last space has skipped to the end of the line).
    const bool anonymous = inode == 0 && (line[path_at] == '\0' || line[path_at] == '\n');
    if (anonymous && std::strcmp(perms, "rw-p") == 0) {
      found = {static_cast<uintptr_t>(start), static_cast<uintptr_t>(end)};
    }
    break;
  }
  std::fclose(maps);
  return found;
}

}  // namespace

void AdviseHugePagesForThreadHeap() {
  if (!kThreadHeapAdviceApplies) return;
  // A first allocation places the thread in its arena; the arena's heap starts in the 2 MiB
  // around it and takes at most kMaxHeap of the anonymous mapping that holds it.
  void* probe = std::malloc(64);
  if (probe == nullptr) return;
  const auto address = reinterpret_cast<uintptr_t>(probe);
  std::free(probe);
  const Mapping mapping = AnonymousMappingOf(address);
  const uintptr_t first = address & ~(kHugePage - 1);
  if (first < mapping.start || first + kHugePage > mapping.end) return;
  const uintptr_t end = std::min(mapping.end, first + kMaxHeap);
  madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  // The kernel puts a huge page only where nothing is mapped yet, and the heap's first pages are
  // (the arena's bookkeeping, the probe): collapse them into one now, so that the thread's first
  // MiBs of allocations land in it. Errors (an older kernel, THP off) leave 4 KiB pages.
  madvise(reinterpret_cast<void*>(first), kHugePage, MADV_COLLAPSE);
}

}  // namespace rlscore::cli
