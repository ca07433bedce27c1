#include "data/augment/sharpen.h"

#include <ATen/ATen.h>

#include <vector>

namespace medseg::data::augment {

ChannelValues sample_sharpening(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  std::vector<double> strengths;
  for (int64_t c = 0; c < channels; ++c) strengths.push_back(rng.uniform(cfg.sharpen_lo, cfg.sharpen_hi));
  return chosen_channel_values(strengths, cfg.sharpen_p_channel, rng);
}

void apply_sharpening(at::Tensor& data, const ChannelValues& strengths) {
  if (strengths.empty()) return;
  // Index x + 3 y + 9 z: the centre 13 and its six face neighbours.
  std::vector<float> w(27, 0.f);
  w[13] = 6.f;
  for (int i : {4, 22, 10, 16, 12, 14}) w[static_cast<size_t>(i)] = -1.f;
  const at::Tensor kernel = at::tensor(w, at::kFloat).view({1, 1, 3, 3, 3}).to(data.device());
  for (size_t i = 0; i < strengths.channels.size(); ++i) {
    at::Tensor x = data[strengths.channels[i]];
    const at::Tensor padded = at::replication_pad3d(x.unsqueeze(0).unsqueeze(0), {1, 1, 1, 1, 1, 1});
    const at::Tensor laplace = at::conv3d(padded, kernel)[0][0];
    x.copy_(laplace.mul_(static_cast<double>(static_cast<float>(strengths.values[i]))).add_(x));
  }
}

}  // namespace medseg::data::augment
