// --memory-model bytes and the SwinUNETR planner: invariants of what they choose (the choices are
// the model's, so the tests check the rules, not numbers copied from the code).
#include <gtest/gtest.h>

#include "core/error.h"
#include "planning/memory_model.h"
#include "planning/planner.h"
#include "plans/plans.h"
#include "planning_fixtures.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

constexpr double SwinGiB = 1073741824.0;

ConfigurationPlan config_of(const ordered_json& plans, const std::string& name) {
  return configuration_from_json(json::parse(plans["configurations"][name].dump()), name, "plans");
}

ordered_json swin_plan(const json& fp, const json& ds, PlannerOptions o) {
  o.dataset_name = "Dataset999_X";
  return plan_experiment(fingerprint_from_json(fp, "fp"), dataset_json_from_json(ds, "ds"), o);
}

int64_t peak(const ConfigurationPlan& c, int batch, int in_ch, int classes, int ckpt = -1) {
  MemoryOptions m;
  if (ckpt >= 0) m.checkpointing = ckpt == 1;
  return estimate_training_memory(c.architecture, c.patch_size, batch, in_ch, classes, m).peak_bytes;
}

const json kSwinIsoFp = test::uniform_fingerprint({1, 1, 1}, {400, 400, 400}, 50);
const json kSwinIsoDs = test::dataset_json({"CT"}, 14, 50);

}  // namespace

TEST(PlanningBytesModel, EveryConfigurationCarriesAnEstimate) {
  const auto p = swin_plan(kSwinIsoFp, kSwinIsoDs, PlannerOptions{});
  for (const auto& [name, c] : p["configurations"].items()) {
    if (!c.contains("patch_size")) continue;  // 3d_cascade_fullres inherits
    ASSERT_TRUE(c.contains("medseg")) << name;
    EXPECT_EQ(c["medseg"]["memory_model"], "proxy");
    EXPECT_GT(c["medseg"]["estimated_peak_bytes"].get<int64_t>(), 0);
    EXPECT_TRUE(c["medseg"]["memory"]["breakdown"].contains("saved_activations"));
  }
  const Plans parsed = plans_from_json(json::parse(p.dump()), "p");
  EXPECT_TRUE(parsed.configuration("3d_fullres").medseg.estimated_peak_bytes.has_value());
}

TEST(PlanningBytesModel, PatchAndBatchFitTheBudget) {
  PlannerOptions o;
  o.memory_model = MemoryModelKind::Bytes;
  o.gpu_memory_target_gb = 8;
  const auto p = swin_plan(kSwinIsoFp, kSwinIsoDs, o);
  const double budget = 8 * SwinGiB * 0.9;
  for (const char* name : {"3d_fullres", "2d"}) {
    const auto c = config_of(p, name);
    EXPECT_EQ(p["configurations"][name]["medseg"]["memory_model"], "bytes");
    EXPECT_GE(c.batch_size, 2);
    EXPECT_LE(peak(c, c.batch_size, 1, 14), budget) << name;
    // Either the 5% cap stopped the batch or one more sample would not fit.
    const int64_t cap =
        static_cast<int64_t>(400.0 * 400 * 400 * 50 * 0.05 /
                                 (c.dim() == 3 ? double(c.patch_size[0]) * c.patch_size[1] * c.patch_size[2]
                                               : double(c.patch_size[0]) * c.patch_size[1]) +
                             0.5);
    if (c.batch_size < cap) { EXPECT_GT(peak(c, c.batch_size + 1, 1, 14), budget) << name; }
  }
  // A larger target never gives a smaller 3d patch.
  o.gpu_memory_target_gb = 40;
  const auto big = config_of(swin_plan(kSwinIsoFp, kSwinIsoDs, o), "3d_fullres");
  const auto small = config_of(p, "3d_fullres");
  EXPECT_GE(double(big.patch_size[0]) * big.patch_size[1] * big.patch_size[2],
            double(small.patch_size[0]) * small.patch_size[1] * small.patch_size[2]);
}

TEST(PlanningSwin, PatchDivisibleBy32AndFeatureSizeByTarget) {
  PlannerOptions o;
  o.planner = "SwinUNETRPlanner";
  o.gpu_memory_target_gb = 24;
  const auto p = swin_plan(kSwinIsoFp, kSwinIsoDs, o);
  EXPECT_FALSE(p["configurations"].contains("3d_lowres"));
  const auto c = config_of(p, "3d_fullres");
  ASSERT_TRUE(c.architecture.is_swin_unetr());
  EXPECT_EQ(c.architecture.network_class_name, "medseg.SwinUNETR");
  EXPECT_EQ(c.architecture.swin->feature_size, 48);
  EXPECT_EQ(c.architecture.swin->window_size, 7);
  for (int x : c.patch_size) EXPECT_EQ(x % 32, 0);
  // Its own preprocessed data (issue 26): preprocessing it never rewrites nnUNetPlans' 3d_fullres data.
  EXPECT_EQ(c.data_identifier, "medsegSwinUNETRPlans_3d_fullres");
  EXPECT_LE(peak(c, c.batch_size, 1, 14), 24 * SwinGiB * 0.9);
  o.gpu_memory_target_gb = 8;
  EXPECT_EQ(config_of(swin_plan(kSwinIsoFp, kSwinIsoDs, o), "3d_fullres").architecture.swin->feature_size, 24);
}

// docs/plans.md, SwinUNETRPlanner: at each patch (starting from the median cube here, which is
// already a multiple of 32), use it without checkpointing if batch 2 fits, else with checkpointing
// if that fits, else shrink. For a median cube of M (32: nothing left to shrink; 64: a smaller patch
// would fit without checkpointing) the model's peaks at M^3, batch 2, with checkpointing off and on
// bound two targets: one between them must give checkpointing at M^3, one above both must not.
// The peaks are the byte model's; what is under test is the planner's choice between them.
TEST(PlanningSwin, CheckpointingOnlyWhenItIsWhatFits) {
  const json ds = test::dataset_json({"CT"}, 3, 50);
  PlannerOptions o;
  o.planner = "SwinUNETRPlanner";
  const double usable = SwinGiB * (1 - o.memory_headroom);
  for (int m : {32, 64}) {
    SCOPED_TRACE("median " + std::to_string(m) + "^3");
    const json fp = test::uniform_fingerprint({1, 1, 1}, {double(m), double(m), double(m)}, 50);
    o.gpu_memory_target_gb = 8;  // any target below 16 GB: feature size 24, as for the targets below
    auto c = config_of(swin_plan(fp, ds, o), "3d_fullres");
    ASSERT_EQ(c.architecture.swin->feature_size, 24);
    c.patch_size = {m, m, m};
    const double off = double(peak(c, 2, 1, 3, 0)), on = double(peak(c, 2, 1, 3, 1));
    ASSERT_LT(on, 0.9 * off) << "checkpointing must save memory for this test to mean anything";
    const struct {
      const char* name;
      double target_gb;
      bool checkpointing;
    } rows[] = {{"fits only with checkpointing", (on + off) / 2 / usable, true},
                {"fits without checkpointing", 1.2 * off / usable, false}};
    for (const auto& row : rows) {
      SCOPED_TRACE(row.name);
      ASSERT_LT(row.target_gb, 16.0);  // keeps feature size 24
      o.gpu_memory_target_gb = row.target_gb;
      ConfigurationPlan planned;
      try {
        planned = config_of(swin_plan(fp, ds, o), "3d_fullres");
      } catch (const Error& e) { FAIL() << "target " << row.target_gb << " GB: " << e.what(); }
      EXPECT_EQ(planned.patch_size, (std::vector<int>{m, m, m}));
      EXPECT_EQ(planned.architecture.swin->use_checkpoint, row.checkpointing);
      EXPECT_LE(peak(planned, 2, 1, 3), row.target_gb * usable);
    }
  }
  // Targets that only the large dataset reaches: whatever the planner picks keeps the rule.
  for (double gb : {8.0, 11.0, 16.0, 24.0, 40.0, 80.0}) {
    SCOPED_TRACE(gb);
    o.gpu_memory_target_gb = gb;
    const auto c = config_of(swin_plan(kSwinIsoFp, kSwinIsoDs, o), "3d_fullres");
    const double budget = gb * usable;
    if (c.architecture.swin->use_checkpoint) { EXPECT_GT(peak(c, 2, 1, 14, 0), budget); }
    EXPECT_LE(peak(c, 2, 1, 14), budget);
  }
}

TEST(PlanningSwin, SmallTargetThatCannotFitIsAClearError) {
  PlannerOptions o;
  o.planner = "SwinUNETRPlanner";
  o.gpu_memory_target_gb = 0.05;
  EXPECT_THROW(swin_plan(kSwinIsoFp, kSwinIsoDs, o), Error);
}
