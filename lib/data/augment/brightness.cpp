#include "data/augment/brightness.h"

#include <ATen/ATen.h>

namespace medseg::data::augment {

void apply_brightness(at::Tensor& data, const std::vector<double>& factors) {
  for (size_t c = 0; c < factors.size(); ++c) data[static_cast<int64_t>(c)].mul_(factors[c]);
}

ChannelValues sample_additive_brightness(const AugmentConfig& cfg, int64_t channels, Rng& rng) {
  ChannelValues v;
  v.channels = chosen_channels(channels, cfg.additive_p_channel, rng);
  for (size_t i = 0; i < v.channels.size(); ++i)
    v.values.push_back(sample_normal(rng, cfg.additive_mu, cfg.additive_sigma));
  return v;
}

void apply_additive_brightness(at::Tensor& data, const ChannelValues& shifts) {
  // BG2 adds the shift as a float32 tensor.
  for (size_t i = 0; i < shifts.channels.size(); ++i)
    data[shifts.channels[i]].add_(static_cast<double>(static_cast<float>(shifts.values[i])));
}

}  // namespace medseg::data::augment
