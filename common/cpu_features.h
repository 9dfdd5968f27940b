// The instruction-set extensions of the CPU this process runs on, for code that picks a vector
// path at run time. Asked of the CPU once, on first use: CPUID for what it has, and XGETBV for
// the register state the operating system saves (AVX-512 needs both).
//
// Ours rather than GCC's __builtin_cpu_supports: that links libgcc's CPU model, whose constructor
// runs at every start and asks a dozen CPUID leaves, and in a virtual machine each CPUID is a
// trap to the hypervisor. `rlscore score` starts often; this asks two leaves, when asked.
//
//   if (Cpu().avx512bw && Cpu().avx512vbmi) return ScanAvx512(text);
//
// RLSCORE_MAX_CPU_ISA caps what Cpu() reports, whatever the CPU has: `sse2` (the x86-64 baseline,
// none of the extensions below), `avx2` (no AVX-512) or `avx512` (everything, as when unset); any
// case. Every vector path gives exactly its portable path's results, so the cap changes only the
// speed: it runs the code an older CPU would run, and tells a vector path's fault from the rest.
// The executables and the Python package refuse a value that is none of these
// (CpuIsaEnvironmentError); Cpu() then reports all that the CPU has.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define RLSCORE_CPUID 1
#endif

namespace rlscore {

struct CpuFeatures {
  bool popcnt = false;
  bool bmi1 = false;
  bool bmi2 = false;
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512vbmi = false;
  bool avx512vbmi2 = false;
};

inline CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(RLSCORE_CPUID)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return f;
  f.popcnt = (ecx >> 23 & 1) != 0;
  const bool osxsave = (ecx >> 27 & 1) != 0;
  uint64_t xcr0 = 0;
  if (osxsave) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = static_cast<uint64_t>(hi) << 32 | lo;
  }
  const bool avx_state = (xcr0 & 0x6) == 0x6;       // XMM and YMM
  const bool avx512_state = (xcr0 & 0xE6) == 0xE6;  // and the mask and ZMM registers
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  f.bmi1 = (ebx >> 3 & 1) != 0;
  f.bmi2 = (ebx >> 8 & 1) != 0;
  f.avx2 = avx_state && (ebx >> 5 & 1) != 0;
  f.avx512f = avx512_state && (ebx >> 16 & 1) != 0;
  f.avx512dq = f.avx512f && (ebx >> 17 & 1) != 0;
  f.avx512bw = f.avx512f && (ebx >> 30 & 1) != 0;
  f.avx512vl = f.avx512f && (ebx >> 31 & 1) != 0;
  f.avx512vbmi = f.avx512f && (ecx >> 1 & 1) != 0;
  f.avx512vbmi2 = f.avx512f && (ecx >> 6 & 1) != 0;
#endif
  return f;
}

// The ceilings RLSCORE_MAX_CPU_ISA names, lowest first.
enum class CpuIsa { kSse2, kAvx2, kAvx512 };

// The ceiling `name` names (`sse2`, `avx2`, `avx512`, in any case); nullopt for anything else.
inline std::optional<CpuIsa> ParseCpuIsa(std::string_view name) {
  const auto is = [name](std::string_view known) {
    if (name.size() != known.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) != known[i]) return false;
    }
    return true;
  };
  if (is("sse2")) return CpuIsa::kSse2;
  if (is("avx2")) return CpuIsa::kAvx2;
  if (is("avx512")) return CpuIsa::kAvx512;
  return std::nullopt;
}

// What RLSCORE_MAX_CPU_ISA asks for: kAvx512 (no cap) when it is unset; nullopt when it names no
// ceiling, which an executable reports before it starts (CpuIsaEnvironmentError).
inline std::optional<CpuIsa> CpuIsaFromEnvironment() {
  const char* value = std::getenv("RLSCORE_MAX_CPU_ISA");
  return value == nullptr ? std::optional<CpuIsa>(CpuIsa::kAvx512) : ParseCpuIsa(value);
}

// What is wrong with RLSCORE_MAX_CPU_ISA, quoting it; empty when it is unset or names a ceiling.
inline std::string CpuIsaEnvironmentError() {
  if (CpuIsaFromEnvironment().has_value()) return "";
  return "RLSCORE_MAX_CPU_ISA=\"" + std::string(std::getenv("RLSCORE_MAX_CPU_ISA")) +
         "\" names no instruction set: use sse2, avx2 or avx512";
}

// `f` less the extensions above `ceiling`. The AVX2 ceiling keeps POPCNT and BMI, which come with
// AVX2 in the x86-64-v3 level; the SSE2 ceiling is the baseline, without them.
inline CpuFeatures CapCpuFeatures(CpuFeatures f, CpuIsa ceiling) {
  if (ceiling < CpuIsa::kAvx512) {
    f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vbmi = f.avx512vbmi2 = false;
  }
  if (ceiling < CpuIsa::kAvx2) f.popcnt = f.bmi1 = f.bmi2 = f.avx2 = false;
  return f;
}

// The features of this CPU, detected on the first call (thread-safe), within RLSCORE_MAX_CPU_ISA.
inline const CpuFeatures& Cpu() {
  static const CpuFeatures features =
      CapCpuFeatures(DetectCpuFeatures(), CpuIsaFromEnvironment().value_or(CpuIsa::kAvx512));
  return features;
}

}  // namespace rlscore
