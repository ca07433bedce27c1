#pragma once
// nnU-Net's resampling rules (preprocessing/resampling/default_resampling.py) on top of the ITK
// kernels in io/resample.h:
//  * new shape = round(old_spacing / new_spacing * old_shape) per axis (Python round);
//  * "separate z": when max/min spacing > 3 in the current spacing (else in the new spacing), the
//    axis holding the largest spacing is resampled apart: each slice in-plane with `order`, then
//    along that axis with `order_z` (nearest by default). Ties for the largest spacing (2 or 3
//    axes) switch it off; force_separate_z overrides the decision (axis from the current spacing);
//  * data: skimage resize with `order` (cubic), edge mode, clipped to the input's range;
//  * segmentation: each label's one-hot mask resized with `order` (linear), voxels >= 0.5 take the
//    label, labels in ascending order (later ones win), 0 where none reaches 0.5 (batchgenerators'
//    resize_segmentation). -1 (outside the nonzero mask) is a label like any other.
// Nothing happens when the shape does not change. Shapes and spacings are in array order.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/grid.h"

namespace medseg::preprocessing {

using Spacing3 = std::array<double, 3>;

constexpr double kSeparateZAnisotropy = 3.0;  // nnU-Net's ANISO_THRESHOLD

Shape3 compute_new_shape(const Shape3& old_shape, const Spacing3& old_spacing, const Spacing3& new_spacing);

struct SeparateZ {
  bool enabled = false;
  int axis = -1;  // array axis resampled apart; -1 when disabled
};

// nnU-Net's determine_do_sep_z_and_axis.
SeparateZ decide_separate_z(std::optional<bool> force_separate_z, const Spacing3& current, const Spacing3& target,
                            double threshold = kSeparateZAnisotropy);

struct ResampleOrders {
  int order = 3;    // in-plane (or everywhere without separate z)
  int order_z = 0;  // along the separate axis
};

// `data` holds `channels` arrays of shape `in`; returns `channels` arrays of shape `out`.
std::vector<float> resample_data(const std::vector<float>& data, int channels, const Shape3& in, const Shape3& out,
                                 const SeparateZ& sep, const ResampleOrders& orders);

// One label map of shape `in` -> `out`.
std::vector<int16_t> resample_seg(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                  const SeparateZ& sep, const ResampleOrders& orders);

}  // namespace medseg::preprocessing
