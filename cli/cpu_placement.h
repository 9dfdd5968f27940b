// Where the scoring threads start running. A new thread goes to the CPU that looks least busy at
// the instant it is created. `rlscore score` creates its reader first, which takes the idle CPU
// and soon sleeps; the scoring threads may then both land on the CPU of the thread that created
// them. The scheduler leaves two busy threads sharing one CPU beside an idle one for as long as
// it counts them cache-hot (10 ms of a 15 ms run on 2 CPUs), and a new thread that waits there to
// run at all may wait until the idle CPU next looks for work, a scheduler tick later (3-4 ms), so
// it cannot move itself either (docs/PERFORMANCE.md, "Evaluation CLI").
//
// So the thread that creates them moves each to a CPU of its own as soon as it exists: the kernel
// moves a thread that waits to run the moment it is asked. Once all are placed, each allows
// itself every CPU again: the threads start one to a CPU, and the scheduler stays free to move
// them later (a pinned thread could not leave a CPU that another process has taken).
//
//   CpuPlacement placement(n);                          // n scoring threads
//   for (unsigned t = 0; t < n; ++t) {
//     threads.emplace_back([&placement] { placement.Release(); ...; });
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

  // From each thread, before its work: waits for Done, then allows the thread every CPU the
  // creating thread could run on. Returns the CPU it ran on while placed, -1 where it was not.
  int Release();

 private:
  cpu_set_t allowed_;
  unsigned count_ = 0;  // CPUs in allowed_ where threads are placed, else 0
  std::latch placed_{1};
};

}  // namespace rlscore::cli
