#include "common/cpu_features.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <optional>
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
// the detection agrees with the kernel's list, flag by flag, on whatever CPU runs the test.
TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
  const std::set<std::string> flags = KernelCpuFlags();
  if (flags.empty()) GTEST_SKIP() << "no flags in /proc/cpuinfo to compare with";
  const CpuFeatures cpu = DetectCpuFeatures();
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
}

bool operator==(const CpuFeatures& a, const CpuFeatures& b) {
  return a.popcnt == b.popcnt && a.bmi1 == b.bmi1 && a.bmi2 == b.bmi2 && a.avx2 == b.avx2 &&
         a.avx512f == b.avx512f && a.avx512bw == b.avx512bw && a.avx512dq == b.avx512dq &&
         a.avx512vl == b.avx512vl && a.avx512vbmi == b.avx512vbmi && a.avx512vbmi2 == b.avx512vbmi2;
}

CpuFeatures Everything() {
  CpuFeatures f;
  f.popcnt = f.bmi1 = f.bmi2 = f.avx2 = true;
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vbmi = f.avx512vbmi2 = true;
  return f;
}

TEST(CpuFeatures, ACeilingTakesAwayWhatIsAboveIt) {
  CpuFeatures avx2;
  avx2.popcnt = avx2.bmi1 = avx2.bmi2 = avx2.avx2 = true;
  EXPECT_TRUE(CapCpuFeatures(Everything(), CpuIsa::kAvx512) == Everything());
  EXPECT_TRUE(CapCpuFeatures(Everything(), CpuIsa::kAvx2) == avx2);
  EXPECT_TRUE(CapCpuFeatures(Everything(), CpuIsa::kSse2) == CpuFeatures{});
  // A ceiling never adds what the CPU lacks.
  EXPECT_TRUE(CapCpuFeatures(CpuFeatures{}, CpuIsa::kAvx512) == CpuFeatures{});
  CpuFeatures no_vbmi = Everything();
  no_vbmi.avx512vbmi = no_vbmi.avx512vbmi2 = false;
  EXPECT_TRUE(CapCpuFeatures(no_vbmi, CpuIsa::kAvx512) == no_vbmi);
}

TEST(CpuFeatures, CeilingsAreNamedInAnyCase) {
  EXPECT_EQ(ParseCpuIsa("sse2"), CpuIsa::kSse2);
  EXPECT_EQ(ParseCpuIsa("AVX2"), CpuIsa::kAvx2);
  EXPECT_EQ(ParseCpuIsa("Avx512"), CpuIsa::kAvx512);
  for (const char* wrong : {"", "avx", "avx-2", "avx2 ", "avx512f", "sse", "native"}) {
    EXPECT_EQ(ParseCpuIsa(wrong), std::nullopt) << '"' << wrong << '"';
  }
}

// Restores RLSCORE_MAX_CPU_ISA as the test found it.
class MaxCpuIsaVariable {
 public:
  MaxCpuIsaVariable() {
    if (const char* value = getenv(kName)) saved_ = value;
  }
  ~MaxCpuIsaVariable() {
    if (saved_) {
      setenv(kName, saved_->c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }
  static constexpr const char* kName = "RLSCORE_MAX_CPU_ISA";

 private:
  std::optional<std::string> saved_;
};

TEST(CpuFeatures, TheEnvironmentNamesTheCeiling) {
  MaxCpuIsaVariable restore;
  unsetenv(MaxCpuIsaVariable::kName);
  EXPECT_EQ(CpuIsaFromEnvironment(), CpuIsa::kAvx512);
  EXPECT_EQ(CpuIsaEnvironmentError(), "");
  setenv(MaxCpuIsaVariable::kName, "Avx2", 1);
  EXPECT_EQ(CpuIsaFromEnvironment(), CpuIsa::kAvx2);
  EXPECT_EQ(CpuIsaEnvironmentError(), "");
  setenv(MaxCpuIsaVariable::kName, "avx-512", 1);
  EXPECT_EQ(CpuIsaFromEnvironment(), std::nullopt);
  EXPECT_EQ(CpuIsaEnvironmentError(),
            "RLSCORE_MAX_CPU_ISA=\"avx-512\" names no instruction set: use sse2, avx2 or avx512");
}

// Cpu() is the detection within the ceiling this process was started with (ctest runs this test
// under each; the golden output test of `rlscore score` checks the results under each).
TEST(CpuFeatures, CpuIsTheDetectionWithinTheCeiling) {
  const std::optional<CpuIsa> ceiling = CpuIsaFromEnvironment();
  ASSERT_TRUE(ceiling.has_value());
  EXPECT_TRUE(Cpu() == CapCpuFeatures(DetectCpuFeatures(), *ceiling));
  EXPECT_EQ(&Cpu(), &Cpu());  // detected once
}

}  // namespace
}  // namespace rlscore
