#pragma once
// BG2 GammaTransform as nnU-Net uses it, twice: inverted (p 0.1) and plain (p 0.3), gamma
// BGContrast(0.7, 1.5) per channel, statistics retained. Per channel:
//   [x = -x]; m, s = mean, std (unbiased); lo, r = min, max - min;
//   x = ((x - lo) / max(r, 1e-7))^gamma * r + lo;  x = (x - mean(x)) * s / max(std(x), 1e-7) + m;  [x = -x]
#include <ATen/core/Tensor.h>

#include <vector>

namespace medseg::data::augment {

inline constexpr double kGammaFlatEps = 1e-7;  // the range and std guard above, for flat channels

void apply_gamma(at::Tensor& data, const std::vector<double>& gammas, bool invert, bool retain_stats = true);

}  // namespace medseg::data::augment
