#pragma once
// nnU-Net's intensity normalization schemes by their class names (nnunetv2/preprocessing/normalization/
// default_normalization_schemes.py): the one table that plans.json's normalization_schemes, the planner's
// choice per channel name and preprocessing read.
#include <optional>
#include <string>

namespace medseg::planning {

enum class NormalizationScheme { CT, ZScore, None, RescaleTo01, RGBTo01 };

// The scheme a class name names, or nullopt. medseg also reads "RGBTo0_1Normalization", which it wrote
// into preprocessed data records before 2026-11-28.
std::optional<NormalizationScheme> normalization_scheme(const std::string& class_name);

// nnU-Net's class name of a scheme.
const char* normalization_class_name(NormalizationScheme s);

// "CTNormalization, ZScoreNormalization, ..." for error messages.
std::string known_normalization_names();

// The planner's scheme for a dataset.json channel name (map_channel_name_to_normalization.py, case-insensitive:
// "CT", "noNorm", "zscore", "rescale_to_0_1", "rgb_to_0_1"; anything else is z-scored).
NormalizationScheme normalization_for_channel(const std::string& channel_name);

}  // namespace medseg::planning
