#pragma once
// From logits at the preprocessed resolution to files in the input's geometry, as nnU-Net's
// export_prediction does it:
//   1. resample each class's logits to the cropped original shape (the configuration's
//      resampling_fn_probabilities_kwargs: linear in-plane, nearest along a separate z axis when the
//      spacing is anisotropic; nnU-Net's separate-z rule with the configuration spacing as current
//      and the original (transposed) spacing as target),
//   2. segmentation: argmax (labels), or for regions each region whose sigmoid > 0.5 painted with its
//      regions_class_order value, later regions winning,
//   3. uncrop into the transposed original shape (0 outside the crop box), transpose back, and write
//      with the original spacing, origin and direction.
// Probabilities (softmax, or sigmoid for regions) go through the same steps; outside the crop box
// the background gets probability 1 (labels) or every region 0 (regions).
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "core/volume.h"
#include "io/dataset.h"
#include "plans/plans.h"
#include "postprocessing/postprocessing.h"
#include "preprocessing/case_store.h"
#include "preprocessing/preprocessor.h"

namespace medseg::inference {

// What each network output means.
struct LabelMapping {
  bool regions = false;
  std::vector<int> values;                  // labels: value of output k; regions: value painted where output k is on
  PixelType pixel_type = PixelType::UInt8;  // uint8, or uint16 beyond 255 labels
};

// Throws FileError naming `source` when regions lack a usable regions_class_order.
LabelMapping label_mapping(const io::DatasetInfo& dataset, const std::string& source);

struct ExportOptions {
  preprocessing::ResampleSpec resample{{1, 0}, std::nullopt};  // resampling_fn_probabilities_kwargs
  bool save_probabilities = false;
  // Which probability files save_probabilities writes: medseg's CASE_probabilities.npy + .json (geometry,
  // class values) and/or nnU-Net's CASE.npz (key "probabilities", the same array; its geometry is the
  // segmentation's beside it). --probabilities_format medseg | nnunet | both.
  bool probabilities_npy = true;
  bool probabilities_npz = false;
  int threads = 1;  // classes resampled at once (and the bound on classes held in memory)
  // The logits are fp16 values (nnU-Net's fp16 accumulators): resampled logits are rounded to fp16
  // too, as nnU-Net's resampling keeps its input's dtype.
  bool half_logits = false;
  // Applied to the written segmentation only (probabilities stay the network's), as nnU-Net does.
  std::vector<postprocessing::KeepLargestComponent> postprocessing;
  // false: write_prediction returns the segmentation without writing base + file_ending (the caller
  // writes it in another format: a DICOM SEG, inference/predict_cases.cpp).
  bool write_segmentation = true;
};

// A resampled logit rounded to fp16 (ExportOptions::half_logits). One beyond fp16's range stays as it is:
// nnU-Net stops with an overflow there, medseg has predicted that case again with fp32 accumulators.
float logit_as_half(double v);

// --probabilities_format: "medseg" (npy + json), "nnunet" (npz) or "both"; Error naming the flag otherwise.
void parse_probabilities_format(const std::string& value, bool* npy, bool* npz);

// The probabilities resampling spec of a configuration (order 1 / order_z 0 by default).
preprocessing::ResampleSpec probabilities_resampling(const planning::ConfigurationPlan& cfg);

// logits: (K, shape_after_resampling) float32 CPU contiguous. Writes `base + file_ending` (the
// segmentation) and, with save_probabilities, `base + "_probabilities.npy"` (float32 (K, Z, Y, X),
// original array order) and `base + "_probabilities.json"`. Returns the segmentation volume.
Volume export_prediction(const at::Tensor& logits, const preprocessing::CaseProperties& props,
                         const LabelMapping& labels, const ExportOptions& opts, const std::string& base,
                         const std::string& file_ending);

// The writing part of export_prediction: `seg` and, when `probabilities` is given, its files
// (opts' formats); opts.postprocessing applied to the segmentation. Returns what was written.
Volume write_prediction(Volume seg, const std::vector<float>* probabilities, const LabelMapping& labels,
                        const ExportOptions& opts, const std::string& base, const std::string& file_ending);

// Steps 1-3 without writing: the segmentation in the original geometry.
Volume logits_to_segmentation(const at::Tensor& logits, const preprocessing::CaseProperties& props,
                              const LabelMapping& labels, const ExportOptions& opts,
                              std::vector<float>* probabilities = nullptr);

// Steps 2's end and 3, shared by both exporters: `seg` (values on the cropped, transposed grid)
// uncropped, transposed back and reoriented into the original geometry; with `probabilities`, also
// `resampled` (K x cropped logits, overwritten) as softmax or sigmoid probabilities in the
// segmentation's array order.
Volume segmentation_to_original(const std::vector<uint16_t>& seg, std::vector<float>* resampled,
                                const preprocessing::CaseProperties& props, const LabelMapping& labels,
                                std::vector<float>* probabilities);

// A cascade's next-stage input (nnU-Net's resample_and_save): the logits resampled from this
// configuration's preprocessed grid to `target`, the next configuration's preprocessed shape of the
// same case (the same crop box at `target_spacing`), with opts.resample, then step 2. (target) values.
std::vector<int16_t> logits_to_next_stage(const at::Tensor& logits, const preprocessing::CaseProperties& props,
                                          const Shape3& target, const preprocessing::Spacing3& target_spacing,
                                          const LabelMapping& labels, const ExportOptions& opts);

// One preprocessed channel (shape_after_resampling, float32) brought back to the original grid as
// logits are (resampled with opts.resample, uncropped, transposed back); outside the crop box it
// takes the channel's minimum. Pictures of the network's input use it (inference/overlays.h).
Volume channel_to_original(const float* channel, const preprocessing::CaseProperties& props, const ExportOptions& opts);

}  // namespace medseg::inference
