#include "preprocessing/normalization.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/numeric.h"
#include "preprocessing/transpose.h"

namespace medseg::preprocessing {

namespace {

constexpr double kMinStd = 1e-8;

// nnU-Net's ZScoreNormalization in numpy's float32 arithmetic, step for step: mean = float32(sum / n)
// with the float32 pairwise sum (np.float32.mean), std = sqrt(float32 pairwise sum of the float32
// squared deviations / n) (np.std), then (x - mean) / max(std, 1e-8) in float32. A double-precision
// mean would be closer to the truth but differ from nnU-Net's in the last bit, and every voxel with it.
struct Moments {
  float mean = 0, std = 0;
};

// np.add.reduce over a view of `box` (extents in memory axis order, the values in memory order) cut from
// a C-contiguous array of `parent`: axes that are contiguous in memory coalesce; one contiguous run is
// summed pairwise whole. Otherwise numpy (2.x) buffers the view: the innermost axes whose product P fits
// its 8192-element buffer form a core, and each buffer holds floor(8192 / P) cores along the next axis,
// never crossing that axis' boundary; the buffers' pairwise sums are added in float32, in order.
// (Measured against numpy 2.4 on cropped arrays, docs/preprocessing.md.)
float numpy_view_sum(const std::vector<float>& v, const Shape3& box, const Shape3& parent) {
  constexpr int64_t kBuffer = 8192;
  std::vector<int64_t> ext, stride;  // coalesced axes, outer to inner
  const Shape3 ps{parent[1] * parent[2], parent[2], 1};
  for (int a = 2; a >= 0; --a) {
    if (box[a] == 1) continue;
    if (!ext.empty() && ps[a] == ext.front() * stride.front()) {
      ext.front() *= box[a];
      continue;
    }
    ext.insert(ext.begin(), box[a]);
    stride.insert(stride.begin(), ps[a]);
  }
  const auto n = static_cast<int64_t>(v.size());
  if (ext.size() <= 1 && (stride.empty() || stride.back() == 1)) return numpy_sum_f32(v.data(), n);
  size_t j = ext.size();  // the core: axes [j, end) whose product fits the buffer
  int64_t core = 1;
  while (j > 0 && core * ext[j - 1] <= kBuffer) core *= ext[--j];
  if (j == 0) return numpy_sum_f32(v.data(), n);
  const int64_t along = ext[j - 1], per = std::max<int64_t>(1, kBuffer / core), block = along * core;
  float sum = 0.0f;
  for (int64_t start = 0; start < n; start += block)  // every index of the axes outside j - 1
    for (int64_t k = 0; k < along; k += per)
      sum += numpy_sum_f32(v.data() + start + k * core, std::min(per, along - k) * core);
  return sum;
}

// x.mean() and x.std() of numpy on float32 data: `mem` holds the values in memory order, `box` and
// `parent` its layout (numpy_view_sum). The deviations are a fresh array in the same order, summed whole.
Moments numpy_moments(std::vector<float> mem, const Shape3& box, const Shape3& parent) {
  const auto n = static_cast<int64_t>(mem.size());
  Moments m;
  m.mean = static_cast<float>(static_cast<double>(numpy_view_sum(mem, box, parent)) / static_cast<double>(n));
  for (float& x : mem) {
    const float d = x - m.mean;
    x = d * d;
  }
  const auto var = static_cast<float>(static_cast<double>(numpy_sum_f32(mem.data(), n)) / static_cast<double>(n));
  m.std = std::sqrt(var);
  return m;
}

void zscore(float* x, int64_t n, bool use_mask, const int16_t* seg, const ChannelLayout* layout) {
  if (use_mask && seg) {
    std::vector<float> inside;  // image[mask]: a contiguous copy in C order
    for (int64_t i = 0; i < n; ++i)
      if (seg[i] >= 0) inside.push_back(x[i]);
    if (inside.empty()) return;  // nothing inside the mask: nnU-Net changes no voxel either
    const auto k = static_cast<int64_t>(inside.size());
    const Moments m = numpy_moments(std::move(inside), {1, 1, k}, {1, 1, k});
    const float sd = std::max(m.std, static_cast<float>(kMinStd));
    for (int64_t i = 0; i < n; ++i)
      if (seg[i] >= 0) x[i] = (x[i] - m.mean) / sd;
    return;
  }
  if (n == 0) return;
  Moments m;
  if (!layout) {
    m = numpy_moments(std::vector<float>(x, x + n), {1, 1, n}, {1, 1, n});
  } else {
    // nnU-Net's transpose and crop are views: numpy reduces the original array's memory order.
    const Perm3 back = inverse_perm(layout->transpose_forward);
    std::vector<float> mem(static_cast<size_t>(n));
    transpose_array(x, layout->cropped, back, mem.data());
    m = numpy_moments(std::move(mem), permute3(layout->cropped, back), permute3(layout->before_cropping, back));
  }
  const float sd = std::max(m.std, static_cast<float>(kMinStd));
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - m.mean) / sd;
}

void ct(float* x, int64_t n, const IntensityProps& p) {
  const float lo = static_cast<float>(p.percentile_00_5), hi = static_cast<float>(p.percentile_99_5);
  const float mean = static_cast<float>(p.mean), sd = static_cast<float>(std::max(p.std, kMinStd));
  for (int64_t i = 0; i < n; ++i) x[i] = (std::min(std::max(x[i], lo), hi) - mean) / sd;
}

void rescale01(float* x, int64_t n) {
  if (n == 0) return;
  const float mn = *std::min_element(x, x + n);
  for (int64_t i = 0; i < n; ++i) x[i] -= mn;
  const float mx = std::max(*std::max_element(x, x + n), static_cast<float>(kMinStd));
  for (int64_t i = 0; i < n; ++i) x[i] /= mx;
}

void rgb01(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    MEDSEG_CHECK(x[i] >= 0.0f && x[i] <= 255.0f, planning::normalization_class_name(NormScheme::RGBTo01), ": value ",
                 x[i], " outside [0, 255]; the images do not look like 8-bit RGB");
  for (int64_t i = 0; i < n; ++i) x[i] /= 255.0f;
}

}  // namespace

NormScheme parse_norm_scheme(const std::string& name) {
  if (const auto s = planning::normalization_scheme(name)) return *s;
  throw Error(concat("unknown normalization scheme '", name, "' (known: ", planning::known_normalization_names(), ")"));
}

const char* norm_scheme_name(NormScheme s) { return planning::normalization_class_name(s); }

IntensityProps intensity_props_from_json(const json& per_channel, int channel, const std::string& source) {
  const std::string key = std::to_string(channel);
  MEDSEG_CHECK_FILE(per_channel.is_object() && per_channel.contains(key), source,
                    "foreground_intensity_properties_per_channel has no entry for channel ", key);
  const json& j = per_channel.at(key);
  auto get = [&](const char* k) {
    MEDSEG_CHECK_FILE(j.contains(k) && j.at(k).is_number(), source, "foreground_intensity_properties_per_channel[\"",
                      key, "\"] lacks a numeric '", k, "'");
    return j.at(k).get<double>();
  };
  return {get("mean"), get("std"), get("percentile_00_5"), get("percentile_99_5")};
}

void normalize_channel(float* x, int64_t n, NormScheme scheme, bool use_mask, const int16_t* seg,
                       const IntensityProps* props, const ChannelLayout* layout) {
  switch (scheme) {
    case NormScheme::CT:
      MEDSEG_CHECK(props, planning::normalization_class_name(NormScheme::CT),
                   " needs the dataset's foreground intensity properties");
      ct(x, n, *props);
      return;
    case NormScheme::ZScore: zscore(x, n, use_mask, seg, layout); return;
    case NormScheme::None: return;
    case NormScheme::RescaleTo01: rescale01(x, n); return;
    case NormScheme::RGBTo01: rgb01(x, n); return;
  }
}

}  // namespace medseg::preprocessing
