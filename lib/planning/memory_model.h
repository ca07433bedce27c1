#pragma once
// Peak GPU memory of one training step (forward, loss, backward, optimizer step), in bytes, built
// from an explicit per-layer list of what autograd keeps for backward. This is medseg's alternative
// to nnU-Net's feature-map-count proxy; formulas in docs/plans.md.
//
// Model (all per step, batch B):
//   static      = fp32 weights + optimizer state (SGD momentum 1x, AdamW 2x the weights)
//   forward     = static + input batch + saved tensors so far (+ AMP half weight copies) + op work
//   backward    = everything saved at the end of forward, walked in reverse: each op frees what it
//                 saved, its weight gradients appear, pending skip/loss gradients are held, and a
//                 checkpointed segment re-creates its saved tensors while it is being differentiated
//   step        = static + gradients + batch + the per-parameter temporaries of LibTorch's SGD/AdamW
//   peak        = max of the three. Allocator fragmentation, cuDNN workspaces and the CUDA context
//                 are not modelled: the planner keeps `headroom` of the target free for them.
//                 StepDevice::Cpu adds what the CPU path really allocates (oneDNN layouts, CPU
//                 autocast's fp32 ops); it is checked against measured steps by medseg_bench_memory.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_io.h"
#include "plans/plans.h"

namespace medseg::planning {

// State per weight: SGD's momentum 1x, Adam/AdamW's two moments 2x, with amsgrad a third (max_exp_avg_sq).
enum class OptimizerKind { SgdMomentum, AdamW, AdamAmsgrad };
enum class StepDevice { Cuda, Cpu };

struct MemoryOptions {
  bool amp = true;  // autocast fp16/bf16: conv/linear outputs 2 bytes; softmax/layer norm stay fp32
  OptimizerKind optimizer = OptimizerKind::SgdMomentum;
  bool deep_supervision = true;       // U-Nets: a head and a loss term per decoder stage (nnU-Net's default)
  std::optional<bool> checkpointing;  // unset: from the plan (SwinUNETR use_checkpoint)
  double target_bytes_per_voxel = 4;  // segmentation target as delivered to the GPU (per DS scale)
  // CPU: oneDNN convolutions (grad input in a blocked layout and its dense copy; the 1x1 head's input
  // reordered and its output padded to 16 channels) and CPU autocast (bf16; softmax not promoted,
  // avg_pool3d in fp32 keeping an fp32 copy of its input).
  StepDevice device = StepDevice::Cuda;
  // CPU autocast of LibTorch 1.13 runs transposed convolutions in fp32 (input cast up and kept, cat
  // promoted to fp32). Read only with device == Cpu and amp.
  bool cpu_autocast_fp32_transposed_conv = true;
  // Spatial parallelism (planning/spatial_parallel.h): the estimate is one rank's, holding a slab
  // 1/n of the patch along the shard axis, plus the halo planes each convolution fetches. U-Nets only.
  int spatial_parallel = 1;
};

// One layer (or fused block) of the forward pass.
struct LayerMemory {
  std::string name;
  int64_t params = 0;    // trainable parameters
  int64_t saved = 0;     // bytes kept for backward (after checkpointing)
  int64_t fwd_work = 0;  // extra bytes alive while it runs forward
  int64_t bwd_work = 0;  // extra bytes alive while it runs backward (output and input gradients)
  int segment = -1;      // checkpoint segment (-1: not checkpointed)
};

struct MemoryEstimate {
  int64_t parameters = 0;
  int64_t weights_bytes = 0;      // fp32 master weights
  int64_t gradients_bytes = 0;    // fp32
  int64_t optimizer_bytes = 0;    // momentum / Adam moments
  int64_t half_weight_bytes = 0;  // AMP copies of conv/linear weights, alive until their backward
  int64_t input_bytes = 0;        // image batch and (per DS scale) targets
  int64_t activation_bytes = 0;   // saved for backward by the network, after checkpointing
  int64_t loss_bytes = 0;         // saved by the loss (softmax, log-softmax, one-hot per DS scale)
  int64_t recompute_bytes = 0;    // checkpointing: largest segment re-created during backward
  int64_t step_temp_bytes = 0;    // optimizer step: temporaries of the largest parameter tensor
  int64_t peak_forward = 0, peak_backward = 0, peak_step = 0;
  int64_t peak_bytes = 0;  // max of the three
  std::string peak_phase;  // "forward", "backward" or "step"
  std::string peak_layer;  // layer at the peak
  bool checkpointing = false;
  bool amp = true;
  int batch_size = 0;
  std::vector<LayerMemory> layers;

  json to_json(bool per_layer = false) const;
};

MemoryEstimate estimate_training_memory(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch,
                                        int in_channels, int num_classes, const MemoryOptions& opt = {});

// What one forward pass must hold at once, at least, in bytes: fp32 weights (the encoder's
// convolutions), the input batch and the largest feature map of the encoder. Computed in double from
// the plan alone, so that absurd patch or feature sizes give a huge number instead of an int64
// overflow: the check before building a network uses it (training/memory_guard.h).
struct ForwardBytes {
  double weights = 0, input = 0, largest_feature_map = 0;
  double total() const { return weights + input + largest_feature_map; }
};
ForwardBytes forward_bytes_lower_bound(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch,
                                       int in_channels);

// Largest batch (>= 1) whose estimated peak fits `budget_bytes`; 0 when even batch 1 does not fit.
int max_batch_for_budget(const ArchitecturePlan& arch, const std::vector<int>& patch, int in_channels, int num_classes,
                         const MemoryOptions& opt, double budget_bytes, int limit = 4096);

}  // namespace medseg::planning
