#pragma once
// Internal to the memory model: the forward pass as a list of ops with their byte costs, built per
// architecture (memory_unet_ops.cpp, memory_swin_ops.cpp, memory_primus_ops.cpp) and simulated in memory_model.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "planning/memory_model.h"

namespace medseg::planning::detail {

struct Op {
  std::string name;
  int64_t params = 0;         // trainable parameters (fp32 gradient appears at its backward)
  int64_t largest_param = 0;  // elements of its largest parameter tensor (optimizer temporaries)
  int64_t half_weights = 0;   // AMP: bytes of the half-precision weight copy autocast saves
  int64_t saved = 0;          // bytes kept for backward when not checkpointed
  int64_t fwd_work = 0;       // extra bytes while running forward (temporaries)
  int64_t bwd_work = 0;       // extra bytes while running backward (grad of output, grad of input, temporaries)
  int segment = -1;           // checkpoint segment id; -1 = never recomputed
  int64_t segment_input = 0;  // first op of a segment: bytes of the segment input checkpoint keeps
  int64_t loss_grad = 0;      // gradient handed in by the loss at the start of backward, consumed here
  int hold_tag = -1;          // this op's backward leaves `hold` bytes pending until op `tag` runs
  int64_t hold = 0;
  int tag = -1;      // releases the pending gradient with the same tag
  int64_t macs = 0;  // multiply-accumulates of its forward pass, per sample (network_flops.h)
};

// What every op's byte count depends on besides the layer's own shape.
struct StepSettings {
  int64_t bytes_per_activation;  // 2 under AMP (fp16/bf16 autocast), 4 in fp32
  int64_t batch;
  bool cpu = false;           // MemoryOptions::device == Cpu
  bool cpu_autocast = false;  // cpu and amp: CPU autocast's op lists apply
  int halo_axis = -1;         // spatial parallelism: the slab axis (the patch is one rank's slab)
};

// Ops for PlainConvUNet / ResidualEncoderUNet (including the loss).
std::vector<Op> unet_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                         const MemoryOptions& opt, const StepSettings& step, bool checkpoint);
// Ops for MONAI's SwinUNETR (including the loss).
std::vector<Op> swin_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                         const MemoryOptions& opt, const StepSettings& step, bool checkpoint);

// Ops for dynamic-network-architectures' Primus (including the loss; no deep supervision).
std::vector<Op> primus_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch, int classes,
                           const MemoryOptions& opt, const StepSettings& step, bool checkpoint);

// Stages of BasicBlockD as a ResidualEncoderUNet's encoder counts them, without its stem: stage s has
// a.n_blocks_per_stage[s] blocks to a.features_per_stage[s] channels, the first with a.strides[s] (the residual
// patch embeddings of PrimusV2 and PrimusV3).
std::vector<Op> residual_stages_ops(const ArchitecturePlan& a, const std::vector<int>& patch, int in_ch,
                                    const StepSettings& step);

// Softmax + log-softmax (fp32) and a bool one-hot per scale, the DC+CE loss's saved tensors, and its
// forward temporaries (fp32 logits copy, target as int64).
Op loss_op(const std::vector<int64_t>& voxels_per_scale, int classes, const StepSettings& step);

int64_t volume(const std::vector<int64_t>& v);

}  // namespace medseg::planning::detail
