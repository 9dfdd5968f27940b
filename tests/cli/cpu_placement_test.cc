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

// Runs `body` on a thread of its own, so that the test's thread keeps its CPUs.
template <typename Body>
void OnThread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST(StartOnOwnCpu, PutsEachOfThreadsThatFillTheCpusOnItsOwn) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  const auto threads = static_cast<unsigned>(cpus.size());
  for (unsigned index = 0; index < threads + 2; ++index) {
    OnThread([&] {
      const cpu_set_t before = Allowed();
      EXPECT_EQ(StartOnOwnCpu(index, threads), cpus[index % threads]) << "thread " << index;
      const cpu_set_t after = Allowed();
      EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "thread " << index << " was left pinned";
    });
  }
}

TEST(StartOnOwnCpu, CountsOnlyTheCpusTheThreadMayRunOn) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 3) GTEST_SKIP() << "needs 3 CPUs to leave one out";
  OnThread([&] {
    // The last two CPUs only: thread 3 of 2 starts on the second of them.
    cpu_set_t two;
    CPU_ZERO(&two);
    CPU_SET(cpus[cpus.size() - 2], &two);
    CPU_SET(cpus.back(), &two);
    ASSERT_EQ(sched_setaffinity(0, sizeof two, &two), 0);
    EXPECT_EQ(StartOnOwnCpu(3, 2), cpus.back());
    const cpu_set_t after = Allowed();
    EXPECT_TRUE(CPU_EQUAL(&two, &after));
  });
}

TEST(StartOnOwnCpu, LeavesThreadsAloneWhereCpusAreToSpare) {
  const std::vector<int> cpus = Cpus(Allowed());
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  OnThread([&] {
    const cpu_set_t before = Allowed();
    EXPECT_EQ(StartOnOwnCpu(0, static_cast<unsigned>(cpus.size()) - 1), -1);
    const cpu_set_t after = Allowed();
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
  });
}

TEST(StartOnOwnCpu, LeavesAThreadThatMayRunOnOneCpuAlone) {
  OnThread([] {
    const std::vector<int> cpus = Cpus(Allowed());
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    EXPECT_EQ(StartOnOwnCpu(1, 8), -1);
    const cpu_set_t after = Allowed();
    EXPECT_TRUE(CPU_EQUAL(&one, &after));
  });
}

}  // namespace
}  // namespace rlscore::cli
