#include "training/loss.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.h"

namespace medseg::training {
namespace {

// Target as (B, 1, *spatial) long labels.
at::Tensor labels_of(const at::Tensor& logits, const at::Tensor& target) {
  at::Tensor t = target;
  if (t.dim() == logits.dim() - 1) t = t.unsqueeze(1);
  MEDSEG_CHECK(t.dim() == logits.dim() && t.size(1) == 1 && t.size(0) == logits.size(0) &&
                   t.sizes().slice(2) == logits.sizes().slice(2),
               "loss: target shape ", c10::str(target.sizes()), " does not match logits ", c10::str(logits.sizes()),
               " (expected (B,1,*spatial) labels)");
  return t.to(at::kLong);
}

std::vector<int64_t> spatial_axes(const at::Tensor& x) {
  std::vector<int64_t> axes(static_cast<std::size_t>(x.dim() - 2));
  std::iota(axes.begin(), axes.end(), 2);
  return axes;
}

}  // namespace

at::Tensor ignore_label_as_padding(const at::Tensor& target, std::optional<int> dataset_ignore_label) {
  if (!dataset_ignore_label) return target;
  return target.masked_fill(target.eq(*dataset_ignore_label), -1);
}

namespace {

// Region targets split into (region channels, mask or undefined); checks the shapes.
std::pair<at::Tensor, at::Tensor> region_parts(const at::Tensor& logits, const at::Tensor& target,
                                               const DiceCeOptions& o) {
  const int64_t extra = o.ignore_channel ? 1 : 0;
  MEDSEG_CHECK(target.dim() == logits.dim() && target.size(0) == logits.size(0) &&
                   target.size(1) == logits.size(1) + extra && target.sizes().slice(2) == logits.sizes().slice(2),
               "loss: region target shape ", c10::str(target.sizes()), " does not match logits ",
               c10::str(logits.sizes()),
               (o.ignore_channel ? " (expected one channel per region + the ignore mask)"
                                 : " (expected one channel per region)"));
  const at::Tensor t = target.to(logits.scalar_type());
  if (!o.ignore_channel) return {t, at::Tensor()};
  return {t.slice(1, 0, logits.size(1)), 1 - t.slice(1, logits.size(1))};
}

// MemoryEfficientSoftDiceLoss on probabilities `x`, one-hot `onehot` and an optional mask
// (B, 1, *spatial; undefined = every voxel counts).
at::Tensor soft_dice(const at::Tensor& x, const at::Tensor& onehot, const at::Tensor& mask, const DiceCeOptions& o) {
  const auto axes = spatial_axes(x);
  at::Tensor sum_gt, intersect, sum_pred;
  {
    at::NoGradGuard no_grad;
    sum_gt = (mask.defined() ? onehot * mask : onehot).sum(axes);
  }
  const at::Tensor xm = mask.defined() ? x * mask : x;
  intersect = (xm * onehot).sum(axes);
  sum_pred = xm.sum(axes);
  if (o.spatial_sum) {  // one collective for the three: the whole patch's counts
    const at::Tensor pooled = o.spatial_sum(at::stack({intersect, sum_pred, sum_gt.to(intersect.scalar_type())}));
    intersect = pooled[0];
    sum_pred = pooled[1];
    sum_gt = pooled[2];
  }
  if (o.batch_dice) {
    intersect = intersect.sum(0);
    sum_pred = sum_pred.sum(0);
    sum_gt = sum_gt.sum(0);
    if (o.batch_sum) {
      // One collective for the three: the counts of the global batch, gradients to every share.
      const at::Tensor pooled = o.batch_sum(at::stack({intersect, sum_pred, sum_gt.to(intersect.scalar_type())}));
      intersect = pooled[0];
      sum_pred = pooled[1];
      sum_gt = pooled[2];
    }
  }
  const at::Tensor dc = (2 * intersect + o.smooth) / at::clamp_min(sum_gt + sum_pred + o.smooth, 1e-8);
  return -dc.mean();
}

}  // namespace

at::Tensor soft_dice_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o) {
  if (o.regions) {
    const auto [onehot, mask] = region_parts(logits, target, o);
    return soft_dice(at::sigmoid(logits), onehot, mask, o);
  }
  const at::Tensor labels = labels_of(logits, target);
  at::Tensor onehot, mask;
  {
    at::NoGradGuard no_grad;
    mask = labels.ne(o.ignore_label);
    // Ignored voxels get label 0 for the one-hot; the mask removes them from every sum.
    const at::Tensor clean = labels.masked_fill(mask.logical_not(), 0);
    onehot = at::zeros(logits.sizes(), logits.options().dtype(at::kBool)).scatter_(1, clean, true);
    mask = mask.to(logits.scalar_type());
  }
  at::Tensor x = at::softmax(logits, 1);
  if (!o.do_bg) {
    x = x.slice(1, 1);
    onehot = onehot.slice(1, 1);
  }
  return soft_dice(x, onehot, mask, o);
}

at::Tensor region_bce_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o) {
  const auto [t, mask] = region_parts(logits, target, o);
  at::Tensor sum, count;
  if (mask.defined()) {
    sum = (at::binary_cross_entropy_with_logits(logits, t, {}, {}, at::Reduction::None) * mask).sum();
    count = mask.sum();
  } else {
    sum = at::binary_cross_entropy_with_logits(logits, t, {}, {}, at::Reduction::Sum);
    count = at::full({}, static_cast<double>(t.numel()), sum.options());
  }
  if (o.spatial_sum) {  // the whole patch's sum and count, pooled over the slabs
    const at::Tensor pooled = o.spatial_sum(at::stack({sum, count.to(sum.scalar_type())}));
    sum = pooled[0];
    count = pooled[1];
  }
  return sum / at::clamp_min(count.detach(), 1e-8);
}

namespace {

// nnU-Net's TopKLoss: CE per voxel without reduction (ignored voxels give 0), then the mean of the
// largest int(numel * k / 100) values, numel counting every voxel.
at::Tensor topk_cross_entropy(const at::Tensor& logits, const at::Tensor& labels, const DiceCeOptions& o) {
  MEDSEG_CHECK(!o.spatial_sum,
               "loss: the top-k cross-entropy cannot be split over spatial-parallel slabs (train it without "
               "--spatial_parallel)");
  const at::Tensor per_voxel =
      at::cross_entropy_loss(logits, labels, /*weight=*/{}, at::Reduction::None, o.ignore_label, o.label_smoothing);
  const int64_t n = per_voxel.numel();
  const auto k = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * o.topk_percent / 100.0));
  return std::get<0>(at::topk(per_voxel.reshape({-1}), k, /*dim=*/0, /*largest=*/true, /*sorted=*/false)).mean();
}

}  // namespace

at::Tensor robust_cross_entropy(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o) {
  const at::Tensor labels = labels_of(logits, target).squeeze(1);
  if (o.topk_percent < 100) return topk_cross_entropy(logits, labels, o);
  if (o.spatial_sum) {
    // The mean over the whole patch's valid voxels: sum and count pooled over the slabs.
    const at::Tensor sum =
        at::cross_entropy_loss(logits, labels, /*weight=*/{}, at::Reduction::Sum, o.ignore_label, o.label_smoothing);
    const at::Tensor count = labels.ne(o.ignore_label).sum().to(sum.scalar_type());
    const at::Tensor pooled = o.spatial_sum(at::stack({sum, count}));
    if (pooled[1].item<double>() == 0) return pooled[0] * 0;  // every voxel ignored: 0, still in the graph
    return pooled[0] / pooled[1].detach();
  }
  if (!labels.ne(o.ignore_label).any().item<bool>()) return at::zeros({}, logits.options());
  return at::cross_entropy_loss(logits, labels, /*weight=*/{}, at::Reduction::Mean, o.ignore_label, o.label_smoothing);
}

at::Tensor dice_ce_loss(const at::Tensor& logits, const at::Tensor& target, const DiceCeOptions& o) {
  at::Tensor total = at::zeros({}, logits.options());
  if (o.weight_ce != 0)
    total = total +
            o.weight_ce * (o.regions ? region_bce_loss(logits, target, o) : robust_cross_entropy(logits, target, o));
  if (o.weight_dice != 0) total = total + o.weight_dice * soft_dice_loss(logits, target, o);
  return total;
}

std::vector<double> deep_supervision_weights(int n, bool ddp) {
  MEDSEG_CHECK(n > 0, "deep_supervision_weights: need at least one output");
  if (n == 1) return {1.0};
  std::vector<double> w(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) w[static_cast<std::size_t>(i)] = 1.0 / std::pow(2.0, i);
  w.back() = ddp ? 1e-6 : 0.0;
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (auto& v : w) v /= sum;
  return w;
}

at::Tensor deep_supervision_loss(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& targets,
                                 const std::vector<double>& weights, const DiceCeOptions& o) {
  MEDSEG_CHECK(!outputs.empty() && outputs.size() == targets.size() && outputs.size() == weights.size(),
               "deep_supervision_loss: ", outputs.size(), " outputs, ", targets.size(), " targets, ", weights.size(),
               " weights");
  at::Tensor total = at::zeros({}, outputs.front().options());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (weights[i] != 0.0) total = total + weights[i] * dice_ce_loss(outputs[i], targets[i], o);
  return total;
}

DiceCounts& DiceCounts::operator+=(const DiceCounts& o) {
  if (tp.empty()) {
    *this = o;
    return *this;
  }
  MEDSEG_CHECK(o.tp.size() == tp.size(), "DiceCounts: adding counts with a different number of classes");
  for (std::size_t c = 0; c < tp.size(); ++c) {
    tp[c] += o.tp[c];
    fp[c] += o.fp[c];
    fn[c] += o.fn[c];
  }
  return *this;
}

std::vector<double> DiceCounts::dice() const {
  std::vector<double> d(tp.size());
  for (std::size_t c = 0; c < tp.size(); ++c) {
    const double den = 2.0 * tp[c] + fp[c] + fn[c];
    d[c] = den > 0 ? 2.0 * tp[c] / den : std::numeric_limits<double>::quiet_NaN();
  }
  return d;
}

DiceCounts global_dice_counts(const at::Tensor& logits, const at::Tensor& target, int64_t ignore_label) {
  at::NoGradGuard no_grad;
  const at::Tensor labels = labels_of(logits, target).squeeze(1);
  const at::Tensor pred = logits.argmax(1);
  const at::Tensor valid = labels.ne(ignore_label);
  DiceCounts out;
  for (int64_t c = 1; c < logits.size(1); ++c) {
    const at::Tensor p = pred.eq(c).logical_and(valid), t = labels.eq(c);
    out.tp.push_back(p.logical_and(t).sum().item<int64_t>());
    out.fp.push_back(p.logical_and(t.logical_not()).sum().item<int64_t>());
    out.fn.push_back(t.logical_and(p.logical_not()).sum().item<int64_t>());
  }
  return out;
}

DiceCounts region_dice_counts(const at::Tensor& logits, const at::Tensor& target, bool ignore_channel) {
  at::NoGradGuard no_grad;
  DiceCeOptions o;
  o.regions = true;
  o.ignore_channel = ignore_channel;
  const auto [t, mask] = region_parts(logits, target, o);
  const at::Tensor pred = logits.gt(0);
  const at::Tensor gt = t.gt(0.5);
  const at::Tensor valid = mask.defined() ? mask.gt(0.5).expand_as(pred) : at::ones_like(pred);
  DiceCounts out;
  for (int64_t r = 0; r < logits.size(1); ++r) {
    const at::Tensor p = pred.select(1, r).logical_and(valid.select(1, r)), g = gt.select(1, r);
    out.tp.push_back(p.logical_and(g).sum().item<int64_t>());
    out.fp.push_back(p.logical_and(g.logical_not()).sum().item<int64_t>());
    out.fn.push_back(g.logical_and(p.logical_not()).sum().item<int64_t>());
  }
  return out;
}

}  // namespace medseg::training
