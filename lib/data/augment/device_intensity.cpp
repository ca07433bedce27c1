// Noise ... gamma on the collated batch (B, C, z, y, x). Per-sample parameters become per-row
// tensors over the (B * C) channel rows, so brightness, contrast, gamma and blur each run as a few
// batched ops; low resolution changes shapes per channel and loops. Statistics are reductions in
// double (the CPU path sums serially in double), and every operation follows the CPU path's
// order, so on CPU tensors the results differ from it by rounding only (docs/gpu_augmentation.md).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/upsampling.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

#include "core/numeric.h"
#include "data/augment/device_ops.h"
#include "data/augment/blank_rectangle.h"
#include "data/augment/brightness.h"
#include "data/augment/gamma.h"
#include "data/augment/gaussian_blur.h"
#include "data/augment/local_gaussian.h"
#include "data/augment/median_filter.h"
#include "data/augment/resize.h"
#include "data/augment/sharpen.h"

namespace medseg::data::augment::device {

namespace {

// Rows (b * C + c) of the samples whose record has `factors` set, with the factor per row.
struct Rows {
  std::vector<int64_t> rows;
  std::vector<float> factors;
  bool empty() const { return rows.empty(); }
};

// `channels`: the channel of each factor (contrast); null: factor c is channel c. `keep`: the samples taken
// (null: all).
Rows rows_with(const std::vector<SampleDraw>& draws, int64_t C, std::vector<double> IntensityParams::*factors,
               std::vector<int64_t> IntensityParams::*channels = nullptr,
               const std::function<bool(const IntensityParams&)>& keep = nullptr) {
  Rows r;
  for (size_t b = 0; b < draws.size(); ++b) {
    if (keep && !keep(draws[b].intensity)) continue;
    const std::vector<double>& f = draws[b].intensity.*factors;
    for (size_t c = 0; c < f.size(); ++c) {
      const int64_t ch = channels ? (draws[b].intensity.*channels)[c] : static_cast<int64_t>(c);
      r.rows.push_back(static_cast<int64_t>(b) * C + ch);
      r.factors.push_back(static_cast<float>(f[c]));  // the CPU path's ops take the double as float
    }
  }
  return r;
}

at::Tensor host_longs(const std::vector<int64_t>& v, const at::Device& dev) { return at::tensor(v, at::kLong).to(dev); }
// (R, 1) float column of per-row values.
at::Tensor column(const std::vector<float>& v, const at::Device& dev) {
  return at::tensor(v, at::kFloat).view({-1, 1}).to(dev);
}

// The noise voxels' generator: seeded from the sample, private to the call. On CPU it is the
// generator the CPU path uses, so CPU tensors get the CPU path's noise; on CUDA a clone of the
// device's default generator reseeded (a different stream, same distribution).
at::Generator noise_generator(const at::Device& dev, uint64_t seed) {
  if (dev.is_cpu()) return at::detail::createCPUGenerator(seed);
  at::Generator def = at::globalContext().defaultGenerator(dev);
  at::Generator g;
  {
    std::lock_guard<std::mutex> lock(def.mutex());
    g = def.clone();
  }
  g.set_current_seed(seed);
  return g;
}

void noise(at::Tensor& x, const std::vector<SampleDraw>& draws) {
  for (size_t b = 0; b < draws.size(); ++b) {
    const IntensityParams& p = draws[b].intensity;
    if (!p.noise || p.noise_std <= 0) continue;
    at::Generator gen = noise_generator(x.device(), draws[b].noise_seed);
    at::Tensor xb = x[static_cast<int64_t>(b)];
    xb.add_(at::empty_like(xb).normal_(0.0, p.noise_std, gen));
  }
}

// One axis of the separable blur for all blurred rows at once: a grouped convolution whose
// kernels are BG2's, zero-padded to the longest (zero taps add exact zeros).
at::Tensor blur_axis(const at::Tensor& rows, int axis, const std::vector<double>& sigmas) {
  std::vector<std::vector<float>> k;
  size_t K = 0;
  for (double s : sigmas) {
    k.push_back(gaussian_kernel(s));
    K = std::max(K, k.back().size());
  }
  const int64_t R = rows.size(0), half = static_cast<int64_t>(K / 2), n = rows.size(1 + axis);
  std::vector<float> w(static_cast<size_t>(R) * K, 0.f);
  for (size_t r = 0; r < k.size(); ++r)
    std::copy(k[r].begin(), k[r].end(), w.begin() + static_cast<int64_t>(r * K + (K - k[r].size()) / 2));
  const at::Tensor padded = rows.index_select(1 + axis, host_longs(reflected_indices(n, half), rows.device()));
  std::vector<int64_t> wshape{R, 1, 1, 1, 1};
  wshape[static_cast<size_t>(2 + axis)] = static_cast<int64_t>(K);
  const at::Tensor weight = at::tensor(w, at::kFloat).view(wshape).to(rows.device());
  const std::vector<int64_t> ones{1, 1, 1}, zeros{0, 0, 0};  // the padding was done above
  return at::conv3d(padded.unsqueeze(0), weight, {}, ones, zeros, ones, R)[0];
}

void blur(at::Tensor& x, const std::vector<SampleDraw>& draws) {
  const int64_t C = x.size(1);
  std::vector<int64_t> rows;
  std::vector<std::array<double, 3>> sigmas;
  for (size_t b = 0; b < draws.size(); ++b) {
    const BlurParams& p = draws[b].intensity.blur;
    for (size_t i = 0; i < p.channels.size(); ++i) {
      rows.push_back(static_cast<int64_t>(b) * C + p.channels[i]);
      sigmas.push_back(p.sigmas[i]);
    }
  }
  if (rows.empty()) return;
  at::Tensor flat = x.view({-1, x.size(2), x.size(3), x.size(4)});
  const at::Tensor index = host_longs(rows, x.device());
  at::Tensor r = flat.index_select(0, index);
  for (int axis = 0; axis < 3; ++axis) {
    if (r.size(1 + axis) <= 1) continue;  // 2D: z is not blurred
    std::vector<double> s;
    for (const auto& sg : sigmas) s.push_back(sg[static_cast<size_t>(axis)]);
    r = blur_axis(r, axis, s);
  }
  flat.index_copy_(0, index, r);
}

void brightness(at::Tensor& x, const std::vector<SampleDraw>& draws) {
  const Rows r = rows_with(draws, x.size(1), &IntensityParams::brightness);
  if (r.empty()) return;
  at::Tensor flat = x.view({x.size(0) * x.size(1), -1});
  const at::Tensor index = host_longs(r.rows, x.device());
  flat.index_copy_(0, index, flat.index_select(0, index).mul_(column(r.factors, x.device())));
}

// Per-row mean (double, as float) and float min / max, as stats.h gives them.
struct RowStats {
  at::Tensor mean64, min, max;
};
RowStats row_stats(const at::Tensor& rows) {
  return {rows.to(at::kDouble).mean(1, true), std::get<0>(rows.min(1, true)), std::get<0>(rows.max(1, true))};
}

// One preserve_range setting per call: DA5 draws it per sample, so the rows are split by it.
void contrast(at::Tensor& x, const std::vector<SampleDraw>& draws, bool preserve_range) {
  const Rows r = rows_with(draws, x.size(1), &IntensityParams::contrast, &IntensityParams::contrast_channels,
                           [&](const IntensityParams& p) { return p.contrast_preserve_range == preserve_range; });
  if (r.empty()) return;
  at::Tensor flat = x.view({x.size(0) * x.size(1), -1});
  const at::Tensor index = host_longs(r.rows, x.device());
  at::Tensor v = flat.index_select(0, index);
  const RowStats st = row_stats(v);
  const at::Tensor mean = st.mean64.to(at::kFloat);
  v = (v - mean) * column(r.factors, x.device()) + mean;
  flat.index_copy_(0, index, preserve_range ? at::minimum(at::maximum(v, st.min), st.max) : v);
}

// gamma.h: [x = -x]; x = ((x - lo) / max(r, eps))^g * r + lo; mean and unbiased std restored; [x = -x].
// `inverted_step`: the GammaInverted step; otherwise the Gamma step, which inverts as its record says.
void gamma(at::Tensor& x, const std::vector<SampleDraw>& draws, bool inverted_step) {
  const bool invert = inverted_step || (!draws.empty() && draws.front().intensity.gamma_invert);
  const Rows r =
      rows_with(draws, x.size(1), inverted_step ? &IntensityParams::gamma_inverted : &IntensityParams::gamma);
  if (r.empty()) return;
  at::Tensor flat = x.view({x.size(0) * x.size(1), -1});
  const at::Tensor index = host_longs(r.rows, x.device());
  at::Tensor v = flat.index_select(0, index);
  if (invert) v = -v;
  const RowStats before = row_stats(v);
  const at::Tensor std_before = v.to(at::kDouble).std(1, /*unbiased=*/true, /*keepdim=*/true);
  const at::Tensor range = before.max.to(at::kDouble) - before.min.to(at::kDouble);
  v = ((v - before.min) / range.clamp_min(kGammaFlatEps).to(at::kFloat)).pow(column(r.factors, x.device()));
  v = v * range.to(at::kFloat) + before.min;
  const at::Tensor v64 = v.to(at::kDouble);
  const at::Tensor scale = (std_before / v64.std(1, true, true).clamp_min(kGammaFlatEps)).to(at::kFloat);
  v = (v - v64.mean(1, true).to(at::kFloat)) * scale + before.mean64.to(at::kFloat);
  if (invert) v = -v;
  flat.index_copy_(0, index, v);
}

// Shapes differ per channel: one channel at a time, with the CPU path's resizes.
void low_resolution(at::Tensor& x, const std::vector<SampleDraw>& draws) {
  namespace F = torch::nn::functional;
  const std::vector<int64_t> orig{x.size(2), x.size(3), x.size(4)};
  for (size_t b = 0; b < draws.size(); ++b) {
    const LowResParams& p = draws[b].intensity.lowres;
    for (size_t i = 0; i < p.channels.size(); ++i) {
      std::vector<int64_t> small;
      for (int d = 0; d < 3; ++d)
        small.push_back(round_half_even_int(static_cast<double>(orig[static_cast<size_t>(d)]) *
                                            p.zooms[i][static_cast<size_t>(d)]));
      at::Tensor ch = x[static_cast<int64_t>(b)][p.channels[i]];
      const at::Tensor down = resize_nearest_exact(ch.unsqueeze(0).unsqueeze(0), small);
      ch.copy_(F::interpolate(
          down, F::InterpolateFuncOptions().size(orig).mode(torch::kTrilinear).align_corners(false))[0][0]);
    }
  }
}

// DA5's steps, per sample with the CPU path's functions (torch ops, so on the batch's device).
void per_sample(at::Tensor& x, const std::vector<SampleDraw>& draws, IntensityStep step) {
  for (size_t b = 0; b < draws.size(); ++b) {
    const IntensityParams& p = draws[b].intensity;
    at::Tensor xb = x[static_cast<int64_t>(b)];
    switch (step) {
      case IntensityStep::AdditiveBrightness: apply_additive_brightness(xb, p.additive_brightness); break;
      case IntensityStep::Smoothing: apply_median(xb, p.median); break;  // its blur is batched (blur())
      case IntensityStep::BlankRectangles: apply_blank_rectangles(xb, p.blank_rectangles); break;
      case IntensityStep::BrightnessGradient: apply_brightness_gradient(xb, p.brightness_gradient); break;
      case IntensityStep::LocalGamma: apply_local_gamma(xb, p.local_gamma); break;
      case IntensityStep::Sharpening: apply_sharpening(xb, p.sharpening); break;
      default: break;
    }
  }
}

}  // namespace

void intensities(at::Tensor& x, const std::vector<SampleDraw>& draws) {
  if (draws.empty()) return;
  for (const IntensityStep step : draws.front().intensity.order) {  // one config per batch: one order
    switch (step) {
      case IntensityStep::Noise: noise(x, draws); break;
      case IntensityStep::Blur: blur(x, draws); break;
      case IntensityStep::Smoothing:
        per_sample(x, draws, step);
        blur(x, draws);
        break;
      case IntensityStep::Brightness: brightness(x, draws); break;
      case IntensityStep::Contrast:
        contrast(x, draws, true);
        contrast(x, draws, false);
        break;
      case IntensityStep::LowResolution: low_resolution(x, draws); break;
      case IntensityStep::GammaInverted: gamma(x, draws, /*invert=*/true); break;
      case IntensityStep::Gamma: gamma(x, draws, /*invert=*/false); break;
      case IntensityStep::Mirror: break;  // finish() flips
      default: per_sample(x, draws, step); break;
    }
  }
}

}  // namespace medseg::data::augment::device
