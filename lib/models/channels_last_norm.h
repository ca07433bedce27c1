#pragma once
// Instance norm of a channels-last 5-D tensor (N, C, D, H, W stored N, D, H, W, C), for prediction in channels-last
// (docs/predict.md, "Channels-last in bf16"). torch's batch norm has a channels-last CPU kernel, but it sums each
// channel row after row in float: over a 112 x 128 x 128 tile its statistics are off by ~1e-3 where nnU-Net's
// (contiguous) are off by ~1e-6, and a U-Net's later layers amplify that into probabilities off by 0.1. The contiguous
// route costs two copies of every activation. This one reads the tensor where it lies and sums in double over fixed
// blocks of rows (the same result for any thread count).
#include <ATen/core/Tensor.h>

namespace medseg::models {

// Whether channels_last_instance_norm takes x: CPU, float or bf16, 5-D, channels-last contiguous, and no
// gradient wanted (it has no backward: inference mode, or no input that requires grad).
bool channels_last_norm_applies(const at::Tensor& x, const at::Tensor& weight);

// (x - mean) / sqrt(var + eps) * weight + bias per sample and channel, over the spatial voxels (biased variance,
// as torch's instance norm); weight and bias may be undefined (1 and 0). The result has x's dtype and layout.
at::Tensor channels_last_instance_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                       double eps);

}  // namespace medseg::models
