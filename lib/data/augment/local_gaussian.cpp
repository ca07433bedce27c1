#include "data/augment/local_gaussian.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "data/augment/intensity.h"

namespace medseg::data::augment {

namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Voxel i's share of N(centre, sigma): CDF(i + 0.5) - CDF(i - 0.5), in double, stored as float (BG2's
// np.diff(st.norm.cdf(...)).astype(float32)).
at::Tensor axis_profile(int64_t n, double centre, double sigma) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    v.push_back(static_cast<float>(normal_cdf((x + 0.5 - centre) / sigma) - normal_cdf((x - 0.5 - centre) / sigma)));
  }
  return at::tensor(v, at::kFloat);
}

}  // namespace

std::vector<LocalKernel> sample_local_kernels(const AugmentConfig& cfg, int64_t channels, bool gamma, Rng& rng) {
  const double p = gamma ? cfg.local_gamma_p_channel : cfg.gradient_p_channel;
  std::vector<LocalKernel> out;
  for (int64_t c : chosen_channels(channels, p, rng)) {
    LocalKernel k;
    k.channel = c;
    for (int d = 0; d < 3; ++d) {
      const auto S = static_cast<double>(cfg.patch[d]);
      k.centre[d] = rng.uniform(-0.5, 1.5) * S;
      k.sigma[d] = std::exp(rng.uniform(std::log(std::max<double>(1, std::floor(S / 6))), std::log(S)));
    }
    const bool low = rng.bernoulli(0.5);
    if (gamma)
      k.value = low ? rng.uniform(0.01, 0.8) : rng.uniform(1.5, 4.0);
    else
      k.value = low ? rng.uniform(-5.0, -1.0) : rng.uniform(1.0, 5.0);
    out.push_back(k);
  }
  return out;
}

void reflect_kernels(std::vector<LocalKernel>& kernels, const std::vector<int64_t>& axes, const Shape3& patch) {
  for (LocalKernel& k : kernels)
    for (int64_t a : axes) k.centre[a] = static_cast<double>(patch[a] - 1) - k.centre[a];
}

at::Tensor local_kernel(const LocalKernel& k, const Shape3& shape, const at::Device& device) {
  const at::Tensor z = axis_profile(shape[0], k.centre[0], k.sigma[0]).view({-1, 1, 1});
  const at::Tensor y = axis_profile(shape[1], k.centre[1], k.sigma[1]).view({1, -1, 1});
  const at::Tensor x = axis_profile(shape[2], k.centre[2], k.sigma[2]).view({1, 1, -1});
  at::Tensor kernel = (z * y * x).to(device);
  kernel.sub_(kernel.min());
  const at::Tensor mx = kernel.max();
  return at::where(mx > 0, kernel / mx, kernel);  // no host round trip: the kernel may live on a GPU
}

void apply_brightness_gradient(at::Tensor& data, const std::vector<LocalKernel>& kernels) {
  const Shape3 shape{data.size(1), data.size(2), data.size(3)};
  for (const LocalKernel& k : kernels) {
    // An all-zero kernel (BG2 skips it) adds zeros.
    const at::Tensor kernel = local_kernel(k, shape, data.device());
    data[k.channel].add_(kernel * static_cast<double>(static_cast<float>(k.value)));
  }
}

void apply_local_gamma(at::Tensor& data, const std::vector<LocalKernel>& kernels) {
  const Shape3 shape{data.size(1), data.size(2), data.size(3)};
  for (const LocalKernel& k : kernels) {
    at::Tensor x = data[k.channel];
    const at::Tensor kernel = local_kernel(k, shape, data.device());
    const at::Tensor mn = x.min(), range = (x.max() - mn).clamp_min(1e-8);
    const at::Tensor norm = (x - mn) / range;
    const at::Tensor blended = norm.pow(k.value).mul_(kernel).add_((1 - kernel).mul_(norm));
    x.copy_(blended.mul_(range).add_(mn));
  }
}

}  // namespace medseg::data::augment
