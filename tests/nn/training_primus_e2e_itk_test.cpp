// nnU-Net's Primus trainers by name (configs/trainer_variants.json, models/primus.h): medseg_train
// --tr nnUNet_Primus_S_Trainer trains the S network on the tiny synthetic dataset with the trainers' recipe
// (AdamW, warm-up, no deep supervision), writes a model folder whose plans.json names Primus, and
// medseg_predict predicts from it; a configuration whose patch the network cannot take is refused by name; the
// loss falls and a killed run continues exactly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "support/output_lines.h"
#include "support/test_support.h"
#include "training/trainer_config.h"

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

namespace {

// Starts `cmd` under /bin/sh in the background; returns its pid.
pid_t spawn(const std::string& cmd) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

std::vector<double> train_losses(const std::string& metrics_file) {
  std::ifstream in(metrics_file);
  std::vector<double> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line).at("train_loss").get<double>());
  return out;
}

}  // namespace

// Primus S on the tiny dataset, its trainer's recipe without the 50-epoch warm-up (which would keep the rate near 0
// in a short run): the training loss falls over 4 epochs; a run killed (SIGKILL) after its first epoch and
// continued with --c ends with the uninterrupted run's weights, bit for bit (drop path's randomness included).
TEST(PrimusTrainerE2E, TheLossFallsAndAKilledRunContinuesExactly) {
  test::TempDir dir("primus_resume");
  const std::string d = dir.path();
  fs::create_directories(d + "/raw");
  const std::string base_env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre";
  ASSERT_NO_FATAL_FAILURE(make_planned_dataset("965", "PrimusResume", "18 30 30", base_env));
  json cfg = training::find_trainer_config("nnUNet_Primus_S_Trainer").to_json();
  cfg["name"] = "PrimusS";
  cfg["warmup_epochs"] = 0;
  write_json(d + "/primus_s.json", cfg);
  const std::string args = "965 3d_fullres 0 --tr " + d +
                           "/primus_s.json --epochs 4 --iters-per-epoch 4 --val-iters-per-epoch 1 --num-workers 1 "
                           "--threads 2 --deterministic --checkpoint-every 1 --no_pbar";
  const auto fold = [&](const std::string& results) {
    return results + "/Dataset965_PrimusResume/PrimusS__nnUNetPlans__3d_fullres/fold_0";
  };
  auto r = test::run_cli("medseg_train", args, base_env + " MEDSEG_RESULTS=" + d + "/a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<double> losses = train_losses(fold(d + "/a") + "/metrics.jsonl");
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_LT(losses[3], losses[0]) << losses[0] << " -> " << losses[3];

  const std::string b = d + "/b";
  const pid_t pid = spawn("env " + base_env + " MEDSEG_RESULTS=" + b + " " + std::getenv("MEDSEG_BIN_DIR") +
                          "/medseg_train " + args + " > " + d + "/b.log 2>&1");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (std::chrono::steady_clock::now() < deadline && train_losses(fold(b) + "/metrics.jsonl").empty() &&
         kill(pid, 0) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "it finished before it was killed: " << test::read_text(d + "/b.log");
  ASSERT_FALSE(fs::exists(fold(b) + "/checkpoint_final.ckpt"));
  r = test::run_cli("medseg_train", args + " --c", base_env + " MEDSEG_RESULTS=" + b);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ca = checkpoint::load_checkpoint(fold(d + "/a") + "/checkpoint_final.ckpt");
  const auto cb = checkpoint::load_checkpoint(fold(b) + "/checkpoint_final.ckpt");
  ASSERT_EQ(ca.weights.size(), cb.weights.size());
  for (size_t i = 0; i < ca.weights.size(); ++i) {
    EXPECT_EQ(ca.weights[i].first, cb.weights[i].first);
    EXPECT_TRUE(ca.weights[i].second.equal(cb.weights[i].second)) << ca.weights[i].first;
  }
}
