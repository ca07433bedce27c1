// Region-based training (nnU-Net's DC_and_BCE_loss, ConvertSegmentationToRegionsTransform and the
// region pseudo Dice), checked against hand-computed values and torch's own binary cross-entropy.
#include <gtest/gtest.h>
#include <ATen/ATen.h>

#include <cmath>

#include "data/region_targets.h"
#include "training/loss.h"

using namespace medseg;
using namespace medseg::training;

namespace {

// (1, C, 1, 2, 3) from two rows of three values per channel.
at::Tensor volume(const std::vector<std::vector<float>>& channels) {
  std::vector<float> flat;
  for (const auto& c : channels) flat.insert(flat.end(), c.begin(), c.end());
  return at::tensor(flat).reshape({1, static_cast<int64_t>(channels.size()), 1, 2, 3});
}

const std::vector<std::vector<int>> kBrats = {{1, 2, 3}, {2, 3}, {3}};

}  // namespace

// labels [[0 1 2] [3 -1 2]]: whole tumour {1,2,3}, core {2,3}, enhancing {3}, ignore (-1) last.
TEST(RegionTargets, OneChannelPerRegionAndTheIgnoreMaskLast) {
  const at::Tensor labels = at::tensor({0, 1, 2, 3, -1, 2}, at::kShort).reshape({1, 1, 1, 2, 3});
  const at::Tensor t = data::region_targets(labels, kBrats, true);
  const at::Tensor expected = volume({{0, 1, 1, 1, 0, 1}, {0, 0, 1, 1, 0, 1}, {0, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 1, 0}});
  ASSERT_EQ(t.sizes(), expected.sizes());
  EXPECT_TRUE(at::equal(t, expected)) << t;
  const at::Tensor no_ignore = data::region_targets(labels, kBrats, false);
  EXPECT_TRUE(at::equal(no_ignore, expected.slice(1, 0, 3)));
  EXPECT_THROW(data::region_targets(labels, {}, false), std::exception);
  EXPECT_THROW(data::region_targets(labels.reshape({1, 2, 3}), kBrats, false), std::exception) << "no channel axis";
}

// BCE: the mean over voxels and regions equals torch's; every logit 0 gives ln 2. With the ignore
// channel nnU-Net divides by the valid voxels, not voxels x regions: 4 valid voxels x 2 regions x
// ln 2 / 4 = 2 ln 2.
TEST(RegionLoss, BinaryCrossEntropyMatchesTorchAndNnUNetsMask) {
  at::manual_seed(3);
  const at::Tensor logits = at::randn({2, 2, 3, 4, 5});
  const at::Tensor target = at::randint(0, 2, {2, 2, 3, 4, 5}).to(at::kFloat);
  DiceCeOptions o;
  o.regions = true;
  const double ours = region_bce_loss(logits, target, o).item<double>();
  const double torch_mean = at::binary_cross_entropy_with_logits(logits, target).item<double>();
  EXPECT_NEAR(ours, torch_mean, 1e-6);

  const at::Tensor zeros = at::zeros({1, 2, 1, 2, 3});
  EXPECT_NEAR(region_bce_loss(zeros, volume({{1, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}}), o).item<double>(), std::log(2.0),
              1e-6);
  o.ignore_channel = true;
  const at::Tensor with_ignore = volume({{1, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 1}});
  EXPECT_NEAR(region_bce_loss(zeros, with_ignore, o).item<double>(), 2 * std::log(2.0), 1e-6);
}

// Sigmoid Dice with every region counted: logits 0 give p = 0.5. Channel 0 has 2 of 6 voxels,
// channel 1 none: dc0 = (2*0.5*2 + s) / (2 + 3 + s), dc1 = s / (3 + s). Masking voxels 4 and 5:
// dc0 = (2 + s) / (2 + 2 + s), dc1 = s / (2 + s).
TEST(RegionLoss, SigmoidDiceCountsEveryRegionAndHonoursTheMask) {
  const double s = 1e-5;
  const at::Tensor zeros = at::zeros({1, 2, 1, 2, 3});
  DiceCeOptions o;
  o.regions = true;
  o.do_bg = false;  // has no effect for regions: there is no background channel
  const at::Tensor t = volume({{1, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}});
  EXPECT_NEAR(soft_dice_loss(zeros, t, o).item<double>(), -((2 + s) / (5 + s) + s / (3 + s)) / 2, 1e-6);
  o.ignore_channel = true;
  const at::Tensor masked = volume({{1, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 1}});
  EXPECT_NEAR(soft_dice_loss(zeros, masked, o).item<double>(), -((2 + s) / (4 + s) + s / (2 + s)) / 2, 1e-6);
  // The total is BCE + Dice, and it trains: gradients reach the logits.
  const at::Tensor x = zeros.clone().requires_grad_(true);
  const at::Tensor loss = dice_ce_loss(x, masked, o);
  EXPECT_NEAR(loss.item<double>(), 2 * std::log(2.0) - ((2 + s) / (4 + s) + s / (2 + s)) / 2, 1e-6);
  loss.backward();
  EXPECT_TRUE(x.grad().isfinite().all().item<bool>());
  EXPECT_GT(x.grad().abs().sum().item<double>(), 0);
  EXPECT_EQ(x.grad().slice(4, 1, 3).select(3, 1).abs().sum().item<double>(), 0) << "masked voxels get no gradient";
  // A target without the ignore channel is refused when one is expected.
  EXPECT_THROW(dice_ce_loss(x, t, o), std::exception);
}

// Region pseudo Dice from logit > 0, hand-counted on overlapping regions with one ignored voxel (1,0):
//   logits r0 [+ + -][+ - +], r1 [- + -][+ + -]; targets r0 [1 1 0][0 1 1], r1 [0 1 0][0 0 1].
//   r0: tp 3, fp 0, fn 1;  r1: tp 1, fp 1, fn 1. Without the mask (1,0) is a false positive of both.
TEST(RegionLoss, PseudoDiceCountsPerRegionWithTheIgnoreMask) {
  const at::Tensor logits = volume({{1, 1, -1, 1, -1, 1}, {-1, 1, -1, 1, 1, -1}});
  const at::Tensor target = volume({{1, 1, 0, 0, 1, 1}, {0, 1, 0, 0, 0, 1}, {0, 0, 0, 1, 0, 0}});
  const DiceCounts c = region_dice_counts(logits, target, true);
  EXPECT_EQ(c.tp, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(c.fp, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(c.fn, (std::vector<int64_t>{1, 1}));
  const DiceCounts u = region_dice_counts(logits, target.slice(1, 0, 2), false);
  EXPECT_EQ(u.fp, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(c.dice()[0], 6.0 / 7.0, 1e-12);
  EXPECT_NEAR(c.dice()[1], 0.5, 1e-12);
}
