// Tests of cli/thread_heap.h: a scoring thread's heap is marked for huge pages where the kernel
// offers them, and the call is harmless wherever it cannot apply.
#include "cli/thread_heap.h"

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace rlscore::cli {
namespace {

// The VmFlags of the mapping that holds `address`, from /proc/self/smaps ("" if not found).
std::string VmFlagsOf(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-' && line.find(' ') != 0) {
      inside = start <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool HugePagesOffered() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(enabled, modes);
  return !modes.empty() && modes.find("[never]") == std::string::npos;
}

TEST(ThreadHeap, AScoringThreadsHeapIsMarkedForHugePages) {
  if (!kThreadHeapAdviceApplies) {
    GTEST_SKIP() << "a sanitizer's allocator is not glibc's; the call leaves it alone";
  }
  if (!HugePagesOffered()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  // As `rlscore score` sets it before its threads start: each new arena's heap is read-write
  // whole.
  mallopt(M_TOP_PAD, 64 << 20);
  std::string flags;
  std::thread scoring([&flags] {
    AdviseHugePagesForThreadHeap();
    void* block = std::malloc(100000);
    flags = VmFlagsOf(block);
    std::free(block);
  });
  scoring.join();
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(ThreadHeap, LeavesAnyOtherMappingAlone) {
  // The main thread allocates from the brk heap, a named mapping ("[heap]"), not an arena's
  // anonymous one: it is left as it is, however often the call is made.
  AdviseHugePagesForThreadHeap();
  AdviseHugePagesForThreadHeap();
  void* block = std::malloc(1000);
  ASSERT_NE(block, nullptr);
  const std::string flags = VmFlagsOf(block);
  std::free(block);
  ASSERT_FALSE(flags.empty());
  EXPECT_EQ(flags.find(" hg"), std::string::npos) << flags;
}

}  // namespace
}  // namespace rlscore::cli
