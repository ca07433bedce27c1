// medseg_train with the settings of nnU-Net's newer variants together (batch norm, top-k CE with label
// smoothing, warm-up, AdamW with amsgrad, probabilistic oversampling, no augmentation) on the tiny
// synthetic dataset, then medseg_predict from the model folder it wrote: the plans.json beside the
// model says BatchNorm3d (so prediction, and nnU-Net after medseg_export_nnunet, build the same
// network), the checkpoint holds the running statistics, and the learning rates follow the warm-up.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// The tiny synthetic dataset DatasetID_NAME (5 cases), planned and preprocessed for 3d_fullres.
void variants_make_planned_dataset(const std::string& id, const std::string& name, int seed, const std::string& env) {
  auto r = test::run_cli("medseg_make_dataset",
                         "-d " + id + " -n " + name + " --cases 5 --min-shape 12 20 20 --max-shape 14 22 22 --seed " +
                             std::to_string(seed),
                         env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d " + id + " -c 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// The environment of a run whose raw, preprocessed and results folders live under `d` (raw made here).
std::string dataset_env(const std::string& d) {
  fs::create_directories(d + "/raw");
  return "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
}

}  // namespace

TEST(TrainerVariantsE2E, BatchNormTopKWarmupAmsgradTrainAndPredict) {
  test::TempDir dir("variants_e2e");
  const std::string d = dir.path(), env = dataset_env(d) + " MEDSEG_CONFIG_DIR=" + d + "/configs";
  fs::create_directories(d + "/configs");
  std::ofstream(d + "/configs/MixedVariants.json") << R"({
    "name": "MixedVariants", "num_epochs": 3, "iterations_per_epoch": 2, "val_iterations_per_epoch": 1,
    "norm": "batch", "loss": {"topk_percent": 10, "label_smoothing": 0.1}, "warmup_epochs": 2,
    "optimizer": {"type": "AdamW", "lr": 0.001, "weight_decay": 3e-5, "amsgrad": true},
    "oversampling": "probabilistic_batch_rate", "augment": false, "mirror_axes": {"3d": []}, "num_workers": 1})";
  ASSERT_NO_FATAL_FAILURE(variants_make_planned_dataset("951", "Mixed", 4, env));
  auto r = test::run_cli("medseg_train", "951 3d_fullres 0 --tr MixedVariants --threads 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string model = d + "/results/Dataset951_Mixed/MixedVariants__nnUNetPlans__3d_fullres";
  const json plans = read_json(model + "/plans.json");
  const json& kwargs = plans.at("configurations").at("3d_fullres").at("architecture").at("arch_kwargs");
  EXPECT_EQ(kwargs.at("norm_op"), "torch.nn.modules.batchnorm.BatchNorm3d");
  EXPECT_EQ(kwargs.at("norm_op_kwargs").at("eps"), 1e-5);

  const checkpoint::Checkpoint ck = checkpoint::load_checkpoint(model + "/fold_0/checkpoint_final.ckpt");
  int running = 0;
  for (const auto& [name, t] : ck.weights) running += name.find("running_mean") != std::string::npos ? 1 : 0;
  EXPECT_GT(running, 0) << "batch-norm running statistics in the checkpoint";
  EXPECT_EQ(ck.optimizer.type, "AdamW");

  // lr per epoch: warm-up lr0 * (e + 1) / 2 for e < 2, then poly over the last epoch from its start.
  std::ifstream metrics(model + "/fold_0/metrics.jsonl");
  std::vector<double> lrs;
  for (std::string line; std::getline(metrics, line);)
    if (!line.empty()) lrs.push_back(json::parse(line).at("lr").get<double>());
  ASSERT_EQ(lrs.size(), 3u);
  EXPECT_DOUBLE_EQ(lrs[0], 0.0005);
  EXPECT_DOUBLE_EQ(lrs[1], 0.001);
  EXPECT_DOUBLE_EQ(lrs[2], 0.001);

  const std::string case0 = d + "/raw/Dataset951_Mixed/imagesTr";
  fs::create_directories(d + "/in");
  for (const auto& e : fs::directory_iterator(case0)) {
    fs::copy_file(e.path(), d + "/in/" + e.path().filename().string());
    break;
  }
  r = test::run_cli("medseg_predict",
                    "-i " + d + "/in -o " + d +
                        "/out -d 951 -c 3d_fullres -f 0 --tr MixedVariants "
                        "--threads 2 --disable_progress_bar",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int written = 0;
  for (const auto& e : fs::directory_iterator(d + "/out")) written += e.path().extension() == ".gz" ? 1 : 0;
  EXPECT_EQ(written, 1) << r.output;
}

// Batch norm across ranks needs synchronised statistics: refused before anything is written, naming it.
TEST(TrainerVariantsE2E, BatchNormOnSeveralRanksIsRefused) {
  test::TempDir dir("variants_bn_ranks");
  const std::string d = dir.path(), env = dataset_env(d);
  ASSERT_NO_FATAL_FAILURE(variants_make_planned_dataset("952", "BnRanks", 5, env));
  auto r = test::run_cli("medseg_train",
                         "952 3d_fullres 0 --tr nnUNetTrainerBN --nproc_per_node 2 --epochs 1 --no_pbar", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("SyncBatchNorm"), std::string::npos) << r.output;
}

// nnU-Net's DA5 trainers by name train end to end, on either augmentation path: the order-0 label
// variant with the per-sample loader path, DA5 itself with the batched path on CPU tensors. The run
// folder carries nnU-Net's trainer name and the resolved settings; the log says which augmentation ran.
TEST(TrainerVariantsE2E, DA5TrainersTrainByTheirNames) {
  test::TempDir dir("variants_da5");
  const std::string d = dir.path(), env = dataset_env(d);
  ASSERT_NO_FATAL_FAILURE(variants_make_planned_dataset("953", "Strong", 6, env));
  const std::string short_run =
      " --epochs 1 --iters-per-epoch 2 --val-iters-per-epoch 1 --num-workers 1 --threads 2 --no_pbar";
  for (const std::string tr : {"nnUNetTrainerDA5Segord0", "nnUNetTrainerDA5"}) {
    const std::string path = tr == "nnUNetTrainerDA5" ? " --augment_device cpu_batched" : "";
    const auto r = test::run_cli("medseg_train", "953 3d_fullres 0 --tr " + tr + short_run + path, env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string model = d + "/results/Dataset953_Strong/" + tr + "__nnUNetPlans__3d_fullres";
    EXPECT_TRUE(fs::exists(model + "/fold_0/checkpoint_final.ckpt")) << tr;
    const json cfg = read_json(model + "/trainer_config.json");
    EXPECT_EQ(cfg.at("augmentation"), "da5") << tr;
    EXPECT_EQ(cfg.at("augment_seg_interpolation"), tr == "nnUNetTrainerDA5" ? "linear" : "nearest") << tr;
    const std::string log = test::read_text(model + "/fold_0/training_log.txt");
    EXPECT_NE(log.find("augmentation DA5"), std::string::npos) << log;
  }
}
