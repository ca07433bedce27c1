#pragma once
// One loaded model (every requested fold) ready to predict preprocessed cases: the networks built
// from the plans, weights loaded, in eval mode without deep supervision, on the chosen device.
// Folds are ensembled per tile: each batch of tiles goes through every fold's network and the
// logits are averaged before the gaussian accumulation (the same result as averaging whole-image
// logits, with one accumulator instead of one per fold).
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/amp.h"
#include "core/cpu_features.h"
#include "core_torch/torch_settings.h"
#include "distributed/process_group.h"
#include "inference/export.h"
#include "inference/model_folder.h"
#include "inference/placement.h"
#include "inference/sliding_window.h"
#include "preprocessing/preprocessor.h"

namespace medseg::inference {

struct PredictorOptions {
  double step_size = 0.5;
  bool mirroring = true;        // test-time augmentation over the model's mirroring axes
  std::string device = "cpu";   // "cpu", "cuda" or "cuda:N"
  AmpMode amp = AmpMode::Auto;  // Auto: prediction_amp below
  int64_t tile_batch = 0;       // tiles x mirrored copies per forward pass; 0: auto_tile_batch
  int torch_threads = 0;        // at::set_num_threads when > 0
  bool progress = false;
  SlabMode slabs = SlabMode::Auto;  // --slabs
  bool not_on_device = false;       // --not_on_device: logits accumulate in host memory
  // --accumulators fp16 (default) | fp32: nnU-Net's fp16 sums of the gaussian-weighted logits, which give
  // nnU-Net's probabilities, or exact fp32 ones (inference/sliding_window.h says where they differ).
  bool half_accumulators = true;
  // --exact_nnunet: nnU-Net's numbers bit for bit on the CPU (up to the softmax's last bit): fp16
  // accumulators, every tile and mirrored copy through the network alone (batch 1), and torch's own
  // convolution dispatch instead of medseg's oneDNN path for small convolutions. Slower; without it the
  // probabilities differ from nnU-Net's by fp16 steps of the logits in a few voxels (docs/predict.md).
  bool exact_nnunet = false;
  // Ranks that share every image's tiles (medseg_predict --nproc_per_node); null: this process alone.
  std::shared_ptr<distributed::ProcessGroup> group;
};

// --tile_batch 0: 8 tiles x mirrored copies per forward pass on CUDA; on the CPU as many as keep one pass within
// 2^20 voxels (1 to 8). Batching buys the CPU no speed (docs/predict.md, "Speed": tiles one at a time were not
// slower) but multiplies the forward pass's activations: 8 tiles of 128^3 took 1.8x nnU-Net's memory on a CT.
int64_t auto_tile_batch(bool cuda, const std::vector<int>& patch_size);

// The precision the network predicts in for `requested`: Auto is fp16 on CUDA, bf16 on a CPU with bf16 units
// (AVX-512 BF16 or AMX: 1.6-2x faster there, and fp32's labels and Dice in the fidelity check, docs/predict.md "bf16
// on the CPU"), and off (fp32) on other CPUs and with exact_nnunet, which is nnU-Net's fp32 arithmetic. Any other
// request is kept.
AmpMode prediction_amp(AmpMode requested, bool cuda, bool exact_nnunet, const CpuFeatures& cpu);

class Predictor {
 public:
  Predictor(ModelFolder model, const PredictorOptions& opts);
  ~Predictor();

  const ModelFolder& model() const { return model_; }
  const LabelMapping& labels() const { return labels_; }
  const ExportOptions& export_defaults() const { return export_; }

  // A cascade stage (3d_cascade_fullres): its input adds the previous stage's segmentation.
  bool is_cascade() const { return !previous_stage_labels_.empty(); }
  const std::vector<int>& previous_stage_labels() const { return previous_stage_labels_; }
  int64_t image_channels() const;  // in_channels without the previous stage's one-hot channels
  // The model's plans read NIfTI through NibabelIOWithReorient: load cases with io::load_case(files, true).
  bool reorients_to_ras() const { return plan_.reorient_to_ras; }

  // Loads nothing: preprocesses an already-loaded case with the training preprocessing. A cascade
  // stage takes the previous stage's segmentation as c.label (read from `previous_stage`, named in
  // errors) and appends its one-hot channels; other models ignore c.label.
  preprocessing::PreprocessedCaseData preprocess(io::LoadedCase c, const std::string& previous_stage = "") const;

  // arrays: (C, Z, Y, X) preprocessed. Returns the fold-averaged logits (K, Z, Y, X), float32 on CPU.
  // With a group every rank calls it with the same case; rank 0 gets the logits, the others an
  // undefined tensor (inference/sharded_window.h).
  at::Tensor predict_logits(const preprocessing::CaseArrays& arrays, bool on_host = false);

  // Where this case's logits accumulate (inference/placement.h), from its size and the memory free now.
  Placement placement(const preprocessing::CaseArrays& arrays, const preprocessing::CaseProperties& props,
                      const ExportOptions& eo) const;
  // One case where placement() decides, one step further down after an out-of-memory error
  // (inference/placement.h): whole logits, or predicted in slabs straight into the segmentation (and
  // the probabilities when eo.save_probabilities). `id` names the case in the log.
  struct CasePrediction {
    at::Tensor logits;          // whole logits (K, Z, Y, X) to export; undefined when predicted in slabs
    std::optional<Volume> seg;  // predicted in slabs: the segmentation in the original geometry
    std::vector<float> probabilities;
  };
  CasePrediction predict_case(const preprocessing::CaseArrays& arrays, const preprocessing::CaseProperties& props,
                              const ExportOptions& eo, const std::string& id);
  // A predicted case's segmentation in the original geometry (postprocessing not applied): the one
  // made in slabs, or its whole logits exported (logits_to_segmentation). With `probabilities`, those too.
  Volume segmentation(CasePrediction r, const preprocessing::CaseProperties& props, const ExportOptions& eo,
                      std::vector<float>* probabilities) const;
  // Called after every tile of the sliding window (done, total); false cancels (medseg::Cancelled).
  // Empty: none.
  void set_tile_callback(std::function<bool(int64_t, int64_t)> on_tile) { window_.on_tile = std::move(on_tile); }

  // Predicts slab by slab straight into the export (inference/slab_export.h): the segmentation in the
  // original geometry and, with `probabilities`, the probabilities (as logits_to_segmentation).
  Volume predict_segmentation_in_slabs(const preprocessing::CaseArrays& arrays,
                                       const preprocessing::CaseProperties& props, const ExportOptions& eo,
                                       bool on_host, std::vector<float>* probabilities);
  // The ranks sharing the tiles, or null.
  distributed::ProcessGroup* group() const { return opts_.group.get(); }

 private:
  struct Nets;
  // Intra-op threads while the predictor lives (first member: restored last).
  std::unique_ptr<ScopedTorchSettings> torch_settings_;
  ModelFolder model_;
  PredictorOptions opts_;
  preprocessing::PreprocessPlan plan_;
  LabelMapping labels_;
  std::vector<int> previous_stage_labels_;
  ExportOptions export_;
  SlidingWindowOptions window_;
  std::unique_ptr<Nets> nets_;
  bool autocast_ = false;
  c10::ScalarType autocast_dtype_ = c10::ScalarType::Half;
  bool cuda_ = false;
  bool channels_last_ = false;  // the networks and their inputs in channels-last (runs_channels_last)

  NetworkFn network_fn() const;  // every fold's network as one: their float logits averaged
  SlidingWindowOptions window_options(bool on_host) const;
};

}  // namespace medseg::inference
