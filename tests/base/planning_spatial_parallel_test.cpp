// Planning for spatial parallelism (medseg_plan_experiment --spatial_parallel N): the slab-axis rule
// on hand-made cases, the per-rank memory estimate against the whole patch's, and the planner
// choosing a larger patch for the same per-rank target.
#include <gtest/gtest.h>

#include "core/error.h"
#include "planning/memory_model.h"
#include "planning/planner.h"
#include "plans/plans.h"
#include "planning/spatial_parallel.h"
#include "planning_fixtures.h"

using namespace medseg;
using namespace medseg::planning;

namespace {

// ResEnc-like, 5 stages, 3^3 kernels, isotropic strides 2 (total stride 16).
ArchitecturePlan resenc5() {
  const json k = {{"n_stages", 5},
                  {"features_per_stage", {32, 64, 128, 256, 320}},
                  {"conv_op", "torch.nn.modules.conv.Conv3d"},
                  {"kernel_sizes", 3},
                  {"strides", {1, 2, 2, 2, 2}},
                  {"n_blocks_per_stage", {1, 2, 2, 2, 2}},
                  {"n_conv_per_stage_decoder", {1, 1, 1, 1}},
                  {"conv_bias", true},
                  {"norm_op_kwargs", {{"eps", 1e-5}, {"affine", true}}},
                  {"nonlin_kwargs", {{"inplace", true}}}};
  return architecture_from_json({{"network_class_name", "x.ResidualEncoderUNet"}, {"arch_kwargs", k}}, "resenc");
}

int64_t voxels(const std::vector<int>& p) {
  int64_t v = 1;
  for (int x : p) v *= x;
  return v;
}

}  // namespace

TEST(PlanningSpatialParallel, TheSlabAxisIsTheLongestThatStaysAlignedWithTheStrides) {
  const std::vector<std::vector<int>> strides{{1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {1, 2, 2}};  // total 4, 8, 8
  EXPECT_EQ(total_strides(strides, 3), (std::vector<int>{4, 8, 8}));
  EXPECT_EQ(spatial_shard_axis({64, 128, 96}, strides, 2), 1);  // 128/2 = 64, a multiple of 8
  EXPECT_EQ(spatial_shard_axis({64, 80, 80}, strides, 2), 1);   // all aligned (32 = 8 x 4, 40 = 5 x 8): the longest
  EXPECT_EQ(spatial_shard_axis({40, 56, 40}, strides, 2), 0);   // y, x: 28, 20 not multiples of 8; z: 20 = 5 x 4
  EXPECT_EQ(spatial_shard_axis({36, 56, 40}, strides, 2), -1);  // 18 is not a multiple of 4
  EXPECT_EQ(spatial_shard_axis({64, 64, 64}, strides, 4), 0);   // a tie: the first
  EXPECT_EQ(spatial_shard_axis({64, 64, 64}, strides, 1), -1);  // nothing to split
  EXPECT_EQ(slab_patch({64, 128, 96}, 1, 2), (std::vector<int>{64, 64, 96}));
  EXPECT_THROW(slab_patch({64, 127, 96}, 1, 2), Error);
}

TEST(PlanningSpatialParallel, PerRankActivationsAreTheSlabsPlusHalos) {
  const ArchitecturePlan a = resenc5();
  const std::vector<int> patch{128, 128, 128};
  MemoryOptions one, two;
  two.spatial_parallel = 2;
  const MemoryEstimate full = estimate_training_memory(a, patch, 1, 1, 3, one);
  const MemoryEstimate rank = estimate_training_memory(a, patch, 1, 1, 3, two);
  const MemoryEstimate slab = estimate_training_memory(a, {64, 128, 128}, 1, 1, 3, one);
  // Weights and optimizer state are replicated; activations are one slab's plus the halo planes.
  EXPECT_EQ(rank.parameters, full.parameters);
  EXPECT_EQ(rank.optimizer_bytes, full.optimizer_bytes);
  EXPECT_GT(rank.activation_bytes, slab.activation_bytes);
  EXPECT_LT(rank.activation_bytes, 0.6 * static_cast<double>(full.activation_bytes));
  EXPECT_LT(rank.peak_bytes, full.peak_bytes);
  EXPECT_EQ(rank.input_bytes, slab.input_bytes);
  // A patch no axis splits into aligned slabs is refused with a reason.
  EXPECT_THROW(estimate_training_memory(a, {36, 36, 36}, 1, 1, 3, two), Error);
}

TEST(PlanningSpatialParallel, ThePlannerChoosesALargerPatchForTheSameTarget) {
  const json fp = test::uniform_fingerprint({1, 1, 1}, {512, 512, 512}, 20);
  const json ds = test::dataset_json({"CT"}, 2, 20);
  PlannerOptions o;
  o.dataset_name = "Dataset999_X";
  o.memory_model = MemoryModelKind::Bytes;
  o.gpu_memory_target_gb = 8;
  const auto f = fingerprint_from_json(fp, "fp");
  const auto d = dataset_json_from_json(ds, "ds");
  const auto config = [&](int n) {
    o.spatial_parallel = n;
    const ordered_json p = plan_experiment(f, d, o);
    return std::make_pair(configuration_from_json(json::parse(p["configurations"]["3d_fullres"].dump()), "c", "p"),
                          json::parse(p["configurations"]["3d_fullres"]["medseg"].dump()));
  };
  const auto [c1, m1] = config(1);
  const auto [c2, m2] = config(2);
  EXPECT_FALSE(m1.contains("spatial_parallel"));
  ASSERT_TRUE(m2.contains("spatial_parallel"));
  const int axis = m2["spatial_parallel"]["axis"].get<int>();
  EXPECT_EQ(axis, spatial_shard_axis(c2.patch_size, c2.architecture.strides, 2));
  EXPECT_EQ(m2["spatial_parallel"]["slab_patch_size"].get<std::vector<int>>(), slab_patch(c2.patch_size, axis, 2));
  // Same per-rank budget: the two-rank patch is larger; each rank's estimate fits the budget.
  const double v1 = static_cast<double>(voxels(c1.patch_size)), v2 = static_cast<double>(voxels(c2.patch_size));
  std::printf("patch 1 rank %s (%g vox, batch %d), 2 ranks %s (%g vox, batch %d)\n", json(c1.patch_size).dump().c_str(),
              v1, c1.batch_size, json(c2.patch_size).dump().c_str(), v2, c2.batch_size);
  EXPECT_GT(v2, 1.5 * v1) << "1 rank " << v1 << " voxels, 2 ranks " << v2;
  MemoryOptions two;
  two.spatial_parallel = 2;
  EXPECT_LE(estimate_training_memory(c2.architecture, c2.patch_size, c2.batch_size, 1, 3, two).peak_bytes,
            8 * 1073741824.0 * 0.9);
  // Swin and the proxy model are refused with a reason.
  o.memory_model = MemoryModelKind::Proxy;
  EXPECT_THROW(config(2), Error);
}
