// Start-up placement of the scoring threads (see cpu_placement.h).
#include "cli/cpu_placement.h"

#include <sched.h>

namespace rlscore::cli {

int StartOnOwnCpu(unsigned index, unsigned threads) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  const auto count = static_cast<unsigned>(CPU_COUNT(&allowed));
  if (count < 2 || threads < count) return -1;
  unsigned wanted = index % count;
  int cpu = 0;
  for (;; ++cpu) {
    if (CPU_ISSET(cpu, &allowed) && wanted-- == 0) break;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  // Returns once the thread runs on `cpu`: the kernel migrates a running thread before it answers.
  if (sched_setaffinity(0, sizeof one, &one) != 0) return -1;
  const int placed = sched_getcpu();
  // The thread's own mask of a moment ago, which the kernel accepted then.
  sched_setaffinity(0, sizeof allowed, &allowed);
  return placed;
}

}  // namespace rlscore::cli
