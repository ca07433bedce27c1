#pragma once
// BG2 GaussianBlurTransform as nnU-Net uses it (p 0.2): each channel with probability 0.5, one sigma
// U(0.5, 1) per axis (DA5: U(0.3, 1.5), one for all axes), separable Gaussian with BG2's kernel (size = nearest odd of
// 6 sigma + 0.5, taps exp(-x^2 / 2 sigma^2) normalised) and reflect padding. Axes of length 1 (2D) are skipped.
#include <ATen/core/Tensor.h>

#include <array>
#include <vector>

#include "data/augment/config.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct BlurParams {
  std::vector<int64_t> channels;
  std::vector<std::array<double, 3>> sigmas;  // per chosen channel, per axis (z, y, x)
};

BlurParams sample_blur(const AugmentConfig& cfg, int64_t channels, Rng& rng);
std::vector<float> gaussian_kernel(double sigma);
// Source index of every padded position -half .. n + half - 1 of a line of n under reflect padding
// (numpy / torch 'reflect', repeated for pads longer than the line).
std::vector<int64_t> reflected_indices(int64_t n, int64_t half);
// Blurs channel c of data (C, z, y, x) float32 in place with the given per-axis sigmas.
void blur_channel(at::Tensor& data, int64_t c, const std::array<double, 3>& sigma);
void apply_blur(at::Tensor& data, const BlurParams& p);

}  // namespace medseg::data::augment
