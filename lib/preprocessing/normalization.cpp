#include "preprocessing/normalization.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace medseg::preprocessing {

namespace {

constexpr double kMinStd = 1e-8;

struct Moments {
  double mean = 0, std = 0;
  int64_t count = 0;
};

// Mean and population std over the voxels where `keep(i)`; two passes for accuracy.
template <class Keep>
Moments moments(const float* x, int64_t n, Keep&& keep) {
  Moments m;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    if (keep(i)) {
      sum += x[i];
      ++m.count;
    }
  if (m.count == 0) return m;
  m.mean = sum / static_cast<double>(m.count);
  double ss = 0;
  for (int64_t i = 0; i < n; ++i)
    if (keep(i)) ss += (x[i] - m.mean) * (x[i] - m.mean);
  m.std = std::sqrt(ss / static_cast<double>(m.count));
  return m;
}

void zscore(float* x, int64_t n, bool use_mask, const int16_t* seg) {
  if (use_mask && seg) {
    const Moments m = moments(x, n, [seg](int64_t i) { return seg[i] >= 0; });
    if (m.count == 0) return;  // nothing inside the mask: nnU-Net changes no voxel either
    const float mean = static_cast<float>(m.mean), sd = static_cast<float>(std::max(m.std, kMinStd));
    for (int64_t i = 0; i < n; ++i)
      if (seg[i] >= 0) x[i] = (x[i] - mean) / sd;
    return;
  }
  const Moments m = moments(x, n, [](int64_t) { return true; });
  const float mean = static_cast<float>(m.mean), sd = static_cast<float>(std::max(m.std, kMinStd));
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - mean) / sd;
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
    MEDSEG_CHECK(x[i] >= 0.0f && x[i] <= 255.0f, "RGBTo0_1Normalization: value ", x[i],
                 " outside [0, 255]; the images do not look like 8-bit RGB");
  for (int64_t i = 0; i < n; ++i) x[i] /= 255.0f;
}

}  // namespace

NormScheme parse_norm_scheme(const std::string& name) {
  if (name == "CTNormalization") return NormScheme::CT;
  if (name == "ZScoreNormalization") return NormScheme::ZScore;
  if (name == "NoNormalization") return NormScheme::None;
  if (name == "RescaleTo01Normalization") return NormScheme::RescaleTo01;
  if (name == "RGBTo0_1Normalization" || name == "RGBTo01Normalization") return NormScheme::RGBTo01;
  throw Error("unknown normalization scheme '" + name +
              "' (known: CTNormalization, ZScoreNormalization, NoNormalization, RescaleTo01Normalization, "
              "RGBTo0_1Normalization)");
}

const char* norm_scheme_name(NormScheme s) {
  switch (s) {
    case NormScheme::CT: return "CTNormalization";
    case NormScheme::ZScore: return "ZScoreNormalization";
    case NormScheme::None: return "NoNormalization";
    case NormScheme::RescaleTo01: return "RescaleTo01Normalization";
    case NormScheme::RGBTo01: return "RGBTo0_1Normalization";
  }
  return "?";
}

IntensityProps intensity_props_from_json(const json& per_channel, int channel, const std::string& source) {
  const std::string key = std::to_string(channel);
  if (!per_channel.is_object() || !per_channel.contains(key))
    throw FileError(source, "foreground_intensity_properties_per_channel has no entry for channel " + key);
  const json& j = per_channel.at(key);
  auto get = [&](const char* k) {
    if (!j.contains(k) || !j.at(k).is_number())
      throw FileError(source,
                      "foreground_intensity_properties_per_channel[\"" + key + "\"] lacks a numeric '" + k + "'");
    return j.at(k).get<double>();
  };
  return {get("mean"), get("std"), get("percentile_00_5"), get("percentile_99_5")};
}

void normalize_channel(float* x, int64_t n, NormScheme scheme, bool use_mask, const int16_t* seg,
                       const IntensityProps* props) {
  switch (scheme) {
    case NormScheme::CT:
      if (!props) throw Error("CTNormalization needs the dataset's foreground intensity properties");
      ct(x, n, *props);
      return;
    case NormScheme::ZScore: zscore(x, n, use_mask, seg); return;
    case NormScheme::None: return;
    case NormScheme::RescaleTo01: rescale01(x, n); return;
    case NormScheme::RGBTo01: rgb01(x, n); return;
  }
}

}  // namespace medseg::preprocessing
