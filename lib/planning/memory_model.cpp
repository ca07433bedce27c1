#include "planning/memory_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "planning/memory_ops.h"
#include "planning/spatial_parallel.h"

namespace medseg::planning {

using detail::Op;

namespace {

bool wants_checkpointing(const ArchitecturePlan& a, const MemoryOptions& opt) {
  if (opt.checkpointing) return *opt.checkpointing;
  return a.swin && a.swin->use_checkpoint;
}

// Targets as delivered per deep-supervision scale (U-Nets) or at full resolution (SwinUNETR).
int64_t target_bytes(const ArchitecturePlan& a, const std::vector<int>& patch, int batch, const MemoryOptions& opt) {
  std::vector<int64_t> size(patch.begin(), patch.end());
  double voxels = static_cast<double>(detail::volume(size));
  if (!a.swin && !a.primus && opt.deep_supervision) {
    for (int s = 1; s + 1 < a.n_stages; ++s) {
      for (std::size_t i = 0; i < size.size(); ++i) size[i] /= a.strides[s][i];
      voxels += static_cast<double>(detail::volume(size));
    }
  }
  return static_cast<int64_t>(voxels * opt.target_bytes_per_voxel) * batch;
}

// The settings every op's byte count depends on; with spatial parallelism, the slab axis.
detail::StepSettings step_settings(const ArchitecturePlan& arch, const std::vector<int>& full_patch, int batch,
                                   const MemoryOptions& opt) {
  MEDSEG_CHECK(batch >= 1, "memory model: batch size must be >= 1");
  MEDSEG_CHECK(static_cast<int>(full_patch.size()) == arch.dim,
               "memory model: patch rank differs from the architecture");
  const bool cpu = opt.device == StepDevice::Cpu;
  detail::StepSettings step{opt.amp ? 2 : 4, batch, cpu, cpu && opt.amp};
  if (opt.spatial_parallel > 1) {
    MEDSEG_CHECK(!arch.swin, "memory model: SwinUNETR cannot be split into slabs (docs/spatial_parallel.md)");
    MEDSEG_CHECK(!arch.primus, "memory model: Primus cannot be split into slabs (docs/spatial_parallel.md)");
    step.halo_axis = spatial_shard_axis(full_patch, arch.strides, opt.spatial_parallel);
    MEDSEG_CHECK(step.halo_axis >= 0, "memory model: no axis of the patch splits into ", opt.spatial_parallel,
                 " slabs aligned with the network's strides");
  }
  return step;
}

// Weights and optimizer state: there through every phase.
int64_t static_memory(MemoryEstimate& e, const std::vector<Op>& ops, const MemoryOptions& opt) {
  for (const auto& o : ops) e.parameters += o.params;
  e.weights_bytes = 4 * e.parameters;
  e.gradients_bytes = 4 * e.parameters;
  const int64_t opt_factor = opt.optimizer == OptimizerKind::AdamAmsgrad ? 3
                             : opt.optimizer == OptimizerKind::AdamW     ? 2
                                                                         : 1;
  e.optimizer_bytes = opt_factor * 4 * e.parameters;
  return e.weights_bytes + e.optimizer_bytes;
}

// The forward pass: fills the peak, the saved bytes and the layers. Returns the bytes alive once it is done
// (autocast's cached half weights of checkpointed ops dropped) and, in `peak_layer`, where it peaked.
int64_t simulate_forward(MemoryEstimate& e, const std::vector<Op>& ops, int64_t live, std::string& peak_layer) {
  // Checkpointed ops' AMP weight copies sit in autocast's cache until the autocast scope ends (before backward).
  int64_t cached_half = 0;
  for (const auto& o : ops)
    if (o.segment >= 0) cached_half += o.half_weights;
  for (const auto& o : ops) {
    const bool in_ckpt = o.segment >= 0;
    const int64_t keep = (in_ckpt ? o.segment_input : o.saved) + o.half_weights;
    const int64_t work = o.fwd_work;  // a checkpointed segment drops its intermediates as it goes
    if (live + keep + work > e.peak_forward) {
      e.peak_forward = live + keep + work;
      e.peak_layer = o.name;
    }
    live += keep;
    e.half_weight_bytes += o.half_weights;
    if (o.name == "loss")
      e.loss_bytes += o.saved;
    else
      e.activation_bytes += in_ckpt ? o.segment_input : o.saved;
    LayerMemory lm{o.name, o.params, in_ckpt ? o.segment_input : o.saved, o.fwd_work, o.bwd_work, o.segment};
    e.layers.push_back(lm);
  }
  peak_layer = e.peak_layer;
  e.half_weight_bytes -= cached_half;
  return live - cached_half;
}

// The backward pass, in reverse, from `live` bytes; returns the layer where it peaked.
std::string simulate_backward(MemoryEstimate& e, const std::vector<Op>& ops, int64_t live) {
  // What each op keeps once forward is done; a checkpointed op keeps nothing but its segment input, and the
  // recomputation casts its AMP weights again.
  std::map<int, int64_t> segment_saved;
  for (const auto& o : ops)
    if (o.segment >= 0) segment_saved[o.segment] += o.saved + o.half_weights;
  int64_t pending = 0, grads = 0;
  for (const auto& o : ops) pending += o.loss_grad;
  std::map<int, int64_t> held;
  int current_segment = -1;
  std::string bwd_layer;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const Op& o = *it;
    if (o.segment >= 0 && o.segment != current_segment) {  // entering a segment: recompute its forward
      current_segment = o.segment;
      live += segment_saved[o.segment];
      e.recompute_bytes = std::max(e.recompute_bytes, segment_saved[o.segment]);
    }
    const int64_t now = live + pending + grads + 4 * o.params + o.bwd_work;
    if (now > e.peak_backward) {
      e.peak_backward = now;
      bwd_layer = o.name;
    }
    live -= o.saved + o.half_weights;
    if (o.segment >= 0) live -= o.segment_input;
    grads += 4 * o.params;
    pending -= o.loss_grad;
    if (o.hold_tag >= 0) {
      held[o.hold_tag] += o.hold;
      pending += o.hold;
    }
    if (o.tag >= 0 && held.count(o.tag)) {
      pending -= held[o.tag];
      held.erase(o.tag);
    }
  }
  return bwd_layer;
}

// Optimizer step. LibTorch's SGD and AdamW loop over the parameters (no foreach): SGD's weight decay
// and Nesterov terms, AdamW's sqrt and division each make a parameter-sized temporary, two alive at
// once, freed before the next parameter. The batch is still referenced by the training loop.
void simulate_optimizer_step(MemoryEstimate& e, const std::vector<Op>& ops, int64_t static_bytes) {
  int64_t largest = 0;
  for (const auto& o : ops) largest = std::max(largest, o.largest_param > 0 ? o.largest_param : o.params);
  e.step_temp_bytes = 2 * 4 * largest;
  e.peak_step = static_bytes + e.gradients_bytes + e.input_bytes + e.step_temp_bytes;
}

// The overall peak: the phase with the most bytes (backward first on a tie, then forward) and its layer.
void settle_peak(MemoryEstimate& e, const std::string& fwd_layer, const std::string& bwd_layer) {
  e.peak_bytes = std::max({e.peak_forward, e.peak_backward, e.peak_step});
  if (e.peak_bytes == e.peak_backward) {
    e.peak_phase = "backward";
    e.peak_layer = bwd_layer;
  } else if (e.peak_bytes == e.peak_forward) {
    e.peak_phase = "forward";
    e.peak_layer = fwd_layer;
  } else {
    e.peak_phase = "step";
    e.peak_layer = "";
  }
}

}  // namespace

MemoryEstimate estimate_training_memory(const ArchitecturePlan& arch, const std::vector<int>& full_patch, int batch,
                                        int in_channels, int num_classes, const MemoryOptions& opt) {
  const detail::StepSettings step = step_settings(arch, full_patch, batch, opt);
  const bool ckpt = wants_checkpointing(arch, opt);
  const std::vector<int> patch =
      step.halo_axis < 0 ? full_patch : slab_patch(full_patch, step.halo_axis, opt.spatial_parallel);
  const std::vector<Op> ops = arch.swin     ? detail::swin_ops(arch, patch, in_channels, num_classes, opt, step, ckpt)
                              : arch.primus ? detail::primus_ops(arch, patch, in_channels, num_classes, opt, step, ckpt)
                                            : detail::unet_ops(arch, patch, in_channels, num_classes, opt, step, ckpt);
  MemoryEstimate e;
  e.batch_size = batch;
  e.amp = opt.amp;
  e.checkpointing = ckpt;
  const int64_t static_bytes = static_memory(e, ops, opt);
  std::vector<int64_t> shape(patch.begin(), patch.end());
  e.input_bytes =
      static_cast<int64_t>(batch) * in_channels * detail::volume(shape) * 4 + target_bytes(arch, patch, batch, opt);

  std::string fwd_layer;
  const int64_t live = simulate_forward(e, ops, static_bytes + e.input_bytes, fwd_layer);
  const std::string bwd_layer = simulate_backward(e, ops, live);
  simulate_optimizer_step(e, ops, static_bytes);
  settle_peak(e, fwd_layer, bwd_layer);
  return e;
}

ForwardBytes forward_bytes_lower_bound(const ArchitecturePlan& arch, const std::vector<int>& patch, int batch,
                                       int in_channels) {
  ForwardBytes b;
  double voxels = 1;
  for (int p : patch) voxels *= p;
  b.input = 4.0 * batch * in_channels * voxels;
  if (arch.primus) {  // the tokens, the decoder's first map at full resolution (at least 8 channels), and the
                      // residual embedding's stem (V2, V3)
    int64_t tokens = 1;
    for (std::size_t i = 0; i < patch.size(); ++i) tokens *= patch[i] / arch.primus->patch_embed_size[i];
    const double stem = arch.primus->residual_embedding() ? arch.primus->embed_channels[0] : 0;
    b.largest_feature_map =
        4.0 * batch * std::max({static_cast<double>(arch.primus->embed_dim * tokens), 8.0 * voxels, stem * voxels});
    return b;
  }
  if (arch.swin) {  // the first encoder block runs at full resolution with feature_size channels
    b.largest_feature_map = 4.0 * batch * arch.swin->feature_size * voxels;
    return b;
  }
  std::vector<double> size(patch.begin(), patch.end());
  double in = in_channels;
  for (int s = 0; s < arch.n_stages; ++s) {
    const auto& stride = arch.strides[static_cast<std::size_t>(s)];
    const auto& kernel = arch.kernel_sizes[static_cast<std::size_t>(s)];
    double stage_voxels = 1, taps = 1;
    for (std::size_t a = 0; a < size.size() && a < stride.size(); ++a) {
      size[a] = std::ceil(size[a] / stride[a]);
      stage_voxels *= size[a];
      taps *= kernel[a];
    }
    const double f = arch.features_per_stage[static_cast<std::size_t>(s)];
    const auto blocks = static_cast<std::size_t>(s) < arch.encoder_blocks().size()
                            ? arch.encoder_blocks()[static_cast<std::size_t>(s)]
                            : 1;
    b.weights += 4.0 * taps * f * (in + (blocks - 1) * f);
    b.largest_feature_map = std::max(b.largest_feature_map, 4.0 * batch * f * stage_voxels);
    in = f;
  }
  return b;
}

int max_batch_for_budget(const ArchitecturePlan& arch, const std::vector<int>& patch, int in_channels, int num_classes,
                         const MemoryOptions& opt, double budget_bytes, int limit) {
  auto fits = [&](int b) {
    return static_cast<double>(estimate_training_memory(arch, patch, b, in_channels, num_classes, opt).peak_bytes) <=
           budget_bytes;
  };
  if (!fits(1)) return 0;
  // Every phase grows linearly with the batch, so the fitting batches form an interval [1, b*].
  int lo = 1, hi = limit;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

json MemoryEstimate::to_json(bool per_layer) const {
  json j = {{"estimated_peak_bytes", peak_bytes},
            {"peak_phase", peak_phase},
            {"peak_layer", peak_layer},
            {"batch_size", batch_size},
            {"amp", amp},
            {"gradient_checkpointing", checkpointing},
            {"parameters", parameters},
            {"breakdown",
             {{"weights", weights_bytes},
              {"gradients", gradients_bytes},
              {"optimizer_state", optimizer_bytes},
              {"half_weight_copies", half_weight_bytes},
              {"input_and_targets", input_bytes},
              {"saved_activations", activation_bytes},
              {"loss", loss_bytes},
              {"checkpoint_recompute", recompute_bytes},
              {"optimizer_step_temporaries", step_temp_bytes},
              {"peak_forward", peak_forward},
              {"peak_backward", peak_backward},
              {"peak_step", peak_step}}}};
  if (per_layer) {
    json l = json::array();
    for (const auto& x : layers)
      l.push_back({{"name", x.name},
                   {"params", x.params},
                   {"saved", x.saved},
                   {"fwd_work", x.fwd_work},
                   {"bwd_work", x.bwd_work},
                   {"segment", x.segment}});
    j["layers"] = l;
  }
  return j;
}

}  // namespace medseg::planning
