#pragma once
// nnU-Net's intensity normalization schemes (preprocessing/normalization/
// default_normalization_schemes.py), applied per channel after cropping and before resampling.
// Arithmetic is float32 like nnU-Net's, the z-score statistics too: numpy's float32 pairwise sums in
// numpy's order (normalization.cpp), so the normalized values are nnU-Net's bit for bit.
//  * CTNormalization: clip to [percentile_00_5, percentile_99_5] of the dataset's foreground, then
//    (x - mean) / max(std, 1e-8) with the dataset's foreground mean/std (fingerprint -> plans).
//  * ZScoreNormalization: (x - mean) / max(std, 1e-8) with the image's own mean/std (population
//    std). With use_mask_for_norm the statistics come from voxels with seg >= 0 and only those are
//    changed; the others keep their value, which is 0 after crop-to-nonzero (nnU-Net relies on that).
//  * NoNormalization: unchanged. RescaleTo01Normalization: (x - min) / max(max - min, 1e-8).
//  * RGBTo01Normalization: x / 255, values must lie in [0, 255].
#include <cstdint>
#include <string>

#include <array>

#include "core/grid.h"
#include "core/json_io.h"
#include "plans/normalization_names.h"

namespace medseg::preprocessing {

using NormScheme = planning::NormalizationScheme;

// nnU-Net's class names (plans/normalization_names.h). Throws Error listing the known names.
NormScheme parse_norm_scheme(const std::string& class_name);
const char* norm_scheme_name(NormScheme s);

struct IntensityProps {
  double mean = 0, std = 1, percentile_00_5 = 0, percentile_99_5 = 0;
};

// Channel `channel` of plans["foreground_intensity_properties_per_channel"] (keys "0", "1", ...).
// Throws FileError naming `source` when the channel or a key is missing.
IntensityProps intensity_props_from_json(const json& per_channel, int channel, const std::string& source);

// Where a channel's voxels lay in nnU-Net's memory: its transposed, cropped shape (the data's), the
// transposed shape before cropping, and the transpose. nnU-Net's transpose and crop are numpy views,
// and numpy sums a view in memory order with a buffering that follows the layout (ZScore without mask).
struct ChannelLayout {
  Shape3 cropped{}, before_cropping{};
  std::array<int, 3> transpose_forward{0, 1, 2};
};

// Normalizes `n` voxels in place. `seg` (same length; -1 outside the nonzero mask) is read only by
// ZScore with use_mask; `props` only by CT (required then). Throws Error for RGB values outside
// [0, 255] and for CT without properties.
// `layout` (ZScore without mask): null treats the data as one contiguous array.
void normalize_channel(float* x, int64_t n, NormScheme scheme, bool use_mask, const int16_t* seg,
                       const IntensityProps* props, const ChannelLayout* layout = nullptr);

}  // namespace medseg::preprocessing
