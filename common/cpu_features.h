// The instruction-set extensions of the CPU this process runs on, for code that picks a vector
// path at run time. Asked of the CPU once, on first use: CPUID for what it has, and XGETBV for
// the register state the operating system saves (AVX-512 needs both).
//
// Ours rather than GCC's __builtin_cpu_supports: that links libgcc's CPU model, whose constructor
// runs at every start and asks a dozen CPUID leaves, and in a virtual machine each CPUID is a
// trap to the hypervisor. `rlscore score` starts often; this asks two leaves, when asked.
//
//   if (Cpu().avx512bw && Cpu().avx512vbmi) return ScanAvx512(text);
#pragma once

#include <cstdint>

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

// The features of this CPU, detected on the first call (thread-safe).
inline const CpuFeatures& Cpu() {
  static const CpuFeatures features = DetectCpuFeatures();
  return features;
}

}  // namespace rlscore
