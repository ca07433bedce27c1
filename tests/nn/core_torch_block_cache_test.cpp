// The CPU block cache (core_torch/torch_memory.h, enable_cpu_block_cache): a freed block of 1 MiB or more
// serves a later request of its size or up to 1/8 smaller, not a smaller one; live + cached bytes never exceed
// the live high-water mark (hand-computed evictions, oldest first); tensors served from it never share memory
// (every tensor keeps its own values through a random sequence of allocations and frees); off when
// MEDSEG_CPU_BLOCK_CACHE=0. Each ctest test runs in its own process, so enabling it here affects this test only.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include "core_torch/torch_memory.h"

namespace medseg {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

torch::Tensor bytes(int64_t n) { return torch::empty({n}, torch::kUInt8); }

TEST(CpuBlockCache, AFreedBlockServesItsSizeAndUpToAnEighthLessButNotSmaller) {
  ASSERT_TRUE(enable_cpu_block_cache());
  const void* first = nullptr;
  {
    auto t = bytes(40 * kMiB);
    first = t.data_ptr();
  }
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 40 * kMiB);
  const int64_t reused = cpu_memory_stats().reused;
  {
    auto same = bytes(40 * kMiB);
    EXPECT_EQ(same.data_ptr(), first);
  }
  {
    auto smaller = bytes(36 * kMiB);  // 40 <= 36 + 36/8 = 40.5
    EXPECT_EQ(smaller.data_ptr(), first);
  }
  EXPECT_EQ(cpu_memory_stats().reused, reused + 2);
  {
    auto much_smaller = bytes(34 * kMiB);  // 34 + 34/8 = 38.25 < 40: a block of its own
    EXPECT_NE(much_smaller.data_ptr(), first);
    EXPECT_EQ(cpu_memory_stats().reused, reused + 2);
  }
  // The 34 MiB block took the live bytes to 34 MiB above where they were with 40 cached: 74 would pass the
  // 40 MiB high-water mark, so the 40 MiB block was given back; the 34 MiB one is cached now.
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 34 * kMiB);
  {
    auto small = bytes(kMiB / 2);  // under 1 MiB: glibc's, never cached
    (void)small;
  }
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 34 * kMiB) << "a 512 KiB block was cached";
  {
    auto mid = bytes(4 * kMiB);  // 1 MiB and up: cached (base + 4 + 34 cached stays within base + 40)
    (void)mid;
  }
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 38 * kMiB) << "a 4 MiB block was not cached";
  release_cpu_block_cache();
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 0);
}

TEST(CpuBlockCache, LiveAndCachedBytesStayWithinTheLiveHighWaterMark) {
  ASSERT_TRUE(enable_cpu_block_cache());
  release_cpu_block_cache();  // high-water mark = the bytes live now
  const int64_t base = cpu_memory_stats().current_bytes;
  const void* oldest = nullptr;
  const void* newest = nullptr;
  {
    std::vector<torch::Tensor> three{bytes(40 * kMiB), bytes(40 * kMiB), bytes(40 * kMiB)};
    oldest = three[0].data_ptr();
    newest = three[2].data_ptr();
    for (auto& t : three) t.reset();  // freed in order: [0] is the longest kept
  }
  auto s = cpu_memory_stats();
  EXPECT_EQ(s.high_water, base + 120 * kMiB);
  EXPECT_EQ(s.cached_bytes, 120 * kMiB);
  // 64 MiB fits no cached block; live + cached <= high water needs cached <= 56 MiB: the two oldest go.
  auto big = bytes(64 * kMiB);
  s = cpu_memory_stats();
  EXPECT_EQ(s.cached_bytes, 40 * kMiB);
  EXPECT_EQ(s.high_water, base + 120 * kMiB);
  EXPECT_LE(s.current_bytes + s.cached_bytes, s.high_water);
  auto again = bytes(40 * kMiB);
  EXPECT_EQ(again.data_ptr(), newest) << "the newest block should have stayed";
  EXPECT_NE(again.data_ptr(), oldest);
  // Beyond the mark: nothing is cached to free, and the mark rises with the live bytes.
  auto more = bytes(64 * kMiB);
  s = cpu_memory_stats();
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.high_water, base + 168 * kMiB);
}

TEST(CpuBlockCache, TensorsServedFromItNeverShareMemory) {
  ASSERT_TRUE(enable_cpu_block_cache());
  std::mt19937 rng(11);
  const int64_t sizes[] = {32 * kMiB, 34 * kMiB, 36 * kMiB, 40 * kMiB};
  std::map<int, torch::Tensor> live;  // value -> tensor filled with it
  for (int step = 0; step < 60; ++step) {
    if (live.size() >= 5 || (!live.empty() && rng() % 3 == 0)) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      live.erase(it);
    } else {
      const int value = step + 1;
      live[value] = bytes(sizes[rng() % 4]).fill_(value);
    }
    for (const auto& [value, t] : live) {  // one byte a MiB and the last: a shared block shows everywhere
      const bool kept = t.slice(0, 0, t.numel(), kMiB).eq(value).all().item<bool>() && t[-1].item<int>() == value;
      ASSERT_TRUE(kept) << "step " << step << ": the tensor of " << value << " changed";
    }
  }
  EXPECT_GT(cpu_memory_stats().reused, 10);
}

// A small network on activations above 32 MiB (8 channels of 64 x 128 x 128 floats): the same bits with the cache as
// before it was on, and its passes after the first are served from it.
TEST(CpuBlockCache, ANetworksPassesOnReusedBlocksGiveTheSameBits) {
  torch::manual_seed(5);
  torch::nn::Sequential net(torch::nn::Conv3d(torch::nn::Conv3dOptions(8, 8, 3).padding(1)),
                            torch::nn::InstanceNorm3d(torch::nn::InstanceNorm3dOptions(8).affine(true)),
                            torch::nn::LeakyReLU(), torch::nn::Conv3d(torch::nn::Conv3dOptions(8, 8, 3).padding(1)));
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 8, 64, 128, 128});
  const auto want = net->forward(x);
  ASSERT_TRUE(enable_cpu_block_cache());
  for (int pass = 0; pass < 3; ++pass) {
    const auto got = net->forward(x);
    ASSERT_TRUE(torch::equal(got, want)) << "pass " << pass;
  }
  EXPECT_GT(cpu_memory_stats().reused, 0);
}

TEST(CpuBlockCache, OffWhenTheEnvironmentSaysSo) {
  ASSERT_EQ(setenv("MEDSEG_CPU_BLOCK_CACHE", "0", 1), 0);
  EXPECT_FALSE(enable_cpu_block_cache());
  unsetenv("MEDSEG_CPU_BLOCK_CACHE");
  {
    auto t = bytes(40 * kMiB);
    (void)t;
  }
  EXPECT_EQ(cpu_memory_stats().cached_bytes, 0);
  EXPECT_EQ(cpu_memory_stats().reused, 0);
}

}  // namespace
}  // namespace medseg
