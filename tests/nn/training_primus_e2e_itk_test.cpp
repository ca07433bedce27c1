// nnU-Net's Primus trainers by name (configs/trainer_variants.json, models/primus.h): medseg_train
// --tr nnUNet_Primus_S_Trainer trains the S network on the tiny synthetic dataset with the trainers' recipe
// (AdamW, warm-up, no deep supervision), writes a model folder whose plans.json names Primus, and
// medseg_predict predicts from it; a configuration whose patch the network cannot take is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "support/output_lines.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// DatasetID_NAME of 5 cases of `shape` (z y x), planned and preprocessed for 3d_fullres.
void make_planned_dataset(const std::string& id, const std::string& name, const std::string& shape,
                          const std::string& env) {
  auto r = test::run_cli(
      "medseg_make_dataset",
      "-d " + id + " -n " + name + " --cases 5 --min-shape " + shape + " --max-shape " + shape + " --seed 2", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d " + id + " -c 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

const char* kShortRun = " --epochs 2 --iters-per-epoch 2 --val-iters-per-epoch 1 --num-workers 1 --threads 2 --no_pbar";

}  // namespace

TEST(PrimusTrainerE2E, TrainsByNameAndPredictsFromItsModelFolder) {
  test::TempDir dir("primus_e2e");
  const std::string d = dir.path();
  fs::create_directories(d + "/raw");
  const std::string env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  // 18 x 30 x 30 cases plan a 16 x 24 x 24 patch: 2 x 3 x 3 tokens of 8^3.
  ASSERT_NO_FATAL_FAILURE(make_planned_dataset("964", "Primus", "18 30 30", env));
  const json planned = read_json(d + "/pre/Dataset964_Primus/nnUNetPlans.json");
  ASSERT_EQ(planned.at("configurations").at("3d_fullres").at("patch_size"), json({16, 24, 24}));
  auto r = test::run_cli("medseg_train", std::string("964 3d_fullres 0 --tr nnUNet_Primus_S_Trainer") + kShortRun, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(test::line_naming(r.output, "network Primus").find("23223783 parameters"), std::string::npos) << r.output;

  const std::string model = d + "/results/Dataset964_Primus/nnUNet_Primus_S_Trainer__nnUNetPlans__3d_fullres";
  const json arch = read_json(model + "/plans.json").at("configurations").at("3d_fullres").at("architecture");
  EXPECT_EQ(arch.at("network_class_name"), "dynamic_network_architectures.architectures.primus.Primus");
  EXPECT_EQ(arch.at("arch_kwargs").at("embed_dim"), 396);
  // The preprocessed plans stay the planner's.
  EXPECT_EQ(read_json(d + "/pre/Dataset964_Primus/nnUNetPlans.json"), planned);

  const checkpoint::Checkpoint ck = checkpoint::load_checkpoint(model + "/fold_0/checkpoint_final.ckpt");
  std::set<std::string> names;
  for (const auto& [name, t] : ck.weights) names.insert(name);
  for (const char* key : {"eva.blocks.11.mlp.fc2.weight", "eva.pos_embed", "up_projection.decode.2.weight",
                          "down_projection.proj.weight", "mask_token"})
    EXPECT_TRUE(names.count(key)) << key;
  EXPECT_EQ(ck.optimizer.type, "AdamW");
  r = test::run_cli("medseg_model_info",
                    "--plans " + model + "/plans.json --dataset-json " + model + "/dataset.json -c 3d_fullres");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json info = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(info.at("class"), "Primus");
  EXPECT_EQ(info.at("parameter_count"), 23223783);
  EXPECT_EQ(info.at("deep_supervision"), false);

  // The warm-up outlasts the 2 epochs: 3e-4 (e + 1) / 50.
  std::ifstream metrics(model + "/fold_0/metrics.jsonl");
  std::vector<double> lrs;
  for (std::string line; std::getline(metrics, line);)
    if (!line.empty()) lrs.push_back(json::parse(line).at("lr").get<double>());
  ASSERT_EQ(lrs.size(), 2u);
  EXPECT_DOUBLE_EQ(lrs[0], 3e-4 / 50);
  EXPECT_DOUBLE_EQ(lrs[1], 3e-4 * 2 / 50);

  fs::create_directories(d + "/in");
  const std::string image = d + "/raw/Dataset964_Primus/imagesTr/case_000_0000.nii.gz";
  fs::copy_file(image, d + "/in/case_000_0000.nii.gz");
  r = test::run_cli("medseg_predict",
                    "-i " + d + "/in -o " + d +
                        "/out -d 964 -c 3d_fullres -f 0 --tr nnUNet_Primus_S_Trainer "
                        "--threads 2 --disable_progress_bar",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume in = io::read_image(image), seg = io::read_image(d + "/out/case_000.nii.gz");
  EXPECT_EQ(seg.shape(), in.shape());
  for (double v : seg.to_double()) ASSERT_TRUE(v == 0 || v == 1 || v == 2) << v;
}

TEST(PrimusTrainerE2E, APatchTheNetworkCannotTakeIsRefusedNamingTheTrainer) {
  test::TempDir dir("primus_refused");
  const std::string d = dir.path();
  fs::create_directories(d + "/raw");
  const std::string env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  ASSERT_NO_FATAL_FAILURE(make_planned_dataset("966", "Odd", "16 24 24", env));  // a 14 x 20 x 20 patch
  const auto r =
      test::run_cli("medseg_train", std::string("966 3d_fullres 0 --tr nnUNet_Primus_S_Trainer") + kShortRun, env);
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string line = test::line_naming(r.output, "error:");
  EXPECT_NE(line.find("trainer 'nnUNet_Primus_S_Trainer' builds its own network"), std::string::npos) << r.output;
  EXPECT_NE(line.find("not divisible by the network's total stride 8"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/results/Dataset966_Odd")) << "nothing is written";
}
