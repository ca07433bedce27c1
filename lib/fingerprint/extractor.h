#pragma once
// Dataset fingerprint extraction (nnU-Net's DatasetFingerprintExtractor): per case crop to nonzero,
// spacing, shapes, relative size and foreground intensity samples; then per-channel statistics
// over the samples of all cases.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "io/case_loader.h"
#include "io/dataset.h"

namespace medseg::fingerprint {

// nnU-Net samples 10e7 foreground voxels in total, int(10e7 // n_cases) per case.
constexpr int64_t kDefaultMaxSamplesTotal = 100000000;

struct ExtractOptions {
  int threads = 1;           // cases analysed at once (each holds one case in memory)
  bool exact_stats = false;  // use every foreground voxel instead of samples
  int64_t max_samples_total = kDefaultMaxSamplesTotal;
  uint64_t seed = 1234;  // per case, as nnU-Net's RandomState(1234)
  bool progress = true;
  // Every value dataset.json declares (io::DatasetInfo::label_values); when set, a label map with
  // another value is an error naming the file: the foreground (label > 0) would be wrong.
  std::vector<int> label_values;
  bool reorient_to_ras = false;  // dataset.json names NibabelIOWithReorient (io/reorient.h)
};

struct CaseAnalysis {
  CaseRecord record;
  std::array<double, 3> spacing{1, 1, 1};  // z, y, x
  Shape3 shape_after_crop{0, 0, 0};
  std::vector<std::vector<float>> samples;  // per channel
};

// Samples per case: int(max_samples_total // n_cases), at least 1.
int64_t samples_per_case(int64_t max_samples_total, int64_t n_cases);

// Crops one loaded case and collects its foreground (label > 0 after cropping) intensities:
// `num_samples` draws with replacement per channel from one mt19937_64(seed) stream (channel 0's
// draws first), or every foreground voxel in raster order when `exact`.
CaseAnalysis analyze_case(const io::LoadedCase& c, int64_t num_samples, bool exact, uint64_t seed);

// Runs over `cases` (sorted by id, as io::list_training_cases returns them). Volumes are loaded,
// analysed and dropped one case per thread. Throws FileError naming the file for unreadable or
// inconsistent cases, and Error when no case has any foreground.
DatasetFingerprint extract_fingerprint(const std::vector<io::CaseFiles>& cases, int num_channels,
                                       const ExtractOptions& o);

}  // namespace medseg::fingerprint
