// medseg_bench_peak: what this processor's arithmetic units reach, measured rather than computed from the clock
// /proc/cpuinfo reports (a turbo clock runs above it: the 2-core EPYC here reached 437 GFLOP/s in bf16 against
// a "peak" of 333 from its base clock). Two figures per precision, each on --threads threads:
//   loop  - back-to-back independent multiply-adds on the widest vector units: AVX-512 vfmadd231ps (fp32) and
//           vdpbf16ps (bf16), or AVX2 FMA (fp32) without AVX-512. The instruction rate: no kernel goes above it.
//   gemm  - torch::mm of two 3072 x 3072 matrices (oneDNN's kernels; AMX where the processor has it): what a
//           library kernel reaches on dense work, the practical ceiling of a convolution.
// Prints one JSON object (GFLOP/s; null where the processor lacks the instructions). scripts/bench/bench_predict.sh
// and bench_predict_e2e.sh put a run's rate beside them.
#include <immintrin.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "core/cpu_features.h"

using namespace medseg;

namespace {

constexpr int kAcc = 16;  // independent accumulators: latency 4 x 2 pipes x 2 for headroom, within 32 registers
constexpr int64_t kIters = 200'000'000;  // about a second a loop at 4 GHz

#if defined(__x86_64__)
// The apps compile at -O1 (apps/CMakeLists.txt), which keeps the accumulator array in memory: a load and a store
// around every multiply-add, half the rate. These loops need it unrolled into registers.
#define MEDSEG_PEAK_LOOP __attribute__((optimize("O3")))
// FLOP of one call: kIters x kAcc instructions x 16 lanes x 2 (multiply and add).
MEDSEG_PEAK_LOOP __attribute__((target("avx512f"))) float fma512_loop() {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  float out[16];
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

// kIters x kAcc x 16 lanes x 2 products x 2 (multiply and add).
MEDSEG_PEAK_LOOP __attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop() {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  float out[16];
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

// kIters x kAcc x 8 lanes x 2.
MEDSEG_PEAK_LOOP __attribute__((target("avx2,fma"))) float fma256_loop() {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float out[8];
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  return out[0];
}
#endif

// GFLOP/s of `loop` (flop FLOP a call) run once on each of `threads` threads at the same time.
double loop_rate(float (*loop)(), double flop, int threads) {
  std::vector<float> sink(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sink[static_cast<size_t>(t)] = loop(); });
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile float keep = sink[0];  // the results are used: the loops cannot be dropped
  (void)keep;
  return flop * threads / s / 1e9;
}

// Best GFLOP/s of `repeat` torch::mm of n x n matrices in dtype, after one warm-up.
double gemm_rate(torch::ScalarType dtype, int64_t n, int repeat) {
  const auto a = torch::rand({n, n}).to(dtype), b = torch::rand({n, n}).to(dtype);
  torch::Tensor c = torch::mm(a, b);
  double best = 0;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(n * n * n) / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"This processor's fp32 and bf16 multiply-add rates: instruction loops and a library GEMM",
               "medseg_bench_peak"};
  int threads = 1;
  app.add_option("--threads", threads, "threads running the loops at the same time; torch's threads for the GEMM")
      ->check(CLI::Range(1, 1024));
  return cli::run(argc, argv, app, [&] {
    at::set_num_threads(threads);
    const CpuFeatures& f = cpu_features();
    nlohmann::json out = {{"threads", threads}, {"bf16_units", f.describe()}};
    const double per_call = static_cast<double>(kIters) * kAcc * 2;  // FLOP per call per 32-bit lane
    out["loop_fp32"] = nullptr;
    out["loop_fp32_isa"] = "none";
    out["loop_bf16"] = nullptr;
#if defined(__x86_64__)
    if (f.avx512f) {
      out["loop_fp32"] = loop_rate(fma512_loop, per_call * 16, threads);
      out["loop_fp32_isa"] = "AVX-512 FMA";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      out["loop_fp32"] = loop_rate(fma256_loop, per_call * 8, threads);
      out["loop_fp32_isa"] = "AVX2 FMA";
    }
    if (f.avx512_bf16) out["loop_bf16"] = loop_rate(dpbf16_loop, per_call * 32, threads);
#endif
    out["gemm_fp32"] = gemm_rate(torch::kFloat, 3072, 5);
    out["gemm_bf16"] = gemm_rate(torch::kBFloat16, 3072, 5);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  });
}
