// cpu_features() (core/cpu_features.h) against the kernel's own view of the processor: the flags line of
// /proc/cpuinfo, which Linux fills from the same CPUID bits less what it does not enable.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/cpu_features.h"
#include "support/test_support.h"

TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
  const std::set<std::string> flags = medseg::test::kernel_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const medseg::CpuFeatures& f = medseg::cpu_features();
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512_core, flags.count("avx512f") == 1 && flags.count("avx512bw") == 1 &&
                               flags.count("avx512dq") == 1 && flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") == 1 && flags.count("amx_tile") == 1);
  EXPECT_EQ(f.bf16_units(), f.avx512_bf16 || f.amx_bf16);
}

TEST(CpuFeatures, DescribeNamesTheWidestBf16Units) {
  medseg::CpuFeatures f;
  EXPECT_EQ(f.describe(), "no bf16 units");
  f.avx512f = f.avx512_bf16 = true;
  EXPECT_EQ(f.describe(), "AVX-512 BF16");
  f.amx_bf16 = true;
  EXPECT_EQ(f.describe(), "AMX");
}
