#include "models/channels_last_norm.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace medseg::models {
namespace {

// Rows (voxels) per block: each block's sums are its own, added up in block order afterwards, so the result
// does not depend on how the blocks were shared among threads.
constexpr int64_t kRowsPerBlock = 2048;

// Rows summed in float before their sum goes into the block's double one: short enough that float loses nothing
// that matters (at most 64 additions), long enough that the double additions cost little.
constexpr int64_t kRowsInFloat = 64;

// Per block and channel: the sum of f(x - shift) over the block's rows, in double, f applied in float.
template <typename T, typename F>
std::vector<double> block_sums(const T* x, int64_t rows, int64_t channels, const std::vector<float>& shift, F f) {
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<double> sums(static_cast<size_t>(blocks * channels), 0.0);
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> part(static_cast<size_t>(channels));
    for (int64_t k = begin; k < end; ++k) {
      double* s = sums.data() + k * channels;
      const int64_t last = std::min(rows, (k + 1) * kRowsPerBlock);
      for (int64_t r0 = k * kRowsPerBlock; r0 < last; r0 += kRowsInFloat) {
        std::fill(part.begin(), part.end(), 0.0f);
        float* p = part.data();
        const float* m = shift.data();
        for (int64_t r = r0; r < std::min(last, r0 + kRowsInFloat); ++r) {
          const T* row = x + r * channels;
          for (int64_t c = 0; c < channels; ++c) p[c] += f(static_cast<float>(row[c]) - m[c]);
        }
        for (int64_t c = 0; c < channels; ++c) s[c] += static_cast<double>(p[c]);
      }
    }
  });
  return sums;
}

// Adds the blocks' sums up, in block order.
std::vector<double> total(const std::vector<double>& sums, int64_t channels) {
  std::vector<double> t(static_cast<size_t>(channels), 0.0);
  for (size_t i = 0; i < sums.size(); ++i) t[i % static_cast<size_t>(channels)] += sums[i];
  return t;
}

// One sample: rows x channels values at x, normalised into y.
template <typename T>
void normalize_sample(const T* x, T* y, int64_t rows, int64_t channels, const float* w, const float* b, double eps) {
  const auto n = static_cast<double>(rows);
  const auto C = static_cast<size_t>(channels);
  // Sums of deviations from a pilot value (the first voxel's), so that float adds small numbers: a channel at
  // 100 with a spread of 0.1 keeps its digits.
  std::vector<float> pilot(C);
  for (size_t c = 0; c < C; ++c) pilot[c] = static_cast<float>(x[c]);
  std::vector<double> mean = total(block_sums(x, rows, channels, pilot, [](float d) { return d; }), channels);
  std::vector<float> meanf(C);
  for (size_t c = 0; c < C; ++c) {
    mean[c] = pilot[c] + mean[c] / n;
    meanf[c] = static_cast<float>(mean[c]);
  }
  // Two passes: the squares of the deviations (from the float mean, corrected for its rounding), not
  // E[x^2] - E[x]^2, which loses the variance of a channel whose mean is large against its spread.
  const std::vector<double> sq = total(block_sums(x, rows, channels, meanf, [](float d) { return d * d; }), channels);
  std::vector<float> scale(C), shift(C);
  for (size_t c = 0; c < C; ++c) {
    const double off = mean[c] - meanf[c];
    const double s = 1.0 / std::sqrt(std::max(0.0, sq[c] / n - off * off) + eps) * (w ? w[c] : 1.0f);
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>((b ? b[c] : 0.0f) - off * s);
  }
  // (x - mean) * scale + bias, as torch's kernel: x * scale + (bias - mean * scale) would cancel in float where
  // the mean is large against the spread.
  at::parallel_for(0, rows, kRowsPerBlock, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* in = x + r * channels;
      T* out = y + r * channels;
      for (int64_t c = 0; c < channels; ++c)
        out[c] =
            static_cast<T>((static_cast<float>(in[c]) - meanf[static_cast<size_t>(c)]) * scale[static_cast<size_t>(c)] +
                           shift[static_cast<size_t>(c)]);
    }
  });
}

template <typename T>
void normalize(const at::Tensor& x, at::Tensor& y, const at::Tensor& w, const at::Tensor& b, double eps) {
  if (x.numel() == 0) return;
  const int64_t samples = x.size(0), channels = x.size(1), rows = x.numel() / (samples * channels);
  const T* in = x.data_ptr<T>();
  T* out = y.data_ptr<T>();
  for (int64_t s = 0; s < samples; ++s) {
    normalize_sample(in + s * rows * channels, out + s * rows * channels, rows, channels,
                     w.defined() ? w.data_ptr<float>() : nullptr, b.defined() ? b.data_ptr<float>() : nullptr, eps);
  }
}

}  // namespace

bool channels_last_norm_applies(const at::Tensor& x, const at::Tensor& weight) {
  if (!x.defined() || x.dim() != 5 || !x.device().is_cpu()) return false;
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16) return false;
  if (!x.is_contiguous(at::MemoryFormat::ChannelsLast3d) || x.is_contiguous()) return false;
  const bool grad = !c10::InferenceMode::is_enabled() && c10::GradMode::is_enabled() &&
                    (x.requires_grad() || (weight.defined() && weight.requires_grad()));
  return !grad;
}

at::Tensor channels_last_instance_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                       double eps) {
  const at::Tensor w = weight.defined() ? weight.detach().to(at::kFloat).contiguous() : at::Tensor();
  const at::Tensor b = bias.defined() ? bias.detach().to(at::kFloat).contiguous() : at::Tensor();
  at::Tensor y = at::empty_like(x, at::MemoryFormat::ChannelsLast3d);
  if (x.scalar_type() == at::kBFloat16) {
    normalize<c10::BFloat16>(x, y, w, b, eps);
  } else {
    normalize<float>(x, y, w, b, eps);
  }
  return y;
}

}  // namespace medseg::models
