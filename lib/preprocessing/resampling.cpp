#include "preprocessing/resampling.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/numeric.h"
#include "preprocessing/skimage_resize.h"
#include "preprocessing/label_values.h"
#include "preprocessing/resampling_torch.h"
#include "preprocessing/zoom_linear.h"

namespace medseg::preprocessing {

namespace {

int64_t numel(const Shape3& s) { return s[0] * s[1] * s[2]; }

// Axes whose spacing equals the largest one (nnU-Net's get_lowres_axis).
std::vector<int> lowres_axes(const Spacing3& sp) {
  const double mx = *std::max_element(sp.begin(), sp.end());
  std::vector<int> axes;
  for (int a = 0; a < 3; ++a)
    if (mx / sp[a] == 1.0) axes.push_back(a);
  return axes;
}

bool anisotropic(const Spacing3& sp, double threshold) {
  const auto mm = std::minmax_element(sp.begin(), sp.end());
  return *mm.second / *mm.first > threshold;
}

// Shape after the in-plane pass: the separate axis keeps its input length.
Shape3 inplane_shape(const Shape3& in, const Shape3& out, int axis) {
  Shape3 s = out;
  s[axis] = in[axis];
  return s;
}

// nnU-Net's rounded z pass (order_z >= 1): one-hot per label (ascending), resized, above 0.5 takes the label,
// a later label winning; `resize` maps a float volume of shape `in` to `out`.
template <class Resize>
std::vector<int16_t> threshold_labels(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                      Resize&& resize) {
  std::vector<int16_t> result(static_cast<std::size_t>(numel(out)), 0);
  std::vector<float> onehot(seg.size()), resized(result.size());
  for (int16_t label : sorted_labels(seg)) {
    for (std::size_t i = 0; i < seg.size(); ++i) onehot[i] = seg[i] == label ? 1.0f : 0.0f;
    resize(onehot.data(), in, resized.data(), out);
    for (std::size_t i = 0; i < result.size(); ++i)
      if (resized[i] > 0.5f) result[i] = label;
  }
  return result;
}

// batchgenerators 0.25.5's resize_segmentation (orders >= 1; _resample_seg_by_argmax, seg_tiebreak
// 'nearest'), what nnU-Net 2.8.1 installs: each label's one-hot resized by `resize` (float64, as skimage
// scores it: ties and near ties are decided on these values), the voxel takes the label
// with the largest value (the smaller label on ties), except where the label of the nearest-neighbour resize
// (`nearest`, order 0) shares the top value: then that label. A label that takes the lead strictly decides
// afresh whether the nearest label is on top; one that draws level (with a value above 0) can only add to it.
template <class Resize, class Nearest>
std::vector<int16_t> argmax_labels(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                   Resize&& resize, Nearest&& nearest) {
  const std::vector<int16_t> labels = sorted_labels(seg);
  const auto n = static_cast<std::size_t>(numel(out));
  if (labels.size() == 1) return std::vector<int16_t>(n, labels[0]);
  std::vector<float> values(seg.begin(), seg.end()), nn(n);
  nearest(values.data(), in, nn.data(), out);  // label values: small integers, exact floats
  std::vector<double> onehot(seg.size()), score(n), best(n);
  std::vector<int16_t> win(n, 0);
  std::vector<uint8_t> nn_top(n, 0);
  for (std::size_t k = 0; k < labels.size(); ++k) {
    const int16_t label = labels[k];
    for (std::size_t i = 0; i < seg.size(); ++i) onehot[i] = seg[i] == label ? 1.0 : 0.0;
    resize(onehot.data(), in, k == 0 ? best.data() : score.data(), out);
    for (std::size_t i = 0; i < n; ++i) {
      const bool is_nn = nn[i] == static_cast<float>(label);
      if (k == 0) {
        nn_top[i] = is_nn && best[i] > 0.0;
        continue;
      }
      if (is_nn && score[i] == best[i] && score[i] > 0.0) nn_top[i] = 1;
      if (score[i] > best[i]) best[i] = score[i], win[i] = static_cast<int16_t>(k), nn_top[i] = is_nn;
    }
  }
  std::vector<int16_t> result(n);
  for (std::size_t i = 0; i < n; ++i)
    result[i] = nn_top[i] ? static_cast<int16_t>(nn[i]) : labels[static_cast<std::size_t>(win[i])];
  return result;
}

// A one-hot mask resized at `order` in float64 (whole volume, or slice by slice along `slice_axis`):
// order 1, what nnU-Net plans use for labels, in scipy's own arithmetic (zoom_linear.h); higher orders
// through ITK's splines, which agree with scipy's to a float step.
auto mask_resize(int order, int slice_axis) {
  return [order, slice_axis](const double* s, const Shape3& i, double* d, const Shape3& o) {
    if (order == 1) return zoom_linear(s, i, d, o, slice_axis);
    std::vector<float> fs(s, s + numel(i)), fd(static_cast<std::size_t>(numel(o)));
    if (slice_axis < 0)
      resize_3d(fs.data(), i, fd.data(), o, order, true);
    else
      resize_slices(fs.data(), i, slice_axis, fd.data(), o, order, true);
    std::copy(fd.begin(), fd.end(), d);
  };
}

// Label values through a nearest-neighbour resize (exact: small integers are exact floats).
template <class Resize>
std::vector<int16_t> resize_nearest_labels(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                           Resize&& resize) {
  std::vector<float> values(seg.begin(), seg.end()), resized(static_cast<std::size_t>(numel(out)));
  resize(values.data(), in, resized.data(), out);
  std::vector<int16_t> result(resized.size());
  for (std::size_t i = 0; i < resized.size(); ++i) result[i] = static_cast<int16_t>(resized[i]);
  return result;
}

}  // namespace

Shape3 compute_new_shape(const Shape3& old_shape, const Spacing3& old_spacing, const Spacing3& new_spacing) {
  Shape3 s{};
  for (int a = 0; a < 3; ++a) {
    MEDSEG_CHECK(new_spacing[a] > 0 && old_spacing[a] > 0, "compute_new_shape: spacings must be positive (axis ", a,
                 ")");
    s[a] = round_half_even_int(old_spacing[a] / new_spacing[a] * static_cast<double>(old_shape[a]));
  }
  return s;
}

SeparateZ decide_separate_z(std::optional<bool> force, const Spacing3& current, const Spacing3& target,
                            double threshold) {
  std::vector<int> axes;
  if (force.has_value()) {
    if (!*force) return {};
    axes = lowres_axes(current);
  } else if (anisotropic(current, threshold)) {
    axes = lowres_axes(current);
  } else if (anisotropic(target, threshold)) {
    axes = lowres_axes(target);
  } else {
    return {};
  }
  if (axes.size() != 1) return {};  // 2 or 3 axes share the largest spacing
  return {true, axes[0]};
}

std::vector<float> resample_data(const std::vector<float>& data, int channels, const Shape3& in, const Shape3& out,
                                 const SeparateZ& sep, const ResampleOrders& orders) {
  const int64_t n_in = numel(in), n_out = numel(out);
  MEDSEG_CHECK(static_cast<int64_t>(data.size()) == channels * n_in, "resample_data: buffer size does not match");
  if (in == out) return data;
  std::vector<float> result(static_cast<std::size_t>(channels * n_out));
  for (int c = 0; c < channels; ++c) {
    const float* src = data.data() + c * n_in;
    float* dst = result.data() + c * n_out;
    if (!sep.enabled) {
      resize_3d(src, in, dst, out, orders.order, true);
      continue;
    }
    const Shape3 mid = inplane_shape(in, out, sep.axis);
    if (mid == out) {
      resize_slices(src, in, sep.axis, dst, out, orders.order, true);
      continue;
    }
    std::vector<float> tmp(static_cast<std::size_t>(numel(mid)));
    resize_slices(src, in, sep.axis, tmp.data(), mid, orders.order, true);
    // scipy's map_coordinates does not clip.
    resize_3d(tmp.data(), mid, dst, out, orders.order_z, false);
  }
  return result;
}

std::vector<int16_t> resample_seg(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                  const SeparateZ& sep, const ResampleOrders& orders) {
  MEDSEG_CHECK(static_cast<int64_t>(seg.size()) == numel(in), "resample_seg: buffer size does not match");
  if (in == out) return seg;
  auto full = [&](int order, bool clip) {
    return [order, clip](const float* s, const Shape3& i, float* d, const Shape3& o) {
      resize_3d(s, i, d, o, order, clip);
    };
  };
  if (!sep.enabled) {
    if (orders.order == 0) return resize_nearest_labels(seg, in, out, full(0, true));
    return argmax_labels(seg, in, out, mask_resize(orders.order, -1), full(0, true));
  }
  const int axis = sep.axis, order = orders.order;
  auto slices = [axis](int o_) {
    return [axis, o_](const float* s, const Shape3& i, float* d, const Shape3& o) {
      resize_slices(s, i, axis, d, o, o_, true);
    };
  };
  const Shape3 mid = inplane_shape(in, out, axis);
  std::vector<int16_t> tmp = order == 0 ? resize_nearest_labels(seg, in, mid, slices(0))
                                        : argmax_labels(seg, in, mid, mask_resize(order, axis), slices(0));
  if (mid == out) return tmp;
  if (orders.order_z == 0) return resize_nearest_labels(tmp, mid, out, full(0, false));
  return threshold_labels(tmp, mid, out, full(orders.order_z, false));
}

SeparateZ decide_separate_z(const ResampleSpec& spec, const Spacing3& current, const Spacing3& target) {
  return decide_separate_z(spec.force_separate_z, current, target, spec.anisotropy_threshold);
}

std::vector<float> resample_data_with(const ResampleSpec& spec, const std::vector<float>& data, int channels,
                                      const Shape3& in, const Shape3& out, const SeparateZ& sep) {
  if (spec.kernel == ResampleKernel::Torch) return resample_data_torch(data, channels, in, out, sep);
  return resample_data(data, channels, in, out, sep, spec.orders);
}

std::vector<int16_t> resample_seg_with(const ResampleSpec& spec, const std::vector<int16_t>& seg, const Shape3& in,
                                       const Shape3& out, const SeparateZ& sep) {
  if (spec.kernel == ResampleKernel::Torch) return resample_seg_torch(seg, in, out, sep, spec.memefficient_seg);
  return resample_seg(seg, in, out, sep, spec.orders);
}

std::vector<int16_t> sorted_labels(const std::vector<int16_t>& seg) {
  std::vector<uint8_t> present(65536, 0);  // sorted unique labels without a per-voxel set insert
  for (int16_t v : seg) present[static_cast<std::size_t>(v + 32768)] = 1;
  std::vector<int16_t> labels;
  for (int v = -32768; v <= 32767; ++v)
    if (present[static_cast<std::size_t>(v + 32768)]) labels.push_back(static_cast<int16_t>(v));
  return labels;
}

}  // namespace medseg::preprocessing
