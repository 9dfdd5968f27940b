// Placement of the scoring threads (see cpu_placement.h).
#include "cli/cpu_placement.h"

#include <pthread.h>
#include <sched.h>

namespace rlscore::cli {

CpuPlacement::CpuPlacement(unsigned threads) {
  CPU_ZERO(&allowed_);
  if (sched_getaffinity(0, sizeof allowed_, &allowed_) != 0) return;
  const auto count = static_cast<unsigned>(CPU_COUNT(&allowed_));
  if (count >= 2 && threads >= count) count_ = count;
}

int CpuPlacement::Place(std::thread& thread, unsigned index) {
  if (count_ == 0) return -1;
  unsigned wanted = index % count_;
  int cpu = 0;
  for (;; ++cpu) {
    if (CPU_ISSET(cpu, &allowed_) && wanted-- == 0) break;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(thread.native_handle(), sizeof one, &one) == 0 ? cpu : -1;
}

int CpuPlacement::Start() {
  placed_.wait();
  if (count_ == 0) return -1;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) != 1) return -1;
  for (int cpu = 0;; ++cpu) {
    if (CPU_ISSET(cpu, &mine)) return cpu;
  }
}

}  // namespace rlscore::cli
