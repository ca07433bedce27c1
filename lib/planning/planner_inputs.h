#pragma once
// What the planner reads: nnU-Net's dataset_fingerprint.json and dataset.json, validated, with
// errors that name the file and the key.
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::planning {

struct FingerprintInput {
  std::vector<std::vector<double>> spacings;           // per case, array order (z, y, x)
  std::vector<std::vector<double>> shapes_after_crop;  // per case, same order
  json foreground_intensity_properties_per_channel;    // copied into the plans verbatim
  double median_relative_size_after_cropping = 1.0;
  std::string source;  // file name for messages
};

struct DatasetJsonInput {
  std::vector<std::string> channel_names;  // ordered by channel index
  int num_labels = 0;                      // len(labels), background (and regions) included
  int64_t num_training = 0;
  std::string file_ending;
  std::string overwrite_image_reader_writer;  // empty when absent or "None"
  json raw;
  std::string source;
};

FingerprintInput fingerprint_from_json(const json& j, const std::string& source);
FingerprintInput load_fingerprint(const std::string& path);
DatasetJsonInput dataset_json_from_json(const json& j, const std::string& source);
DatasetJsonInput load_dataset_json(const std::string& path);

}  // namespace medseg::planning
