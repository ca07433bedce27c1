#pragma once
// medseg's embedding API for prediction (docs/api.md): load a trained model folder once, then segment
// images already in memory, each a set of channel volumes with their geometry (spacing, origin,
// direction), into a label volume in the same geometry and, optionally, probabilities. It does what
// medseg_predict does for one case (the same preprocessing, sliding window, test-time mirroring,
// ensembling of folds, memory placement, export and the model folder's postprocessing), so its
// segmentation is the one medseg_predict writes for the same image. No torch header is included.
//
// The example below compiles (ApiDocExamples in tests/base/stage_include_test.cpp):
//   medseg::api::Segmenter model("/models/Dataset003_Liver/nnUNetTrainer__nnUNetPlans__3d_fullres");
//   medseg::Volume ct = medseg::io::read_image("ct.nii.gz");      // or a buffer + Geometry
//   medseg::api::SegmentOptions so;
//   so.progress = [](double done) {  // the share of the work done, 0..1
//     std::printf("\r%3.0f %%", 100 * done);
//     return !cancel_pressed;  // false stops it
//   };
//   medseg::api::Segmentation s = model.segment({ct}, so);
//
// Errors are medseg::Error (medseg::FileError for a bad model folder) with the CLIs' messages;
// a progress callback that returns false stops the prediction with medseg::Cancelled.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/amp.h"
#include "core/error.h"
#include "core/volume.h"

namespace medseg::api {

struct SegmenterOptions {
  std::vector<std::string> folds;               // fold names ("0" ... "4", "all"); empty: every fold_K present
  std::string checkpoint = "checkpoint_final";  // the file name in each fold folder
  std::string device = "cpu";                   // "cpu", "cuda" or "cuda:N"
  bool mirroring = true;                        // test-time augmentation (medseg_predict without --disable_tta)
  double step_size = 0.5;                       // sliding-window step as a fraction of the patch
  int threads = 0;                              // torch intra-op threads while the Segmenter lives; 0: unchanged
  // The network's precision: Auto is fp16 on CUDA, bf16 on a CPU with bf16 units (AVX-512 BF16, AMX), fp32 on
  // other CPUs; Off is fp32, nnU-Net's arithmetic (medseg_predict --amp; docs/predict.md, "bf16 on the CPU").
  AmpMode amp = AmpMode::Auto;
  bool postprocessing = true;  // apply the model folder's postprocessing.json when it has one
};

struct Segmentation {
  Volume labels;                     // dataset.json's label values (uint8, uint16 beyond 255), the input's geometry
  std::vector<float> probabilities;  // with probabilities: (classes, z, y, x) in labels' array order
  std::vector<int> classes;          // the label (or region) value of each probability channel
};

// What a loaded model takes and gives (a server's model listing, a viewer's label legend).
struct ModelDescription {
  std::string configuration;                                     // "3d_fullres", ...
  std::vector<std::string> folds;                                // the folds loaded
  std::vector<std::string> channels;                             // dataset.json's channel names, by channel
  std::vector<std::pair<std::string, std::vector<int>>> labels;  // dataset.json's labels: name, value(s)
  std::string file_ending;                                       // dataset.json's (".nii.gz")
};

// Called as the prediction advances with the fraction done (0..1]; return false to cancel.
using Progress = std::function<bool(double fraction)>;

// What one segment() call returns and reports, beside the labels.
struct SegmentOptions {
  bool probabilities = false;  // also return the probabilities (Segmentation::probabilities)
  Progress progress;           // empty: no reports
};

// What one segment_files() call writes, beside the segmentation.
struct FileOptions {
  std::string output_format = "auto";  // medseg_predict's --output_format: auto, nifti, dicom_seg, rtstruct
  std::string series_uid;              // --series_uid: of a folder holding several DICOM series, the one to read
  bool overlays = false;               // also overlays/CASE.png (--overlays)
  bool every_format = false;           // a DICOM series' case also in the other formats (file_ending, SEG, RTSTRUCT)
  Progress progress;                   // empty: no reports
};

class Segmenter {
 public:
  explicit Segmenter(const std::string& model_folder, const SegmenterOptions& options = {});
  ~Segmenter();
  Segmenter(const Segmenter&) = delete;
  Segmenter& operator=(const Segmenter&) = delete;

  int64_t channels() const;  // image channels one case needs
  const std::string& configuration() const;
  ModelDescription description() const;

  // `image`: one volume per channel, all on one grid. Throws Error for a wrong channel count or grid,
  // Cancelled when `progress` returns false (the Segmenter stays usable).
  Segmentation segment(const std::vector<Volume>& image, const SegmentOptions& options = {});

  // medseg_predict for the one case that `inputs` hold (its image files in channel order, named CASE_XXXX or
  // not; a DICOM series folder; a zip of one): read, predicted and written into `output_folder` as
  // medseg_predict writes it, the same files byte for byte. Returns the written files, segmentation first.
  // Throws Error with the case's error line, Cancelled when `progress` returns false.
  std::vector<std::string> segment_files(const std::vector<std::string>& inputs, const std::string& output_folder,
                                         const FileOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medseg::api
