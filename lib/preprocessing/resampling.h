#pragma once
// nnU-Net's resampling rules (preprocessing/resampling/default_resampling.py) on top of the ITK
// kernels in preprocessing/skimage_resize.h:
//  * new shape = round(old_spacing / new_spacing * old_shape) per axis (Python round);
//  * "separate z": when max/min spacing > 3 in the current spacing (else in the new spacing), the
//    axis holding the largest spacing is resampled apart: each slice in-plane with `order`, then
//    along that axis with `order_z` (nearest by default). Ties for the largest spacing (2 or 3
//    axes) switch it off; force_separate_z overrides the decision (axis from the current spacing);
//  * data: skimage resize with `order` (cubic), edge mode, clipped to the input's range;
//  * segmentation: each label's one-hot mask resized with `order` (linear); the voxel takes the label with
//    the largest value, the nearest-neighbour label where it shares the top value, else the smaller label
//    (batchgenerators 0.25.5's resize_segmentation, which nnU-Net 2.8.1 installs; older releases painted
//    every label reaching 0.5 in ascending order). Along a separate axis with order_z >= 1, nnU-Net's own
//    rounded pass: above 0.5 takes the label, later ones winning. -1 (outside the nonzero mask) is a
//    label like any other.
// Nothing happens when the shape does not change. Shapes and spacings are in array order.
// nnU-Net 2.8.1's other function, resample_torch_fornnunet (the *_torchres planners), is in
// resampling_torch.h; ResampleSpec says which of the two a plans file names, and the dispatchers at the
// end of this header call it.
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

// Which of nnU-Net's resampling functions a configuration names.
enum class ResampleKernel {
  Skimage,  // resample_data_or_seg_to_shape (and _to_spacing): skimage/scipy splines of `orders`
  Torch,    // resample_torch_fornnunet: torch's linear interpolation (resampling_torch.h)
};

// One resampling function of a configuration with its keyword arguments, checked.
struct ResampleSpec {
  ResampleOrders orders;                 // Skimage only
  std::optional<bool> force_separate_z;  // null: decided from the spacings
  ResampleKernel kernel = ResampleKernel::Skimage;
  double anisotropy_threshold = kSeparateZAnisotropy;  // separate_z_anisotropy_threshold
  bool memefficient_seg = false;                       // Torch: memefficient_seg_resampling
};

// decide_separate_z with the spec's override and threshold.
SeparateZ decide_separate_z(const ResampleSpec& spec, const Spacing3& current, const Spacing3& target);

// `data` holds `channels` arrays of shape `in`; returns `channels` arrays of shape `out`.
std::vector<float> resample_data(const std::vector<float>& data, int channels, const Shape3& in, const Shape3& out,
                                 const SeparateZ& sep, const ResampleOrders& orders);

// One label map of shape `in` -> `out`.
std::vector<int16_t> resample_seg(const std::vector<int16_t>& seg, const Shape3& in, const Shape3& out,
                                  const SeparateZ& sep, const ResampleOrders& orders);

// The spec's function: resample_data / resample_seg above, or their torch counterparts.
std::vector<float> resample_data_with(const ResampleSpec& spec, const std::vector<float>& data, int channels,
                                      const Shape3& in, const Shape3& out, const SeparateZ& sep);
std::vector<int16_t> resample_seg_with(const ResampleSpec& spec, const std::vector<int16_t>& seg, const Shape3& in,
                                       const Shape3& out, const SeparateZ& sep);

}  // namespace medseg::preprocessing
