// medseg_train --spatial_parallel 2 (docs/spatial_parallel.md): two ranks each holding one slab of
// every patch against a single process on the whole patches, checkpoints compared with
// `medseg_checkpoint diff`; and the bad combinations refused with one line.
//
// As in distributed_train_itk_test.cpp, the multi-iteration comparison runs at lr 1e-12 so that the
// momentum buffers (three iterations of gradients) are what is compared; the default-lr row compares
// the weights after one real step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/json_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// The plan of this dataset: patch 12x16x20, strides (1,1,1) (2,2,2) (1,2,2): y splits into two slabs of
// 8 (a multiple of its total stride 4); z (6 per slab, total stride 2) is shorter, x (10) not aligned.
struct SpatialDataset {
  test::TempDir dir{"sptrain"};
  SpatialDataset() {
    fs::create_directories(dir / "raw");
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 954 -n Slabs --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 5",
                           "MEDSEG_RAW=" + (dir / "raw"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    r = test::run_cli("medseg_plan_and_preprocess", "-d 954 -c 3d_fullres --np 2 --no_pbar",
                      "MEDSEG_RAW=" + (dir / "raw") + " MEDSEG_PREPROCESSED=" + (dir / "pre"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    std::ofstream(dir / "tiny_lr.json") << R"({"name": "nnUNetTrainer", "optimizer": {"type": "SGD", "lr": 1e-12,
      "weight_decay": 0, "momentum": 0.99, "nesterov": true}})";
  }
  // A copy of the plans with batch size `batch` and, if given, another patch.
  std::string plans(int batch, const std::vector<int>& patch = {}) const {
    std::string name = "B" + std::to_string(batch) + "Plans";
    for (int v : patch) name += "_" + std::to_string(v);
    const fs::path folder = fs::path(dir / "pre") / "Dataset954_Slabs";
    json p = read_json((folder / "nnUNetPlans.json").string());
    p["plans_name"] = name;
    p["configurations"]["3d_fullres"]["batch_size"] = batch;
    if (!patch.empty()) p["configurations"]["3d_fullres"]["patch_size"] = patch;
    write_json((folder / (name + ".json")).string(), p);
    return name;
  }
  std::string env(const std::string& results) const {
    return "MEDSEG_PREPROCESSED=" + (dir / "pre") + " MEDSEG_RESULTS=" + results;
  }
};

const SpatialDataset& spatial_dataset() {
  static SpatialDataset d;
  return d;
}

const char* kSpatialFlags =
    " --epochs 1 --val-iters-per-epoch 1 --num-workers 0 --threads 1 --deterministic --no_pbar --dist-timeout 30";

std::string checkpoint(const std::string& results, const std::string& plans) {
  return results + "/Dataset954_Slabs/nnUNetTrainer__" + plans + "__3d_fullres/fold_0/checkpoint_final.ckpt";
}

void expect_same_run(const std::string& plans, const std::string& flags, const std::string& tol) {
  test::TempDir d("speq");
  const std::string args = "954 3d_fullres 0 -p " + plans + " " + flags + kSpatialFlags;
  auto one = test::run_cli("medseg_train", args, spatial_dataset().env(d / "one"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = test::run_cli("medseg_train", args + " --spatial_parallel 2", spatial_dataset().env(d / "two"));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("2 ranks joined"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("slabs"), std::string::npos) << two.output;
  const auto r = test::run_cli("medseg_checkpoint",
                               "diff " + checkpoint(d / "one", plans) + " " + checkpoint(d / "two", plans) + " " + tol);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(checkpoint(d / "two", plans)).parent_path() / "validation/summary.json"));
}

}  // namespace

TEST(SpatialParallelTrain, BatchOneTwoSlabsEqualOneProcess) {
  // Deep supervision, instance norm, three iterations of gradients in the momentum buffers.
  // The atol floor is for the conv biases an instance norm follows: their true gradient is 0, and
  // what their momentum holds is summation noise (~2e-7 here, against gradients up to ~1).
  expect_same_run(spatial_dataset().plans(1), "--iters-per-epoch 3 --tr " + (spatial_dataset().dir / "tiny_lr.json"),
                  "--rtol 1e-4 --atol 5e-7");
}

TEST(SpatialParallelTrain, OneRealStepAtBatchTwo) {
  expect_same_run(spatial_dataset().plans(2), "--iters-per-epoch 1", "--rtol 1e-4 --atol 1e-7");
}

TEST(SpatialParallelTrain, BadCombinationsAreOneLine) {
  test::TempDir d("spbad");
  const std::string base = "954 3d_fullres 0 --iters-per-epoch 1" + std::string(kSpatialFlags);
  auto r = test::run_cli("medseg_train",
                         base + " -p " + spatial_dataset().plans(1) + " --spatial_parallel 2 --nproc_per_node 3",
                         spatial_dataset().env(d / "r"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--spatial_parallel 2 needs 2 ranks, not 3"), std::string::npos) << r.output;
  // 14x20x20: no axis splits into two slabs aligned with the strides (7/2, 10/4, 10/4).
  r = test::run_cli("medseg_train", base + " -p " + spatial_dataset().plans(1, {14, 20, 20}) + " --spatial_parallel 2",
                    spatial_dataset().env(d / "r"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no axis of the patch 14x20x20 splits into that many slabs"), std::string::npos) << r.output;
  EXPECT_FALSE(
      fs::exists(d / "r/Dataset954_Slabs/nnUNetTrainer__B1Plans_14_20_20__3d_fullres/fold_0/checkpoint_final.ckpt"));
}
