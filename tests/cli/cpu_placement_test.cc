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
// Release answered and whether each had every CPU of the creating thread again after it.
struct Started {
  std::vector<int> cpus;
  std::vector<char> released;  // not vector<bool>, whose bits the threads would share
};
Started Start(unsigned threads, const cpu_set_t* mask = nullptr) {
  Started started{std::vector<int>(threads, -2), std::vector<char>(threads, 0)};
  std::thread creator([&] {
    if (mask != nullptr) {
      ASSERT_EQ(sched_setaffinity(0, sizeof *mask, mask), 0);
    }
    const cpu_set_t creating = Allowed();
    CpuPlacement placement(threads);
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        started.cpus[t] = placement.Release();
        const cpu_set_t after = Allowed();
        started.released[t] = CPU_EQUAL(&creating, &after);
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
    EXPECT_EQ(started.cpus[t], cpus[t % cpus.size()]) << "thread " << t;
    EXPECT_TRUE(started.released[t]) << "thread " << t << " was left pinned";
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
  for (const char released : started.released) EXPECT_TRUE(released);
}

TEST(CpuPlacement, LeavesThreadsAloneWhereCpusAreToSpare) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  const Started started = Start(static_cast<unsigned>(cpus.size()) - 1);
  for (size_t t = 0; t < started.cpus.size(); ++t) {
    EXPECT_EQ(started.cpus[t], -1) << "thread " << t;
    EXPECT_TRUE(started.released[t]) << "thread " << t;
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
    EXPECT_TRUE(started.released[t]) << "thread " << t;
  }
}

}  // namespace
}  // namespace rlscore::cli
