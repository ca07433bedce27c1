// cpu_features() (core/cpu_features.h) against the kernel's own view of the processor: the flags line of
// /proc/cpuinfo, which Linux fills from the same CPUID bits less what it does not enable.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/cpu_features.h"

namespace {

std::set<std::string> kernel_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

}  // namespace

TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
  const std::set<std::string> flags = kernel_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const medseg::CpuFeatures& f = medseg::cpu_features();
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
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
