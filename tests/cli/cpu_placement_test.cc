#include "cli/cpu_placement.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>
#include <vector>

namespace rlscore::cli {
namespace {

cpu_set_t Allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return set;
}

std::vector<int> Cpus(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Creates `threads` threads from a thread of its own (so that the test's thread keeps its CPUs),
// placed by a CpuPlacement made there, with `mask` (if given) as that thread's; returns what each
// Start answered and the CPUs each may run on after it.
struct Started {
  std::vector<int> cpus;
  std::vector<std::vector<int>> allowed;
  std::vector<int> creating;  // the CPUs the creating thread may run on
};
Started Start(unsigned threads, const cpu_set_t* mask = nullptr) {
  Started started{std::vector<int>(threads, -2), std::vector<std::vector<int>>(threads), {}};
  std::thread creator([&] {
    if (mask != nullptr) {
      ASSERT_EQ(sched_setaffinity(0, sizeof *mask, mask), 0);
    }
    started.creating = Cpus(Allowed());
    CpuPlacement placement(threads);
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        started.cpus[t] = placement.Start();
        started.allowed[t] = Cpus(Allowed());
      });
      placement.Place(workers.back(), t);
    }
    placement.Done();
    for (std::thread& w : workers) w.join();
  });
  creator.join();
  return started;
}

TEST(CpuPlacement, PutsEachOfThreadsThatFillTheCpusOnItsOwn) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  const auto threads = static_cast<unsigned>(cpus.size()) + 2;
  const Started started = Start(threads);
  for (unsigned t = 0; t < threads; ++t) {
    const int cpu = cpus[t % cpus.size()];
    EXPECT_EQ(started.cpus[t], cpu) << "thread " << t;
    // It stays there for its work, not only at its start.
    EXPECT_EQ(started.allowed[t], std::vector<int>{cpu}) << "thread " << t;
  }
}

TEST(CpuPlacement, CountsOnlyTheCpusTheCreatorMayRunOn) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 3) GTEST_SKIP() << "needs 3 CPUs to leave one out";
  // The last two CPUs only: thread 3 of 4 starts on the second of them.
  cpu_set_t two;
  CPU_ZERO(&two);
  CPU_SET(cpus[cpus.size() - 2], &two);
  CPU_SET(cpus.back(), &two);
  const Started started = Start(4, &two);
  EXPECT_EQ(started.cpus[3], cpus.back());
  EXPECT_EQ(started.cpus[0], cpus[cpus.size() - 2]);
  EXPECT_EQ(started.allowed[3], std::vector<int>{cpus.back()});
}

TEST(CpuPlacement, LeavesThreadsAloneWhereCpusAreToSpare) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  const Started started = Start(static_cast<unsigned>(cpus.size()) - 1);
  for (size_t t = 0; t < started.cpus.size(); ++t) {
    EXPECT_EQ(started.cpus[t], -1) << "thread " << t;
    EXPECT_EQ(started.allowed[t], started.creating) << "thread " << t << " was restricted";
  }
}

TEST(CpuPlacement, LeavesThreadsThatMayRunOnOneCpuAlone) {
  const std::vector<int> cpus = Cpus(Allowed());
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus.back(), &one);
  const Started started = Start(8, &one);
  for (size_t t = 0; t < started.cpus.size(); ++t) {
    EXPECT_EQ(started.cpus[t], -1) << "thread " << t;
    EXPECT_EQ(started.allowed[t], started.creating) << "thread " << t << " was restricted";
  }
}

}  // namespace
}  // namespace rlscore::cli
