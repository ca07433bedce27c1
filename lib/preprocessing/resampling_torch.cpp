#include "preprocessing/resampling_torch.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/numeric.h"
#include "preprocessing/label_values.h"

// Compiled with -ffp-contract=off (lib/CMakeLists.txt): torch rounds each product and sum on its own.
namespace medseg::preprocessing {

namespace {

int64_t numel(const Shape3& s) { return s[0] * s[1] * s[2]; }

// Where each output index of one axis reads, and with which weights: torch's
// compute_source_index_and_lambda (align_corners=False, no scale factor given), in float as torch computes
// it for float tensors. An unchanged axis reads o with weights 1 and 0. torch's CPU kernels are compiled
// with floating-point contraction: the source index is one fused multiply-add (scale * (o + 0.5) - 0.5), as
// is each interpolation step below (measured against torch 2.11 on an AVX-512 Xeon: with separate
// roundings 1 value in 3 differs by one float step).
struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

LinearTaps linear_taps(int64_t in, int64_t out) {
  LinearTaps t;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      t.i0.push_back(o), t.i1.push_back(o), t.w0.push_back(1.0f), t.w1.push_back(0.0f);
      continue;
    }
    float real = std::fma(scale, static_cast<float>(o) + 0.5f, -0.5f);
    if (real < 0.0f) real = 0.0f;
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const float l1 = std::min(std::max(real - static_cast<float>(i0), 0.0f), 1.0f);
    t.i0.push_back(i0);
    t.i1.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    t.w0.push_back(1.0f - l1);
    t.w1.push_back(l1);
  }
  return t;
}

// torch's nearest_neighbor_exact_compute_source_index: floorf((o + 0.5) * scale), the product taken in
// double and rounded to float by floorf's argument.
std::vector<int64_t> nearest_exact_taps(int64_t in, int64_t out) {
  std::vector<int64_t> idx(static_cast<std::size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      idx[static_cast<std::size_t>(o)] = o;
      continue;
    }
    const auto c = static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(scale));
    idx[static_cast<std::size_t>(o)] = std::min(static_cast<int64_t>(std::floor(c)), in - 1);
  }
  return idx;
}

// The volume as (outer, axis length, inner) around `axis`; `channels` volumes of `shape` one after another.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisView axis_view(int channels, const Shape3& shape, int axis) {
  AxisView v;
  v.outer = channels;
  for (int a = 0; a < axis; ++a) v.outer *= shape[a];
  v.len = shape[axis];
  for (int a = axis + 1; a < 3; ++a) v.inner *= shape[a];
  return v;
}

// One axis of torch's linear interpolation (upsample_generic_Nd_kernel_impl): out(o) = fma(src(i0), w0,
// src(i1) * w1). Applying the innermost axis first gives torch's nested sums exactly (its outermost axis
// combines last). torch takes another kernel for bilinear outputs with height + width <= 128
// (cpu_upsample_linear_channels_last), whose rounding depends on the CPU's vector width; this one is the
// generic kernel's, which bilinear takes for larger slices and trilinear always.
std::vector<float> linear_pass(const std::vector<float>& src, int channels, Shape3& shape, int axis, int64_t out_len) {
  const AxisView v = axis_view(channels, shape, axis);
  const LinearTaps t = linear_taps(v.len, out_len);
  std::vector<float> dst(static_cast<std::size_t>(v.outer * out_len * v.inner));
  for (int64_t q = 0; q < v.outer; ++q)
    for (int64_t o = 0; o < out_len; ++o) {
      const auto so = static_cast<std::size_t>(o);
      const float* a = src.data() + (q * v.len + t.i0[so]) * v.inner;
      const float* b = src.data() + (q * v.len + t.i1[so]) * v.inner;
      float* d = dst.data() + (q * out_len + o) * v.inner;
      const float w0 = t.w0[so], w1 = t.w1[so];
      for (int64_t k = 0; k < v.inner; ++k) d[k] = std::fma(a[k], w0, b[k] * w1);
    }
  shape[axis] = out_len;
  return dst;
}

std::vector<float> nearest_pass(const std::vector<float>& src, int channels, Shape3& shape, int axis, int64_t out_len) {
  const AxisView v = axis_view(channels, shape, axis);
  const std::vector<int64_t> idx = nearest_exact_taps(v.len, out_len);
  std::vector<float> dst(static_cast<std::size_t>(v.outer * out_len * v.inner));
  for (int64_t q = 0; q < v.outer; ++q)
    for (int64_t o = 0; o < out_len; ++o) {
      const float* a = src.data() + (q * v.len + idx[static_cast<std::size_t>(o)]) * v.inner;
      std::copy(a, a + v.inner, dst.data() + (q * out_len + o) * v.inner);
    }
  shape[axis] = out_len;
  return dst;
}

// resample_torch_fornnunet on float arrays: trilinear, or (separate z) bilinear across the separate axis
// then nearest-exact along it, each step skipped when it changes no length (as resample_torch_simple).
std::vector<float> interpolate(std::vector<float> cur, int channels, const Shape3& in, const Shape3& out,
                               const SeparateZ& sep) {
  Shape3 shape = in;
  if (!sep.enabled) {
    for (int a = 2; a >= 0; --a) cur = linear_pass(cur, channels, shape, a, out[a]);
    return cur;
  }
  bool inplane_changes = false;
  for (int a = 0; a < 3; ++a) inplane_changes = inplane_changes || (a != sep.axis && in[a] != out[a]);
  if (inplane_changes)
    for (int a = 2; a >= 0; --a)
      if (a != sep.axis) cur = linear_pass(cur, channels, shape, a, out[a]);
  if (in[sep.axis] != out[sep.axis]) cur = nearest_pass(cur, channels, shape, sep.axis, out[sep.axis]);
  return cur;
}

}  // namespace

std::vector<float> resample_data_torch(const std::vector<float>& data, int channels, const Shape3& in,
                                       const Shape3& out, const SeparateZ& sep) {
  MEDSEG_CHECK(static_cast<int64_t>(data.size()) == channels * numel(in),
               "resample_data_torch: buffer size does not match");
  if (in == out) return data;
  return interpolate(data, channels, in, out, sep);
}

namespace {

// One label's mask (`one` inside, 0 outside) resampled like data.
std::vector<float> resampled_label_mask(const std::vector<int16_t>& seg, int16_t label, float one, const Shape3& in,
                                        const Shape3& out, const SeparateZ& sep) {
  std::vector<float> mask(seg.size());
  for (std::size_t i = 0; i < seg.size(); ++i) mask[i] = seg[i] == label ? one : 0.0f;
  return interpolate(std::move(mask), 1, in, out, sep);
}

// nnU-Net's memory-efficient rule: labels in ascending order, each voxel whose resampled mask exceeds 0.5 takes
// the label (a later label overwrites an earlier one).
std::vector<int16_t> torch_seg_by_threshold(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                            const SeparateZ& sep) {
  std::vector<int16_t> result(static_cast<std::size_t>(numel(out)), 0);
  for (int16_t label : sorted_labels(seg)) {
    const std::vector<float> r = resampled_label_mask(seg, label, 1.0f, in, out, sep);
    for (std::size_t i = 0; i < result.size(); ++i)
      if (r[i] > 0.5f) result[i] = label;
  }
  return result;
}

// nnU-Net's default rule, masks of 1000 in fp16: a voxel above 700 takes the label (the last such label wins),
// every other voxel the argmax over labels, kept as a running maximum (strictly greater: the first label wins ties).
std::vector<int16_t> torch_seg_by_argmax(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                         const SeparateZ& sep) {
  const auto n = static_cast<std::size_t>(numel(out));
  std::vector<int16_t> result(n, 0);
  std::vector<float> best(n, -std::numeric_limits<float>::infinity());
  std::vector<int16_t> best_label(n, 0);
  std::vector<uint8_t> done(n, 0);
  for (int16_t label : sorted_labels(seg)) {
    const std::vector<float> r = resampled_label_mask(seg, label, 1000.0f, in, out, sep);
    for (std::size_t i = 0; i < n; ++i) {
      const float h = round_to_half(r[i]);
      if (h > 700.0f) result[i] = label, done[i] = 1;
      if (h > best[i]) best[i] = h, best_label[i] = label;
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!done[i]) result[i] = best_label[i];
  return result;
}

}  // namespace

std::vector<int16_t> resample_seg_torch(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                        const SeparateZ& sep, bool memefficient) {
  MEDSEG_CHECK(static_cast<int64_t>(seg.size()) == numel(in), "resample_seg_torch: buffer size does not match");
  if (in == out) return seg;
  return memefficient ? torch_seg_by_threshold(seg, in, out, sep) : torch_seg_by_argmax(seg, in, out, sep);
}

}  // namespace medseg::preprocessing
