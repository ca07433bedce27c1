// The DC+CE loss on slabs (spatial parallelism): with the per-sample Dice counts and the
// cross-entropy's sum and count pooled over the slabs, every rank's loss is the whole patch's, and
// each rank's logit gradient is N times the whole-patch gradient's slab (the gradient convention of
// docs/spatial_parallel.md: averaging parameter gradients over the N ranks gives the exact one).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "distributed/process_group.h"
#include "rank_threads.h"
#include "training/loss.h"

using namespace medseg;
using namespace medseg::training;

namespace {

struct Case {
  at::Tensor logits, target;
};

Case make_case(bool with_ignored) {
  at::manual_seed(3);
  Case c;
  c.logits = at::randn({2, 3, 8, 12, 10}, at::kDouble) * 2;
  c.target = at::randint(0, 3, {2, 1, 8, 12, 10}, at::kLong);
  if (with_ignored) c.target.narrow(3, 0, 4).fill_(-1);  // ignored voxels all in the first slab
  return c;
}

void check(bool batch_dice, bool with_ignored) {
  const Case c = make_case(with_ignored);
  DiceCeOptions o;
  o.batch_dice = batch_dice;
  at::Tensor full_logits = c.logits.clone().requires_grad_(true);
  const at::Tensor full = dice_ce_loss(full_logits, c.target, o);
  const at::Tensor full_grad = torch::autograd::grad({full}, {full_logits})[0];
  run_ranks(2, [&](distributed::ProcessGroup& g) {
    at::set_num_threads(1);
    DiceCeOptions so = o;
    so.spatial_sum = [&g](const at::Tensor& t) { return distributed::all_reduce_sum_with_grad(t, &g); };
    at::Tensor mine = c.logits.narrow(3, 6 * g.rank(), 6).clone().requires_grad_(true);
    const at::Tensor loss = dice_ce_loss(mine, c.target.narrow(3, 6 * g.rank(), 6), so);
    EXPECT_NEAR(loss.item<double>(), full.item<double>(), 1e-12);
    const at::Tensor grad = torch::autograd::grad({loss}, {mine})[0];
    const at::Tensor expected = full_grad.narrow(3, 6 * g.rank(), 6) * 2;
    EXPECT_LT((grad - expected).abs().max().item<double>(), 1e-12) << "rank " << g.rank();
    EXPECT_GT(expected.abs().max().item<double>(), 1e-4);
  });
}

}  // namespace

TEST(TrainingSpatialLoss, SlabsGiveTheWholePatchLoss) { check(false, false); }
TEST(TrainingSpatialLoss, SlabsGiveTheWholePatchLossWithBatchDice) { check(true, false); }
TEST(TrainingSpatialLoss, IgnoredVoxelsInOneSlabOnly) { check(false, true); }
