#pragma once
// BG2's local transforms as DA5 uses them (after mirroring, each p 0.3, each channel with p 0.5 and
// its own kernel): a separable Gaussian bump over the patch, per axis of edge S centred at
// U(-0.5, 1.5) * S with sigma exp(U(log(max(1, S // 6)), log(S))) (nnU-Net's DA5 scale; the max
// keeps a 2D patch's z of 1 defined), integrated over each voxel (normal CDF differences), the
// product over the axes shifted to [0, 1] (LocalTransform._generate_kernel).
//  * BrightnessGradientAdditiveTransform: x += kernel * strength, strength U(-5, -1) or U(1, 5).
//  * LocalGammaTransform: with the channel scaled to [0, 1] (n = (x - min) / max(max - min, 1e-8)),
//    x = (n (1 - kernel) + n^gamma kernel) (max - min) + min, gamma U(0.01, 0.8) or U(1.5, 4).
// Torch ops: either device.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/grid.h"
#include "data/augment/config.h"
#include "data/rng.h"

namespace medseg::data::augment {

struct LocalKernel {
  int64_t channel = 0;
  std::array<double, 3> centre{}, sigma{1, 1, 1};  // voxels, per axis (z, y, x)
  double value = 0;                                // the strength (gradient) or gamma (local gamma)
};

// Chosen channels, each with its kernel and value; `gamma` picks the local gamma's value range.
std::vector<LocalKernel> sample_local_kernels(const AugmentConfig& cfg, int64_t channels, bool gamma, Rng& rng);

// Centres mirrored along `axes` of `patch`: the bump of the flipped image (the kernel is symmetric).
void reflect_kernels(std::vector<LocalKernel>& kernels, const std::vector<int64_t>& axes, const Shape3& patch);

// The [0, 1] kernel over `shape`, float32 on `device`; all zeros when it underflows everywhere.
at::Tensor local_kernel(const LocalKernel& k, const Shape3& shape, const at::Device& device);

// data (C, z, y, x), in place.
void apply_brightness_gradient(at::Tensor& data, const std::vector<LocalKernel>& kernels);
void apply_local_gamma(at::Tensor& data, const std::vector<LocalKernel>& kernels);

}  // namespace medseg::data::augment
