#pragma once
// Channel statistics in double with a fixed summation order (sixteen interleaved partial sums, then
// combined pairwise), so contrast and gamma give bit-identical results whatever the intra-op thread count
// (a parallel torch reduction may sum in another order) and whether or not the processor has AVX-512.
#include <cstdint>

namespace medseg::data::augment {

struct ChannelStats {
  double mean = 0, std = 0, min = 0, max = 0;  // std: unbiased (n - 1), like torch.std
};

// Over `n` contiguous values. `with_std` false skips the second pass (std stays 0).
ChannelStats channel_stats(const float* x, int64_t n, bool with_std = true);

}  // namespace medseg::data::augment
