// The settings behind nnU-Net's loss, schedule, optimizer, sampling, augmentation and norm variants
// (docs/trainer_variants.md), each against an independent fact: torch's own ops, nnU-Net's formulas
// worked by hand, and the validation pipeline for NoDA.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <cmath>

#include "core/error.h"
#include "data/batch.h"
#include "data/patch_sampler.h"
#include "bench_support/synthetic_cases.h"
#include "plans/plans.h"
#include "training/loss.h"
#include "training/optimizer.h"
#include "training/schedule.h"
#include "training/trainer_config.h"

using namespace medseg;
using namespace medseg::training;

namespace {

at::Tensor random_logits(int64_t c, uint64_t seed) {
  at::manual_seed(seed);
  return at::randn({2, c, 4, 5, 6}, at::kDouble);
}

at::Tensor random_labels(int64_t c, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(0, c, {2, 1, 4, 5, 6}, at::kLong);
}

}  // namespace

// nnU-Net's TopKLoss: per-voxel CE, the mean of the largest int(n * k / 100). Reference: a full sort.
TEST(LossVariants, TopKIsTheMeanOfTheLargestTenPercentOfTheVoxelTerms) {
  const at::Tensor logits = random_logits(3, 1), labels = random_labels(3, 2);
  DiceCeOptions o;
  o.topk_percent = 10;
  const at::Tensor per_voxel = -at::log_softmax(logits, 1).gather(1, labels).reshape({-1});
  const int64_t k = per_voxel.numel() * 10 / 100;  // 240 voxels -> 24
  ASSERT_EQ(k, 24);
  const at::Tensor expected = std::get<0>(per_voxel.sort(0, /*descending=*/true)).slice(0, 0, k).mean();
  EXPECT_NEAR(robust_cross_entropy(logits, labels, o).item<double>(), expected.item<double>(), 1e-12);
}

// Ignored voxels give 0 and still count in n, as nnU-Net's reduction-free CE does.
TEST(LossVariants, TopKCountsIgnoredVoxelsAsZeros) {
  const at::Tensor logits = random_logits(3, 3);
  at::Tensor labels = random_labels(3, 4);
  labels.view({-1}).slice(0, 0, 200).fill_(-1);  // 200 of 240 ignored
  DiceCeOptions o;
  o.topk_percent = 50;  // 120 values: 40 real terms and 80 zeros
  const at::Tensor valid = labels.ne(-1).reshape({-1});
  const at::Tensor terms = -at::log_softmax(logits, 1).gather(1, labels.clamp_min(0)).reshape({-1});
  const double expected = terms.masked_select(valid).sum().item<double>() / 120.0;
  EXPECT_NEAR(robust_cross_entropy(logits, labels, o).item<double>(), expected, 1e-12);
}

// torch's label smoothing: (1 - e) * (-log p_y) + e * mean_c(-log p_c), averaged over voxels.
TEST(LossVariants, LabelSmoothingFollowsTheFormula) {
  const at::Tensor logits = random_logits(4, 5), labels = random_labels(4, 6);
  DiceCeOptions o;
  o.label_smoothing = 0.1;
  const at::Tensor logp = at::log_softmax(logits, 1);
  const at::Tensor nll = -logp.gather(1, labels), uniform = -logp.mean(1, /*keepdim=*/true);
  const double expected = (0.9 * nll + 0.1 * uniform).mean().item<double>();
  EXPECT_NEAR(robust_cross_entropy(logits, labels, o).item<double>(), expected, 1e-12);
}

TEST(LossVariants, TopKRefusesSpatialSlabs) {
  DiceCeOptions o;
  o.topk_percent = 10;
  o.spatial_sum = [](const at::Tensor& t) { return t; };
  EXPECT_THROW(robust_cross_entropy(random_logits(2, 7), random_labels(2, 8), o), Error);
}

// CE only and Dice only are the single terms; no smoothing gives 2 tp / (2 tp + fp + fn) exactly.
TEST(LossVariants, SingleTermsAndUnsmoothedDice) {
  const at::Tensor logits = random_logits(3, 9), labels = random_labels(3, 10);
  DiceCeOptions ce_only, dice_only, no_smooth;
  ce_only.weight_dice = 0;
  dice_only.weight_ce = 0;
  no_smooth.smooth = 0;
  no_smooth.weight_ce = 0;
  EXPECT_NEAR(dice_ce_loss(logits, labels, ce_only).item<double>(),
              at::cross_entropy_loss(logits, labels.squeeze(1)).item<double>(), 1e-12);
  EXPECT_NEAR(dice_ce_loss(logits, labels, dice_only).item<double>(), soft_dice_loss(logits, labels).item<double>(),
              1e-12);
  // Hand form per (sample, foreground class), softmax probabilities as the soft prediction.
  const at::Tensor p = at::softmax(logits, 1);
  double sum = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 1; c < 3; ++c) {
      const at::Tensor pc = p[b][c], gt = labels[b][0].eq(c).to(at::kDouble);
      const double tp = (pc * gt).sum().item<double>();
      sum += 2 * tp / (pc.sum().item<double>() + gt.sum().item<double>());
    }
  EXPECT_NEAR(dice_ce_loss(logits, labels, no_smooth).item<double>(), -sum / 4, 1e-12);
}

// nnUNetTrainer_warmup: Lin_incr_LRScheduler then PolyLRScheduler_offset, worked by hand.
TEST(ScheduleVariants, WarmupThenPolyFromTheWarmupEnd) {
  const double lr0 = 0.01;
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 0, 1000, 0.9, 50), lr0 / 50);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 24, 1000, 0.9, 50), lr0 * 25 / 50);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 49, 1000, 0.9, 50), lr0);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 50, 1000, 0.9, 50), lr0);
  EXPECT_NEAR(scheduled_lr(LrSchedule::Poly, lr0, 525, 1000, 0.9, 50), lr0 * std::pow(0.5, 0.9), 1e-15);
  EXPECT_NEAR(scheduled_lr(LrSchedule::Cosine, lr0, 525, 1000, 0.9, 50), lr0 / 2, 1e-15);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 10, 100, 0.9, 0), poly_lr(lr0, 10, 100, 0.9));
  // A run cut shorter than its warm-up (--epochs 10 with a Primus trainer) warms up to its end, as nnU-Net's
  // Lin_incr_LRScheduler does.
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::Poly, lr0, 9, 10, 0.9, 50), lr0 * 10 / 50);
  EXPECT_THROW(scheduled_lr(LrSchedule::Poly, lr0, 0, 50, 0.9, -1), Error);
}

TEST(OptimizerVariants, AdamVariantsBuildTorchsOptimizersWithTheirSettings) {
  torch::nn::Conv3d conv(torch::nn::Conv3dOptions(1, 2, 3));
  const TrainerConfig adam = find_trainer_config("nnUNetTrainerAdam3en4");
  const auto a = make_optimizer(*conv, adam.optimizer);
  const auto* ao = dynamic_cast<const torch::optim::AdamWOptions*>(&a->param_groups()[0].options());
  ASSERT_NE(ao, nullptr);
  EXPECT_TRUE(ao->amsgrad());
  EXPECT_DOUBLE_EQ(ao->lr(), 3e-4);
  EXPECT_DOUBLE_EQ(ao->weight_decay(), 3e-5);
  const TrainerConfig vanilla = find_trainer_config("nnUNetTrainerVanillaAdam");
  const auto v = make_optimizer(*conv, vanilla.optimizer);
  const auto* vo = dynamic_cast<const torch::optim::AdamOptions*>(&v->param_groups()[0].options());
  ASSERT_NE(vo, nullptr);  // Adam with L2 decay, not AdamW
  EXPECT_FALSE(vo->amsgrad());
  EXPECT_DOUBLE_EQ(vo->lr(), 1e-2);
}

TEST(SamplingVariants, BatchTailShareIsNnUNetsEffectiveRate) {
  EXPECT_DOUBLE_EQ(data::batch_tail_share(2, 0.33), 0.5);   // round(1.34) = 1: sample 1 of 2
  EXPECT_DOUBLE_EQ(data::batch_tail_share(4, 0.33), 0.25);  // round(2.68) = 3: sample 3 of 4
  EXPECT_DOUBLE_EQ(data::batch_tail_share(3, 0.33), 1.0 / 3);
  EXPECT_DOUBLE_EQ(data::batch_tail_share(2, 0.0), 0.0);
}

namespace {

planning::ConfigurationPlan plan_3d(int bs) {
  planning::ConfigurationPlan p;
  p.name = "3d_fullres";
  p.patch_size = {8, 8, 8};
  p.batch_size = bs;
  p.architecture.strides = {{1, 1, 1}, {2, 2, 2}};
  p.use_mask_for_norm = {false};
  return p;
}

}  // namespace

// Probabilistic oversampling forces any sample position, about `oversample` of them; the default
// rule forces exactly the batch's tail.
TEST(SamplingVariants, ProbabilisticOversamplingForcesAnyPositionAtTheRate) {
  const auto cases = bench::make_synthetic_source(4, {10, 12, 12}, {12, 14, 14}, 1, 2, 7);
  data::PipelineConfig tail = data::validation_pipeline(plan_3d(2), false, 0.33);
  data::PipelineConfig prob = tail;
  prob.probabilistic_oversampling = true;
  prob.oversample = 0.5;
  int forced[2] = {0, 0}, tail_forced[2] = {0, 0};
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    const data::Batch b = data::build_batch(*cases, prob, 11, 0, i);
    const data::Batch t = data::build_batch(*cases, tail, 11, 0, i);
    for (int j = 0; j < 2; ++j) {
      forced[j] += b.forced_label[static_cast<size_t>(j)] >= 0 ? 1 : 0;
      tail_forced[j] += t.forced_label[static_cast<size_t>(j)] >= 0 ? 1 : 0;
    }
  }
  EXPECT_EQ(tail_forced[0], 0);
  EXPECT_EQ(tail_forced[1], n);
  for (int j = 0; j < 2; ++j) {  // binomial(200, 0.5): sd ~7, +-40 is more than 5 sd
    EXPECT_GT(forced[j], n / 2 - 40) << j;
    EXPECT_LT(forced[j], n / 2 + 40) << j;
  }
}

// nnUNetTrainerNoDA trains on what validation sees: final-size crops, unaugmented.
TEST(AugmentationVariants, NoDaBatchesAreValidationBatches) {
  const auto cases = bench::make_synthetic_source(4, {10, 12, 12}, {12, 14, 14}, 1, 2, 8);
  const data::PipelineConfig train = data::training_pipeline(plan_3d(2), true, 0.33);
  ASSERT_NE(train.loader_patch, train.final_patch);  // the enlarged patch that NoDA drops
  const data::PipelineConfig noda = data::without_augmentation(train);
  EXPECT_EQ(noda.loader_patch, noda.final_patch);
  const data::PipelineConfig val = data::validation_pipeline(plan_3d(2), true, 0.33);
  for (int i = 0; i < 3; ++i) {
    const data::Batch a = data::build_batch(*cases, noda, 5, 1, i), b = data::build_batch(*cases, val, 5, 1, i);
    EXPECT_EQ(a.keys, b.keys);
    EXPECT_TRUE(a.data.equal(b.data));
    ASSERT_EQ(a.target.size(), b.target.size());
    for (size_t t = 0; t < a.target.size(); ++t) EXPECT_TRUE(a.target[t].equal(b.target[t]));
  }
}

TEST(TrainerVariantSettings, TableRowsCarryNnUNetsValues) {
  const TrainerConfig topk = find_trainer_config("nnUNetTrainerTopk10LossLS01");
  EXPECT_EQ(topk.loss.weight_dice, 0);
  EXPECT_EQ(topk.loss.topk_percent, 10);
  EXPECT_EQ(topk.loss.label_smoothing, 0.1);
  EXPECT_EQ(find_trainer_config("nnUNetTrainerDiceLoss").loss.weight_ce, 0);
  EXPECT_EQ(find_trainer_config("nnUNetTrainerDiceCELoss_noSmooth").loss.dice_smooth, 0);
  EXPECT_EQ(find_trainer_config("nnUNetTrainerCELoss_5epochs").num_epochs, 5);
  EXPECT_EQ(find_trainer_config("nnUNetTrainer_warmup").warmup_epochs, 50);
  EXPECT_EQ(find_trainer_config("nnUNetTrainerBN").norm, NetworkNorm::Batch);
  const TrainerConfig noda = find_trainer_config("nnUNetTrainerNoDA");
  EXPECT_FALSE(noda.augment);
  EXPECT_TRUE(noda.mirror_axes(3).empty());
  EXPECT_EQ(find_trainer_config("nnUNetTrainer_probabilisticOversampling").oversampling,
            Oversampling::ProbabilisticBatchRate);
  const TrainerConfig p010 = find_trainer_config("nnUNetTrainer_probabilisticOversampling_010");
  EXPECT_EQ(p010.oversampling, Oversampling::Probabilistic);
  EXPECT_EQ(p010.oversample_foreground, 0.1);
}

TEST(TrainerVariantSettings, BadLossAndScheduleSettingsAreNamed) {
  const auto error_of = [](const json& j) {
    try {
      trainer_config_from_json(j, "cfg.json");
    } catch (const std::exception& e) { return std::string(e.what()); }
    return std::string();
  };
  EXPECT_NE(error_of({{"loss", {{"weight_ce", 0}, {"weight_dice", 0}}}}).find("weight_ce"), std::string::npos);
  EXPECT_NE(error_of({{"loss", {{"topk_percent", 0}}}}).find("topk_percent"), std::string::npos);
  EXPECT_NE(error_of({{"loss", {{"topk", 10}}}}).find("topk"), std::string::npos);
  EXPECT_NE(error_of({{"warmup_epochs", 10}, {"num_epochs", 10}}).find("warmup_epochs"), std::string::npos);
  EXPECT_NE(error_of({{"optimizer", {{"type", "SGD"}, {"amsgrad", true}}}}).find("amsgrad"), std::string::npos);
  EXPECT_NE(error_of({{"norm", "group"}}).find("norm"), std::string::npos);
  EXPECT_NE(error_of({{"oversampling", "sometimes"}}).find("oversampling"), std::string::npos);
}
