#pragma once
// A deterministic synthetic dataset in nnU-Net's raw layout. It feeds the demo, the tests and the
// benchmarks: a "body" of nonzero intensity (so crop-to-nonzero has work to do) containing
// ellipsoid and box objects, one label per object class, each class with its own intensity per
// channel plus noise, so a network can learn it quickly.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace medseg::io {

struct SyntheticDatasetOptions {
  int dataset_id = 900;
  std::string name = "Synthetic";
  int num_cases = 20;
  int num_test_cases = 0;                        // written to imagesTs/ (+ labelsTs/)
  std::array<int64_t, 3> min_shape{32, 48, 48};  // z, y, x
  std::array<int64_t, 3> max_shape{40, 64, 64};
  std::array<double, 3> spacing{1.0, 1.0, 1.0};  // x, y, z (mm), ITK order
  double spacing_jitter = 0.0;                   // relative, per case
  int num_channels = 1;
  std::vector<std::string> channel_names{};  // default: "MRI", "MRI1", ...
  int num_labels = 2;                        // foreground classes
  // nnU-Net's partially annotated data: labels gain "ignore" = num_labels + 1, and every training
  // label map is unannotated (ignore) in the last third of its x axis; labelsTs stays complete.
  bool ignore_label = false;
  // BraTS-style nested regions: labels become "region1" = [1..L], "region2" = [2..L], ...,
  // "regionL" = [L] with regions_class_order [1..L], so painting the regions in order gives back
  // the label map (needs num_labels >= 2).
  bool regions = false;
  bool random_direction = false;  // random rotations / axis flips
  bool two_d = false;             // 2D files: one slice, z of the shapes ignored
  double noise_std = 0.1;
  std::string file_ending = ".nii.gz";
  uint64_t seed = 1234;
};

// Writes <root>/DatasetXXX_Name/{dataset.json, imagesTr, labelsTr[, imagesTs, labelsTs]} and
// returns the dataset folder. Refuses to overwrite an existing folder unless `overwrite`, and an id
// that another DatasetXXX_* folder under `root` already has. Built in a temporary sibling and moved
// into place at the end, so a failure leaves `root` as it was.
std::string write_synthetic_dataset(const std::string& root, const SyntheticDatasetOptions& o, bool overwrite = false,
                                    int threads = 1);

}  // namespace medseg::io
