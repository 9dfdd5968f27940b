// Where the scoring threads run. A new thread goes to the CPU that looks least busy at the
// instant it is created, and a thread that wakes goes where the kernel's wake-up heuristics put
// it. `rlscore score` creates its reader first, which takes the idle CPU and soon sleeps; the
// scoring threads may then both land on the CPU of the thread that created them. Later, a
// scoring thread woken from a wait (for a piece, the line numbering or the in-order writer) may
// be queued on the CPU where the other is running. Either way the scheduler leaves two busy
// threads sharing one CPU beside an idle one until the idle CPU next looks for work, a scheduler
// tick later (3-4 ms), or for as long as it counts them cache-hot (10 ms of a 15 ms run on 2
// CPUs) (docs/PERFORMANCE.md, "Evaluation CLI").
//
// So where the scoring threads fill every CPU, the thread that creates them restricts each to a
// CPU of its own as soon as it exists (the kernel moves a thread that waits to run the moment it
// is asked), and each stays there for the run. The work is handed out in pieces as threads ask
// for it, so a thread whose CPU another process shares takes fewer pieces rather than holding
// the others up; with a busy loop competing for a CPU, the run still took 0.977 of the time it
// took with threads the scheduler moved.
//
//   CpuPlacement placement(n);                          // n scoring threads
//   for (unsigned t = 0; t < n; ++t) {
//     threads.emplace_back([&placement] { placement.Start(); ...; });
//     placement.Place(threads.back(), t);
//   }
//   placement.Done();                                   // always, once
#pragma once

#include <sched.h>

#include <latch>
#include <thread>

namespace rlscore::cli {

class CpuPlacement {
 public:
  // For `threads` threads that together fill every CPU the creating (calling) thread may run on:
  // at least 2 CPUs, and `threads` at least as many. Otherwise it places nothing: where there
  // are CPUs to spare the kernel puts each new thread on an idle one, and only it knows which.
  explicit CpuPlacement(unsigned threads);

  // From the creating thread, right after creating thread `index`: restricts it to the CPU at
  // position `index` (modulo their number) among those it may run on, and returns that CPU; -1
  // where it places nothing or the system refuses (a sandbox without sched_setaffinity).
  int Place(std::thread& thread, unsigned index);

  // From the creating thread, once every thread is placed: lets them go on.
  void Done() { placed_.count_down(); }

  // From each thread, before its work: waits for Done. Returns the CPU the thread is restricted
  // to, -1 where it was not placed (it may then run on every CPU the creating thread could).
  int Start();

 private:
  cpu_set_t allowed_;
  unsigned count_ = 0;  // CPUs in allowed_ where threads are placed, else 0
  std::latch placed_{1};
};

}  // namespace rlscore::cli
