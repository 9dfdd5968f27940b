// Transparent huge pages for a scoring thread's malloc heap.
//
// A scoring thread of `rlscore score` allocates a few MiB over and over (the rollouts of a batch,
// their results, the scanners' tables), and the first touch of each 4 KiB page is a page fault.
// Faults are costly (and far more so on a virtual machine), so with the heap in 2 MiB pages the
// threads take a handful where they took hundreds (docs/PERFORMANCE.md, "Evaluation CLI").
//
//   std::thread([&] {
//     AdviseHugePagesForThreadHeap();   // first thing in the thread
//     ...
//   });
//
// A hint to the kernel: it never changes what is computed, and does nothing where it cannot
// apply (see the .cc for when it applies).
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RLSCORE_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RLSCORE_SANITIZER_ALLOCATOR 1
#endif
#endif

namespace rlscore::cli {

// False in sanitizer builds (GCC's and Clang's), whose allocator lays its heaps out otherwise:
// there AdviseHugePagesForThreadHeap does nothing.
#ifdef RLSCORE_SANITIZER_ALLOCATOR
inline constexpr bool kThreadHeapAdviceApplies = false;
#else
inline constexpr bool kThreadHeapAdviceApplies = true;
#endif

// Marks the mapping that holds the calling thread's malloc heap MADV_HUGEPAGE, and collapses the
// 2 MiB around its first allocation at once. Thread-safe; call it once per thread.
void AdviseHugePagesForThreadHeap();

}  // namespace rlscore::cli
