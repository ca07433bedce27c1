#pragma once
// dataset_fingerprint.json: nnU-Net v2's keys, values and axis order (docs/fingerprint.md), plus
// medseg's own extras under the "medseg" key only, so nnU-Net's planner can read our files and we
// can read nnU-Net's (which lack that key). This is the canonical reader/writer of the format.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "fingerprint/crop.h"
#include "fingerprint/intensity_stats.h"

namespace medseg::fingerprint {

constexpr int kFingerprintVersion = 1;

// One case's extras (medseg key only).
struct CaseRecord {
  std::string id;
  Shape3 shape_before_crop{0, 0, 0};
  Box bbox;  // crop box in the original array, (z, y, x), [lo, hi)
  double relative_size_after_cropping = 0;
  int64_t num_foreground_voxels = 0;  // label > 0 inside the crop
  std::vector<IntensityStats> stats;  // per channel, over all foreground voxels of the case
};

struct DatasetFingerprint {
  // nnU-Net's keys. Shapes and spacings are in array order (z, y, x), one per case in sorted
  // case-id order; spacings in mm.
  std::vector<IntensityStats> intensity_per_channel;  // "foreground_intensity_properties_per_channel"
  double median_relative_size_after_cropping = 0;
  std::vector<Shape3> shapes_after_crop;
  std::vector<std::array<double, 3>> spacings;

  // medseg extras; has_medseg is false for a file written by nnU-Net.
  bool has_medseg = false;
  int version = kFingerprintVersion;
  bool exact_stats = false;       // all foreground voxels instead of samples
  int64_t samples_per_case = 0;   // int(max_samples_total // n_cases), when sampling
  int64_t max_samples_total = 0;  // nnU-Net: 10e7
  uint64_t seed = 1234;
  std::vector<CaseRecord> cases;

  int num_channels() const { return static_cast<int>(intensity_per_channel.size()); }
};

// JSON with nnU-Net's key order (its writer sorts keys): keys of each channel's statistics are
// max, mean, median, min, percentile_00_5, percentile_99_5, std; channels "0", "1", ... in order.
nlohmann::ordered_json fingerprint_to_json(const DatasetFingerprint& fp);

// Parses a fingerprint (ours or nnU-Net's). Throws FileError naming `source` and the key.
DatasetFingerprint fingerprint_from_json(const json& j, const std::string& source);

DatasetFingerprint load_fingerprint(const std::string& path);
void save_fingerprint(const std::string& path, const DatasetFingerprint& fp);  // atomic

}  // namespace medseg::fingerprint
