#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>

namespace medseg {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0: the register states the OS saves on a context switch. Without them an instruction that uses the
// registers faults even where CPUID lists it.
uint64_t saved_states() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid(1, a, b, c, d);
  const bool osxsave = (c >> 27) & 1U;
  if (!osxsave) return f;
  const uint64_t xcr0 = saved_states();
  const bool avx512_state = (xcr0 & 0xE6U) == 0xE6U;  // SSE, AVX, opmask, ZMM upper halves, ZMM16-31
  const bool amx_state = ((xcr0 >> 17) & 3U) == 3U;   // XTILECFG, XTILEDATA
  __cpuid_count(7, 0, a, b, c, d);
  f.avx512f = avx512_state && ((b >> 16) & 1U);
  f.avx512_core = f.avx512f && ((b >> 17) & 1U) && ((b >> 30) & 1U) && ((b >> 31) & 1U);  // DQ, BW, VL
  f.amx_bf16 = amx_state && ((d >> 22) & 1U) && ((d >> 24) & 1U);                         // AMX-BF16 and AMX-TILE
  __cpuid_count(7, 1, a, b, c, d);
  f.avx512_bf16 = f.avx512f && ((a >> 5) & 1U);
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

std::string CpuFeatures::describe() const {
  if (amx_bf16) return "AMX";
  if (avx512_bf16) return "AVX-512 BF16";
  return "no bf16 units";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace medseg
