#include "data/augment/intensity.h"

#include <cmath>

namespace medseg::data::augment {

std::vector<double> sample_channel_factors(int64_t channels, double lo, double hi, Rng& rng) {
  std::vector<double> f;
  for (int64_t c = 0; c < channels; ++c) f.push_back(bg_contrast(rng, lo, hi));
  return f;
}

std::vector<int64_t> chosen_channels(int64_t channels, double p, Rng& rng) {
  std::vector<int64_t> out;
  for (int64_t c = 0; c < channels; ++c)
    if (p >= 1 || rng.bernoulli(p)) out.push_back(c);
  return out;
}

ChannelValues chosen_channel_values(const std::vector<double>& per_channel, double p, Rng& rng) {
  ChannelValues v;
  for (int64_t c : chosen_channels(static_cast<int64_t>(per_channel.size()), p, rng)) {
    v.channels.push_back(c);
    v.values.push_back(per_channel[static_cast<size_t>(c)]);
  }
  return v;
}

double sample_normal(Rng& rng, double mu, double sigma) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
  const double u2 = rng.uniform();
  return mu + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace medseg::data::augment
