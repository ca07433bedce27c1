// medseg_train with the batched augmentation path (augment_device cpu_batched: the device path on
// CPU tensors) on the tiny synthetic dataset the other training tests use: it trains and writes
// its checkpoint; `--augment_device cuda` on a machine without CUDA is one error line and no run.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include <filesystem>
#include <string>

#include "core/json_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

struct Tiny {
  test::TempDir dir{"devaug"};
  std::string env() const {
    const std::string& d = dir.path();
    return "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  }
  std::string fold() const {
    return dir.path() + "/results/Dataset950_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0";
  }
};

}  // namespace

TEST(TrainDeviceAugment, TrainsWithTheBatchedPathOnCpuTensors) {
  Tiny t;
  fs::create_directories(t.dir.path() + "/raw");
  auto r = test::run_cli("medseg_make_dataset",
                         "-d 950 -n Tiny --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 3", t.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 950 -c 3d_fullres --np 2 --no_pbar", t.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;

  if (!torch::cuda::is_available()) {
    r = test::run_cli("medseg_train", "950 3d_fullres 0 --augment_device cuda --epochs 1 --no_pbar", t.env());
    EXPECT_NE(r.exit_code, 0);
    const auto first = r.output.find("error:");
    ASSERT_NE(first, std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("error:", first + 1), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("augment_device cuda: CUDA is not available"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(t.fold())) << "a refused run leaves no fold folder";
  }

  r = test::run_cli("medseg_train",
                    "950 3d_fullres 0 --augment_device cpu_batched --epochs 2 --iters-per-epoch 2 "
                    "--val-iters-per-epoch 1 --num-workers 1 --threads 2 --no_pbar",
                    t.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(t.fold() + "/checkpoint_final.ckpt")) << r.output;
  const json cfg = read_json(t.fold() + "/../trainer_config.json");
  EXPECT_EQ(cfg.at("augment_device"), "cpu_batched");
}
