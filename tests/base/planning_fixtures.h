#pragma once
// Synthetic fingerprints / dataset.json files for the planner tests.
#include <array>
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::test {

inline json intensity_props(int channels) {
  json p = json::object();
  for (int c = 0; c < channels; ++c)
    p[std::to_string(c)] = {{"max", 1000.0}, {"mean", 100.0},          {"median", 90.0},
                            {"min", -5.0},   {"percentile_00_5", 1.0}, {"percentile_99_5", 800.0},
                            {"std", 50.0}};
  return p;
}

// `n` identical cases.
inline json uniform_fingerprint(std::array<double, 3> spacing, std::array<double, 3> shape, int n,
                                double rel_size = 1.0, int channels = 1) {
  json sp = json::array(), sh = json::array();
  for (int i = 0; i < n; ++i) {
    sp.push_back(spacing);
    sh.push_back(shape);
  }
  return {{"spacings", sp},
          {"shapes_after_crop", sh},
          {"foreground_intensity_properties_per_channel", intensity_props(channels)},
          {"median_relative_size_after_cropping", rel_size}};
}

inline json dataset_json(const std::vector<std::string>& channels, int n_labels, int n_training,
                         const std::string& ending = ".nii.gz") {
  json ch = json::object(), labels = json::object();
  for (std::size_t i = 0; i < channels.size(); ++i) ch[std::to_string(i)] = channels[i];
  labels["background"] = 0;
  for (int l = 1; l < n_labels; ++l) labels["class" + std::to_string(l)] = l;
  return {{"channel_names", ch}, {"labels", labels}, {"numTraining", n_training}, {"file_ending", ending}};
}

}  // namespace medseg::test
