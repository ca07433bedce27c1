#pragma once
// The sliding window of nnU-Net 2.8.1's predictor written out in torch ops (the tests' oracle for
// medseg's fp16 accumulation, on the CPU and on CUDA).
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "inference/sliding_window.h"

namespace medseg::test {

// nnU-Net 2.8.1's nnUNetPredictor._internal_predict_sliding_window_return_logits and
// _internal_maybe_mirror_and_predict, written out with torch's ops as nnU-Net does them: the fp16
// gaussian (closed form, sigma = patch / 8, divided by max / 10 in double, cast to fp16, zeros raised to
// the smallest nonzero value), fp16 accumulators, one tile at a time in nnU-Net's slicer order (first
// axis outermost), the copies of itertools.combinations order summed and divided by their count.
// On image's device; returns float32 logits there.
inline at::Tensor nnunet_reference(const std::function<at::Tensor(const at::Tensor&)>& net, const at::Tensor& image,
                                   int64_t K, const std::vector<int64_t>& patch, const std::vector<int64_t>& mirror) {
  const auto on = image.options();
  at::Tensor g = torch::ones({1}, on.dtype(torch::kDouble));
  for (int64_t n : patch) {
    const double sigma = static_cast<double>(n) / 8.0;
    const at::Tensor d = torch::arange(n, on.dtype(torch::kDouble)) - static_cast<double>(n / 2);
    g = g.unsqueeze(-1) * torch::exp(-d * d / (2 * sigma * sigma));
  }
  g = g.reshape(patch);
  g = (g / (g.max() / 10.0)).to(torch::kHalf);
  g = torch::where(g == 0, g.masked_select(g != 0).min(), g);
  const std::vector<int64_t> size(image.sizes().begin() + 1, image.sizes().end());
  const auto steps = inference::compute_steps(size, patch, 0.5);
  std::vector<int64_t> out_shape{K};
  out_shape.insert(out_shape.end(), size.begin(), size.end());
  at::Tensor logits = torch::zeros(out_shape, on.dtype(torch::kHalf)),
             weights = torch::zeros(size, on.dtype(torch::kHalf));
  std::vector<std::vector<int64_t>> combos;  // itertools.combinations(axes, 1), then (axes, 2), ...
  for (size_t i = 0; i < mirror.size(); ++i) combos.push_back({mirror[i] + 2});
  for (size_t i = 0; i < mirror.size(); ++i)
    for (size_t j = i + 1; j < mirror.size(); ++j) combos.push_back({mirror[i] + 2, mirror[j] + 2});
  if (mirror.size() == 3) combos.push_back({mirror[0] + 2, mirror[1] + 2, mirror[2] + 2});
  for (int64_t sx : steps[0])
    for (int64_t sy : steps[1])
      for (int64_t sz : steps[2]) {
        using torch::indexing::Slice;
        const auto sl = std::vector<at::indexing::TensorIndex>{Slice(), Slice(sx, sx + patch[0]),
                                                               Slice(sy, sy + patch[1]), Slice(sz, sz + patch[2])};
        const at::Tensor x = image.index(sl).unsqueeze(0);
        at::Tensor p = net(x);
        for (const auto& axes : combos) p += torch::flip(net(torch::flip(x, axes)), axes);
        if (!combos.empty()) p /= static_cast<double>(combos.size() + 1);
        p = p[0];
        p *= g;
        logits.index(sl) += p;
        weights.index({Slice(sx, sx + patch[0]), Slice(sy, sy + patch[1]), Slice(sz, sz + patch[2])}) += g;
      }
  return torch::div(logits, weights).to(torch::kFloat);
}

}  // namespace medseg::test
