#pragma once
// Sliding-window inference over a whole (preprocessed) image, as nnU-Net does it: tiles at
// step_size * patch, gaussian importance weights (sigma = patch/8), optional mirroring test-time
// augmentation, logits accumulated and normalised by the summed weights. Faster than nnU-Net by
// running several tiles and their mirrored copies in one forward pass.
//
// With fp16 accumulators (nnU-Net's, on every device: predicted_logits and n_predictions are
// torch.half in nnUNetPredictor, CPU included) the arithmetic is nnU-Net's op for op: the fp16
// gaussian, each tile's float logits times it, added into the fp16 sums tile by tile in nnU-Net's
// order (first axis outermost), the fp16 quotient. fp16 rounding depends on that order, and in the
// corners of large patches the fp16 gaussian is subnormal, which quantises the logits of voxels near
// the image's faces (nnU-Net's probabilities there differ from exact fp32 ones by up to ~0.2):
// matching nnU-Net means doing the same. fp32 accumulators give the exact weighted mean instead.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace medseg::inference {

// The finished logits hold an infinity or NaN: fp16 accumulators overflowed (predict again in fp32), or
// the network is broken.
class NonFiniteLogits : public Error {
 public:
  using Error::Error;
};

// (B, C, *patch) -> (B, K, *patch) logits.
using NetworkFn = std::function<at::Tensor(const at::Tensor&)>;

struct SlidingWindowOptions {
  std::vector<int64_t> patch_size;  // 2 or 3 spatial dims; 2 on a 3D image tiles slice by slice
  double step_size = 0.5;           // fraction of the patch; nnU-Net's default
  bool use_gaussian = true;
  std::vector<int64_t> mirror_axes;  // spatial axes (of the patch) for mirroring TTA; empty = off
  int64_t max_batch = 8;             // tiles x mirror copies per forward pass
  c10::Device device = c10::kCPU;
  bool half_accumulators = true;  // fp16 accumulators and gaussian, as nnU-Net on every device (above)
  // Shards and slabs split the axis with the most tile positions (sharded prediction, where the split
  // balances the ranks) instead of the first axis (nnU-Net's outermost loop: a slab-wise prediction
  // then adds every voxel's tiles in nnU-Net's order).
  bool split_most_positions = false;
  // Logits accumulate in host memory while the network runs on `device` (nnU-Net's
  // perform_everything_on_device=False, medseg_predict --not_on_device): the image stays on the host
  // too and each batch of tiles travels to the device and back.
  bool accumulate_on_host = false;
  // Called after every tile with the tiles done and their total; returning false stops the window
  // with medseg::Cancelled (an embedder's progress bar and cancel button: api/segmenter.h).
  std::function<bool(int64_t done, int64_t total)> on_tile;
  bool progress = false;
};

// Throws Error("<what> <value> is not in (0, 1] ...") for a step outside (0, 1], NaN included. `what`
// names the flag for a command-line value ("-step_size").
void check_step_size(double step_size, const std::string& what);

// How many tiles compute_steps gives for these sizes, counted without building them (as a double: an
// absurdly small step overflows no integer). The step size must pass check_step_size.
double tile_count(const std::vector<int64_t>& image_size, const std::vector<int64_t>& patch, double step_size);

// nnU-Net's tile start positions per axis for an image of `image_size` (each >= patch).
std::vector<std::vector<int64_t>> compute_steps(const std::vector<int64_t>& image_size,
                                                const std::vector<int64_t>& patch, double step_size);

// nnU-Net's gaussian importance map: separable gaussian centred at patch//2, sigma = patch/8,
// truncated at 4 sigma like scipy.ndimage.gaussian_filter, scaled to a maximum of 10, zeros
// replaced by the smallest nonzero value of the map in `dtype` (nnU-Net's compute_gaussian, whose
// default dtype is float16), on CPU.
at::Tensor gaussian_importance_map(const std::vector<int64_t>& patch, double sigma_scale = 1.0 / 8.0,
                                   double value_scaling = 10.0, at::ScalarType dtype = at::kFloat);

// Where an image's tiles lie, computed from sizes alone (no tensor): the padded size, the patch as
// the window uses it (a 2D patch on a 3D image gets a leading 1, and tiles every slice once), and the
// axis that shards and slabs split: the first (nnU-Net's outermost loop), or with `most_positions` the
// one with the most tile positions (ties: the longer one). Tiles are visited with that axis outermost,
// so a slab-wise prediction adds the same numbers in the same order as a whole one.
struct WindowShape {
  std::vector<int64_t> padded, patch;
  int64_t axis = 0;
  // Voxels of one slab's accumulator: the patch's thickness along `axis`, the padded size elsewhere.
  double slab_voxels() const;
  double padded_voxels() const;
};
WindowShape window_shape(const std::vector<int64_t>& image_size, const std::vector<int64_t>& patch_size,
                         double step_size, bool most_positions = false);

// image: (C, *spatial) float; returns logits (K, *spatial) float32 on CPU. Images smaller than the
// patch are zero-padded (centred) and cropped back.
at::Tensor predict_sliding_window(const NetworkFn& net, const at::Tensor& image, int64_t num_classes,
                                  const SlidingWindowOptions& opts);

// One image's tiling, for callers that share the tiles out. The constructor refuses a tiling whose
// tile list would not fit the host's memory (planning/memory_check.h), before building it.
// (inference/sharded_window.h). Shard i of n takes a contiguous run of the tile positions along the axis with the most
// positions (every position on the other axes), so its tiles cover one slab of the image and overlap the neighbouring
// shards' slabs by the patch minus the step.
class SlidingWindow {
 public:
  SlidingWindow(const at::Tensor& image, int64_t num_classes, const SlidingWindowOptions& opts);
  ~SlidingWindow();

  // Where shard `index` of `count` accumulates: [begin, end) along `axis` of the padded image
  // (spatial axis, 0-based); empty when there are more shards than tile positions.
  struct Slab {
    int64_t axis = 0;
    int64_t begin = 0, end = 0;
    bool empty() const { return end <= begin; }
  };
  Slab slab(int index, int count) const;
  // Gaussian-weighted logits (K, *slab) and weights (*slab) of the shard's tiles, float32 on the
  // options' device (half with half_accumulators). Undefined tensors for an empty slab.
  std::pair<at::Tensor, at::Tensor> accumulate(const NetworkFn& net, int index, int count) const;
  // Zero accumulators for the whole padded image, float32 on CPU.
  std::pair<at::Tensor, at::Tensor> zero_accumulators() const;
  // logits / weights, checked finite, padding cropped: (K, *spatial) float32 on CPU.
  at::Tensor finish(const at::Tensor& logits, const at::Tensor& weights) const;

  // The whole image slab by slab along axis(), holding accumulators for one row of tile positions
  // (the patch's thickness) instead of the whole image: after each row, the part no later row
  // reaches is finished and handed to `sink` with its first index along axis() in the unpadded
  // image, (K, *part) float32 on CPU, in order. The slabs together equal predict_sliding_window's
  // logits bit for bit.
  using SlabSink = std::function<void(int64_t begin, const at::Tensor& logits)>;
  void stream(const NetworkFn& net, const SlabSink& sink) const;
  int64_t axis() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace medseg::inference
