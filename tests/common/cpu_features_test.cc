#include "common/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace rlscore {
namespace {

// The flags Linux lists for the first CPU in /proc/cpuinfo: the CPU's CPUID bits, less what the
// kernel does not let processes use (as XGETBV says). Empty when the file cannot be read.
std::set<std::string> KernelCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string flag; words >> flag;) flags.insert(flag);
    return flags;
  }
  return {};
}

// Each extension the vector paths choose by is read from the CPUID bit the kernel reads it from:
// Cpu() agrees with the kernel's list, flag by flag, on whatever CPU runs the test.
TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
  const std::set<std::string> flags = KernelCpuFlags();
  if (flags.empty()) GTEST_SKIP() << "no flags in /proc/cpuinfo to compare with";
  const CpuFeatures& cpu = Cpu();
  const std::pair<const char*, bool> expected[] = {{"popcnt", cpu.popcnt},
                                                   {"bmi1", cpu.bmi1},
                                                   {"bmi2", cpu.bmi2},
                                                   {"avx2", cpu.avx2},
                                                   {"avx512f", cpu.avx512f},
                                                   {"avx512bw", cpu.avx512bw},
                                                   {"avx512dq", cpu.avx512dq},
                                                   {"avx512vl", cpu.avx512vl},
                                                   {"avx512vbmi", cpu.avx512vbmi},
                                                   {"avx512_vbmi2", cpu.avx512vbmi2}};
  for (const auto& [flag, detected] : expected) {
    EXPECT_EQ(detected, flags.contains(flag)) << flag;
  }
  EXPECT_EQ(&Cpu(), &cpu);  // detected once
}

}  // namespace
}  // namespace rlscore
