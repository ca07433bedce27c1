#pragma once
// Per-channel draws shared by the intensity transforms. nnU-Net's default pipeline applies brightness,
// contrast and gamma to every channel (p_per_channel 1) with an independent BGContrast draw per
// channel; DA5's transforms pick each channel with a probability.
#include <cstdint>
#include <vector>

#include "data/rng.h"

namespace medseg::data::augment {

std::vector<double> sample_channel_factors(int64_t channels, double lo, double hi, Rng& rng);

// Each of `channels` with probability p (no draw when p >= 1: every channel).
std::vector<int64_t> chosen_channels(int64_t channels, double p, Rng& rng);

// A value per chosen channel (shift, strength, ...); empty: the transform did nothing.
struct ChannelValues {
  std::vector<int64_t> channels;
  std::vector<double> values;
  bool empty() const { return channels.empty(); }
};

// BG2's draw order for a per-channel parameter (median size, sharpening strength): `per_channel` holds a
// value for every channel, drawn first; then each channel is chosen with p and keeps its value.
ChannelValues chosen_channel_values(const std::vector<double>& per_channel, double p, Rng& rng);

// N(mu, sigma) from two uniforms (Box-Muller), so draws stay bit-exact across standard libraries.
double sample_normal(Rng& rng, double mu, double sigma);

}  // namespace medseg::data::augment
