// Where a scoring thread starts running. A new thread goes to the CPU that looks least busy at
// the instant it is created. `rlscore score` creates its reader first, which takes the idle CPU
// and soon sleeps; the scoring threads may then both land on the CPU of the thread that created
// them. The scheduler leaves two busy threads sharing one CPU beside an idle one for as long as
// it counts them cache-hot: 10 ms of a 15 ms run on 2 CPUs (docs/PERFORMANCE.md, "Evaluation
// CLI").
//
// StartOnOwnCpu moves the calling thread to a CPU of its own, then allows it every CPU again:
// the threads start one to a CPU, and the scheduler stays free to move them later (a pinned
// thread could not leave a CPU that another process has taken).
//
//   std::thread([t, n] { StartOnOwnCpu(t, n); ... });   // scoring thread t of n
#pragma once

namespace rlscore::cli {

// For thread `index` of `threads` that together fill every CPU the calling thread may run on
// (at least 2 CPUs, and `threads` at least as many): moves it to the CPU at position `index`
// (modulo their number) among those CPUs, then allows it every one of them again, as before.
// Returns that CPU. Returns -1 and moves nothing where there are CPUs to spare (the kernel puts
// each new thread on an idle one, and only it knows which are idle), where the thread may run on
// one CPU only, or where the system refuses (a sandbox without sched_setaffinity).
int StartOnOwnCpu(unsigned index, unsigned threads);

}  // namespace rlscore::cli
