#pragma once
// nnU-Net's training loss: DC_and_CE_loss = 1 * cross-entropy + 1 * (-soft Dice), with the soft
// Dice of MemoryEfficientSoftDiceLoss (softmax, background excluded, smooth 1e-5, optional batch
// Dice), voxels labelled `ignore_label` (-1) masked out of both terms, and the deep-supervision
// weighting 1/2^i (lowest resolution 0, normalised). Region-based datasets use DC_and_BCE_loss
// instead: a sigmoid per region, every channel in the Dice, binary cross-entropy, the ignore mask
// as the target's last channel (data/region_targets.h). See docs/training.md.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace medseg::training {

// Sums a tensor over the ranks of a data-parallel run, keeping the gradient path (identity for
// one process): batch Dice pools tp/fp/fn over the global batch, not the rank's share.
using BatchSumFn = std::function<at::Tensor(const at::Tensor&)>;

struct DiceCeOptions {
  bool batch_dice = false;  // pool tp/fp/fn over the batch before the Dice (plans' batch_dice)
  double smooth = 1e-5;
  bool do_bg = false;
  double weight_ce = 1.0;
  double weight_dice = 1.0;
  int64_t ignore_label = -1;  // voxels with this target value contribute to neither term
  // The CE term as nnU-Net's TopKLoss when < 100: per-voxel CE (ignored voxels 0), the mean of the
  // largest int(voxels * topk_percent / 100) of them, ignored voxels counted in `voxels` as nnU-Net does.
  double topk_percent = 100;
  double label_smoothing = 0;  // torch's CrossEntropyLoss label_smoothing
  BatchSumFn batch_sum;        // with batch_dice: pools the counts over ranks (empty: one process)
  // Spatial parallelism: logits and target are this rank's slab of every sample; sums the per-sample
  // Dice counts and the cross-entropy's sum and voxel count over the slabs (inside autograd), so the
  // loss is the whole patch's on every rank. Empty: the tensors are whole patches.
  BatchSumFn spatial_sum;
  // Region-based training: targets are (B, R [+1], *spatial) region channels, the loss is
  // weight_ce * BCE + weight_dice * soft Dice over sigmoids with every region counted (do_bg is
  // ignored). With `ignore_channel` the target's last channel marks voxels left out of both terms.
  bool regions = false;
  bool ignore_channel = false;
};

// logits: (B, C, *spatial). target: (B, 1, *spatial) or (B, *spatial), integer or float labels.
// Returns -mean Dice over (sample,) foreground class.
at::Tensor soft_dice_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o = {});

// Cross-entropy averaged over the non-ignored voxels (0 if every voxel is ignored); with
// o.topk_percent < 100 nnU-Net's TopKLoss instead (not under spatial parallelism: the top k of a
// patch split over ranks is not a sum of the slabs' parts, so it throws).
at::Tensor robust_cross_entropy(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o = {});

// A dataset's ignore label (dataset.json "ignore": K) as the loss's ignore value: voxels holding K
// become -1, which padding outside the image already holds. `target` is returned unchanged when
// the dataset has no ignore label.
at::Tensor ignore_label_as_padding(const at::Tensor& target, std::optional<int> dataset_ignore_label);

// Region mode: binary cross-entropy with logits, the mean over voxels and regions; with an ignore
// channel nnU-Net's masked form, sum(BCE * mask) / sum(mask) (per voxel, not per voxel and region).
at::Tensor region_bce_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o = {});

// weight_ce * CE + weight_dice * soft_dice_loss (regions: BCE and the sigmoid Dice).
at::Tensor dice_ce_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o = {});

// nnU-Net's deep-supervision weights for n outputs (highest resolution first): 1/2^i, the last one
// 0 (1e-6 with ddp, so every output takes part in the graph), normalised to sum 1. n == 1 -> {1}.
std::vector<double> deep_supervision_weights(int n, bool ddp = false);

// sum_i weights[i] * dice_ce_loss(outputs[i], targets[i]); terms with weight 0 are not computed.
at::Tensor deep_supervision_loss(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& targets,
                                 const std::vector<double>& weights, const DiceCeOptions& o = {});

// Hard counts for validation ("pseudo Dice"): per foreground class c = 1..C-1, from the argmax of
// `logits` against `target`, ignoring voxels labelled ignore_label. Summed over the batch.
struct DiceCounts {
  std::vector<int64_t> tp, fp, fn;
  DiceCounts& operator+=(const DiceCounts& o);
  // 2tp / (2tp + fp + fn) per class; NaN where the class is absent from both.
  std::vector<double> dice() const;
};
DiceCounts global_dice_counts(const at::Tensor& logits, const at::Tensor& target, int64_t ignore_label = -1);
// The same for regions, as nnU-Net's validation step: a region is predicted where its logit is
// above 0 (sigmoid > 0.5); every region counts; with `ignore_channel` the target's last channel
// masks voxels out of tp and fp (fn needs no mask: ignored voxels belong to no region).
DiceCounts region_dice_counts(const at::Tensor& logits, const at::Tensor& target, bool ignore_channel);

}  // namespace medseg::training
