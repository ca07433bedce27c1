// DC_and_CE loss, ignore label, deep supervision weights and validation Dice counts against
// values computed by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "training/loss.h"

using namespace medseg::training;

namespace {

// Two-class logits (bg logit 0, fg logit z) whose softmax foreground probability is p.
at::Tensor two_class_logits(const std::vector<float>& p_fg) {
  std::vector<float> data(2 * p_fg.size(), 0.f);
  for (std::size_t i = 0; i < p_fg.size(); ++i) data[p_fg.size() + i] = std::log(p_fg[i] / (1 - p_fg[i]));
  return torch::tensor(data).reshape({1, 2, 2, 2});
}

constexpr double kSmooth = 1e-5;

}  // namespace

// p_fg = [0.75, 0.25, 0.5, 0.8], target = [1, 0, 1, 0] (one 2x2 image):
//   Dice(fg): I = 0.75 + 0.5 = 1.25, sum_pred = 2.3, sum_gt = 2 -> (2.5 + s) / (4.3 + s)
//   CE = mean(-ln .75, -ln .75, -ln .5, -ln .2)
TEST(TrainingLoss, DiceAndCrossEntropyMatchHandValues) {
  const auto logits = two_class_logits({0.75f, 0.25f, 0.5f, 0.8f});
  const auto target = torch::tensor({1, 0, 1, 0}).reshape({1, 1, 2, 2});
  const double dice = (2.5 + kSmooth) / (4.3 + kSmooth);
  const double ce = (-2 * std::log(0.75) - std::log(0.5) - std::log(0.2)) / 4;
  EXPECT_NEAR(soft_dice_loss(logits, target).item<double>(), -dice, 1e-6);
  EXPECT_NEAR(robust_cross_entropy(logits, target).item<double>(), ce, 1e-6);
  EXPECT_NEAR(dice_ce_loss(logits, target).item<double>(), ce - dice, 1e-6);
  EXPECT_NEAR(dice_ce_loss(logits, target).item<double>(), 0.1380907, 1e-6);
  // Target without the channel axis is accepted too.
  EXPECT_NEAR(dice_ce_loss(logits, target.squeeze(1)).item<double>(), ce - dice, 1e-6);
}

// Same image, pixel 1 labelled -1: it leaves both terms.
//   Dice: I = 1.25, sum_pred = 0.75 + 0.5 + 0.8 = 2.05, sum_gt = 2 -> (2.5 + s) / (4.05 + s)
//   CE = mean over 3 voxels (-ln .75, -ln .5, -ln .2)
TEST(TrainingLoss, IgnoreLabelIsMaskedInDiceAndCrossEntropy) {
  const auto logits = two_class_logits({0.75f, 0.25f, 0.5f, 0.8f});
  const auto target = torch::tensor({1, -1, 1, 0}).reshape({1, 1, 2, 2});
  const double dice = (2.5 + kSmooth) / (4.05 + kSmooth);
  const double ce = (-std::log(0.75) - std::log(0.5) - std::log(0.2)) / 3;
  EXPECT_NEAR(soft_dice_loss(logits, target).item<double>(), -dice, 1e-6);
  EXPECT_NEAR(robust_cross_entropy(logits, target).item<double>(), ce, 1e-6);

  // Gradients do not flow from ignored voxels.
  auto l = logits.clone().requires_grad_(true);
  dice_ce_loss(l, target).backward();
  EXPECT_EQ(l.grad().index({0, torch::indexing::Slice(), 0, 1}).abs().sum().item<float>(), 0.f);

  // Everything ignored: CE is 0 (not NaN) and Dice is -smooth/smooth = -1.
  const auto all_ignored = torch::full({1, 1, 2, 2}, -1);
  EXPECT_EQ(robust_cross_entropy(logits, all_ignored).item<double>(), 0.0);
  EXPECT_NEAR(soft_dice_loss(logits, all_ignored).item<double>(), -1.0, 1e-6);
}

// nnU-Net's ignore label is a dataset value (here 2, after background 0 and class 1): the same
// hand values as above once it is turned into the loss's ignore value, and padding (-1) stays
// ignored beside it.
TEST(TrainingLoss, DatasetIgnoreLabelIsMaskedLikePadding) {
  const auto logits = two_class_logits({0.75f, 0.25f, 0.5f, 0.8f});
  const auto target = torch::tensor({1, 2, 1, 0}).reshape({1, 1, 2, 2});
  const auto masked = ignore_label_as_padding(target, 2);
  EXPECT_TRUE(masked.equal(torch::tensor({1, -1, 1, 0}).reshape({1, 1, 2, 2})));
  EXPECT_TRUE(target.equal(torch::tensor({1, 2, 1, 0}).reshape({1, 1, 2, 2}))) << "the batch is not changed";
  EXPECT_TRUE(ignore_label_as_padding(target, std::nullopt).equal(target));
  const double dice = (2.5 + kSmooth) / (4.05 + kSmooth);
  const double ce = (-std::log(0.75) - std::log(0.5) - std::log(0.2)) / 3;
  EXPECT_NEAR(dice_ce_loss(logits, masked).item<double>(), ce - dice, 1e-6);
  const auto with_padding = ignore_label_as_padding(torch::tensor({1, 2, 1, -1}).reshape({1, 1, 2, 2}), 2);
  EXPECT_NEAR(robust_cross_entropy(logits, with_padding).item<double>(), (-std::log(0.75) - std::log(0.5)) / 2, 1e-6);
}

// Two samples: the one above and p_fg = 0.5 everywhere with an all-background target
// (I = 0, sum_pred = 2, sum_gt = 0).
TEST(TrainingLoss, BatchDicePoolsOverTheBatch) {
  const auto logits =
      torch::cat({two_class_logits({0.75f, 0.25f, 0.5f, 0.8f}), two_class_logits({.5f, .5f, .5f, .5f})});
  const auto target = torch::cat({torch::tensor({1, 0, 1, 0}).reshape({1, 1, 2, 2}), torch::zeros({1, 1, 2, 2})});
  const double d0 = (2.5 + kSmooth) / (4.3 + kSmooth), d1 = kSmooth / (2 + kSmooth);
  DiceCeOptions per_sample;
  EXPECT_NEAR(soft_dice_loss(logits, target, per_sample).item<double>(), -(d0 + d1) / 2, 1e-6);
  DiceCeOptions batch;
  batch.batch_dice = true;
  EXPECT_NEAR(soft_dice_loss(logits, target, batch).item<double>(), -(2.5 + kSmooth) / (6.3 + kSmooth), 1e-6);
}

// Three classes, one pixel per class with near-certain correct predictions except pixel 3:
// do_bg=false averages Dice over classes 1 and 2 only.
TEST(TrainingLoss, BackgroundIsExcludedAndForegroundClassesAveraged) {
  // probabilities per pixel (bg, c1, c2): p0 = (1,0,0) target 0; p1 = (0,1,0) target 1;
  // p2 = (0,.5,.5) target 2; p3 = (0,0,1) target 2
  const double big = 40;                                 // softmax of (big, 0, 0) is 1 up to 1e-17
  const auto logits = torch::tensor({big, 0., -big, 0.,  // bg channel
                                     0., big, 1., 0.,    // class 1
                                     0., 0., 1., big},   // class 2
                                    torch::kDouble)
                          .reshape({1, 3, 2, 2});
  const auto target = torch::tensor({0, 1, 2, 2}).reshape({1, 1, 2, 2});
  // class 1: I = 1, pred = 1 + .5 = 1.5, gt = 1 -> 2/2.5; class 2: I = .5 + 1, pred = 1.5, gt = 2 -> 3/3.5
  const double d1 = (2 + kSmooth) / (2.5 + kSmooth), d2 = (3 + kSmooth) / (3.5 + kSmooth);
  EXPECT_NEAR(soft_dice_loss(logits, target).item<double>(), -(d1 + d2) / 2, 1e-9);
}

TEST(TrainingLoss, DeepSupervisionWeightsMatchNnUNet) {
  const auto w = deep_supervision_weights(5);
  const std::vector<double> expected = {1 / 1.875, 0.5 / 1.875, 0.25 / 1.875, 0.125 / 1.875, 0.0};
  ASSERT_EQ(w.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(w[i], expected[i], 1e-12);
  EXPECT_NEAR(w[0], 0.533, 1e-3);
  EXPECT_NEAR(w[1], 0.267, 1e-3);
  EXPECT_NEAR(w[2], 0.133, 1e-3);
  EXPECT_NEAR(w[3], 0.067, 1e-3);
  EXPECT_EQ(deep_supervision_weights(1), std::vector<double>{1.0});
  const auto ddp = deep_supervision_weights(3, true);  // [1, .5, 1e-6] / 1.500001
  EXPECT_NEAR(ddp[2], 1e-6 / 1.500001, 1e-15);
}

TEST(TrainingLoss, DeepSupervisionLossIsTheWeightedSum) {
  const auto hi = two_class_logits({0.75f, 0.25f, 0.5f, 0.8f});
  const auto hi_t = torch::tensor({1, 0, 1, 0}).reshape({1, 1, 2, 2});
  const auto lo = torch::zeros({1, 2, 1, 1});  // p = .5: CE = ln 2, Dice = (1 + s)/(1.5 + s)
  const auto lo_t = torch::ones({1, 1, 1, 1});
  const double l_hi = 0.1380907, l_lo = std::log(2.0) - (1 + kSmooth) / (1.5 + kSmooth);
  EXPECT_NEAR(deep_supervision_loss({hi, lo}, {hi_t, lo_t}, {0.75, 0.25}).item<double>(), 0.75 * l_hi + 0.25 * l_lo,
              1e-6);
  // A weight of 0 drops the term even if it would be NaN.
  const auto nan_out = torch::full({1, 2, 1, 1}, std::nan(""));
  EXPECT_NEAR(deep_supervision_loss({hi, nan_out}, {hi_t, lo_t}, {1.0, 0.0}).item<double>(), l_hi, 1e-6);
}

// pred (argmax) = [[1, 2], [1, 1]], target = [[1, 1], [-1, 0]]:
//   class 1: tp (0,0); fp (1,1); fn (0,1); (1,0) is ignored although predicted 1
//   class 2: fp (0,1)
TEST(TrainingLoss, GlobalDiceCountsFromArgmax) {
  auto logits = torch::zeros({1, 3, 2, 2});
  logits.index_put_({0, 1, 0, 0}, 5);
  logits.index_put_({0, 2, 0, 1}, 5);
  logits.index_put_({0, 1, 1, 0}, 5);
  logits.index_put_({0, 1, 1, 1}, 5);
  const auto target = torch::tensor({1, 1, -1, 0}).reshape({1, 1, 2, 2});
  const DiceCounts c = global_dice_counts(logits, target);
  EXPECT_EQ(c.tp, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(c.fp, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.fn, (std::vector<int64_t>{1, 0}));
  DiceCounts sum = c;
  sum += c;
  EXPECT_EQ(sum.tp, (std::vector<int64_t>{2, 0}));
  const auto d = sum.dice();
  EXPECT_DOUBLE_EQ(d[0], 4.0 / 8.0);  // 2*2 / (2*2 + 2 + 2)
  EXPECT_DOUBLE_EQ(d[1], 0.0);
  DiceCounts empty{{0}, {0}, {0}};
  EXPECT_TRUE(std::isnan(empty.dice()[0]));
}
