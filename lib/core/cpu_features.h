#pragma once
// What the processor (and the kernel, which must save the wider registers) offers for bf16 arithmetic. medseg_predict
// names bf16 units that `--amp auto` (still fp32 on the CPU) leaves unused (docs/predict.md, "bf16 on the CPU").
#include <string>

namespace medseg {

struct CpuFeatures {
  bool avx512f = false;      // AVX-512 foundation, with the OS saving its registers
  bool avx512_core = false;  // F, BW, DQ and VL together (Skylake-X and later, Zen 4): what medseg's own kernels use
  bool avx512_bf16 = false;  // VDPBF16PS: bf16 dot products on the AVX-512 units
  bool amx_bf16 = false;     // AMX tiles with bf16 multiplies, with the OS saving the tile state
  bool bf16_units() const { return avx512_bf16 || amx_bf16; }
  std::string describe() const;  // e.g. "AMX", "AVX-512 BF16", "no bf16 units"
};

// This machine's, read once with CPUID and XGETBV (x86-64; elsewhere all false).
const CpuFeatures& cpu_features();

}  // namespace medseg
