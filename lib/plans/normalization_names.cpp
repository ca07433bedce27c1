#include "plans/normalization_names.h"

#include <cctype>

namespace medseg::planning {

namespace {

struct Entry {
  const char* class_name;    // nnU-Net's class
  const char* channel_name;  // map_channel_name_to_normalization's key (lower case)
  NormalizationScheme scheme;
};

constexpr Entry kSchemes[] = {
    {"CTNormalization", "ct", NormalizationScheme::CT},
    {"ZScoreNormalization", "zscore", NormalizationScheme::ZScore},
    {"NoNormalization", "nonorm", NormalizationScheme::None},
    {"RescaleTo01Normalization", "rescale_to_0_1", NormalizationScheme::RescaleTo01},
    {"RGBTo01Normalization", "rgb_to_0_1", NormalizationScheme::RGBTo01},
};

}  // namespace

std::optional<NormalizationScheme> normalization_scheme(const std::string& class_name) {
  for (const Entry& e : kSchemes)
    if (class_name == e.class_name) return e.scheme;
  if (class_name == "RGBTo0_1Normalization") return NormalizationScheme::RGBTo01;
  return std::nullopt;
}

const char* normalization_class_name(NormalizationScheme s) {
  for (const Entry& e : kSchemes)
    if (e.scheme == s) return e.class_name;
  return "?";
}

std::string known_normalization_names() {
  std::string out;
  for (const Entry& e : kSchemes) out += (out.empty() ? "" : ", ") + std::string(e.class_name);
  return out;
}

NormalizationScheme normalization_for_channel(const std::string& channel_name) {
  std::string k;
  for (unsigned char ch : channel_name) k += static_cast<char>(std::tolower(ch));
  for (const Entry& e : kSchemes)
    if (k == e.channel_name) return e.scheme;
  return NormalizationScheme::ZScore;
}

}  // namespace medseg::planning
