// nnU-Net's workflow beyond one configuration, run through the CLIs on tiny synthetic datasets:
// fine-tuning from pretrained weights, and the defects found when medseg was tried as a new user
// would:
// - an ignore-label dataset trained one output too many (labels.size()), and medseg_predict then
//   refused the model;
// - region labels and a 3d_cascade_fullres configuration trained silently as something else (regions
//   now train: WorkflowRegions);
// - the trainer config's ema_momentum was read and ignored (0.9 hard-coded);
// - medseg_checkpoint average copied the first input's optimizer, RNG and progress, so the average
//   looked resumable.
#include <gtest/gtest.h>
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// A raw dataset made by medseg_make_dataset with `make_args`, planned and preprocessed for
// 3d_fullres, in its own scratch folder.
class Workflow {
 public:
  Workflow(const std::string& tag, const std::string& make_args) : dir_(tag) { add_dataset(951, make_args); }
  // Another dataset beside the first, made the same way (same shapes: same plans).
  void add_dataset(int id, const std::string& make_args) const {
    fs::create_directories(dir_ / "raw");
    const std::string d = std::to_string(id);
    auto r = test::run_cli("medseg_make_dataset",
                           "-d " + d +
                               " -n Flow --cases 5 --min-shape 12 20 20 "
                               "--max-shape 14 22 22 --seed 5 " +
                               make_args,
                           env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = test::run_cli("medseg_plan_and_preprocess", "-d " + d + " -c 3d_fullres --np 2 --no_pbar", env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  std::string env() const {
    return "MEDSEG_RAW=" + dir_ / "raw" + " MEDSEG_PREPROCESSED=" + dir_ / "pre" +
           " MEDSEG_RESULTS=" + dir_ / "results";
  }
  std::string raw() const { return dir_ / "raw/Dataset951_Flow"; }
  std::string pre() const { return dir_ / "pre/Dataset951_Flow"; }
  std::string results() const { return dir_ / "results"; }
  std::string fold(const std::string& trainer = "nnUNetTrainer", int id = 951) const {
    return dir_ / ("results/Dataset" + std::to_string(id) + "_Flow/" + trainer + "__nnUNetPlans__3d_fullres/fold_0");
  }
  test::CmdResult train(const std::string& extra = "", const std::string& config = "3d_fullres", int epochs = 1,
                        int id = 951) const {
    return test::run_cli("medseg_train",
                         std::to_string(id) + " " + config + " 0 --epochs " + std::to_string(epochs) +
                             " --iters-per-epoch 2 --num-workers 1 --threads 1 --no_pbar " + extra,
                         env());
  }
  const test::TempDir& dir() const { return dir_; }

 private:
  test::TempDir dir_;
};

std::vector<json> metrics_lines(const std::string& file) {
  std::vector<json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

}  // namespace

// labels {background 0, class1 1, class2 2, ignore 3}: three outputs, not four. Before the fix the
// checkpoint said num_classes 4, the pseudo Dice had a third "class" (the ignore label) and
// medseg_predict refused the model ("has 4 outputs but dataset.json's labels need 3").
TEST(WorkflowDefects, IgnoreLabelDatasetTrainsThreeOutputsAndPredicts) {
  Workflow w("wf_ignore", "--labels 2 --ignore-label");
  const json ds = read_json(w.raw() + "/dataset.json");
  ASSERT_EQ(ds.at("labels").at("ignore"), 3);
  auto r = w.train("--val-iters-per-epoch 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ck = checkpoint::load_checkpoint(w.fold() + "/checkpoint_final.ckpt");
  EXPECT_EQ(ck.extra.at("num_classes"), 3);
  const auto lines = metrics_lines(w.fold() + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("pseudo_dice").size(), 2u) << lines[0].dump();  // class1, class2

  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTr -o " + w.dir() / "pred" +
                        " -d 951 -c 3d_fullres -f 0 --disable_tta --npp 0 --nps 0 --threads 1 "
                        "--disable_progress_bar",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume seg = io::read_label(w.dir() / "pred/case_000.nii.gz");
  std::set<int> values;
  visit_pixels(seg, [&](const auto* p) {
    for (int64_t i = 0; i < seg.numel(); ++i) values.insert(static_cast<int>(p[i]));
  });
  EXPECT_EQ(values.count(3), 0u) << "the ignore label is never a prediction";
  for (int v : values) EXPECT_TRUE(v >= 0 && v <= 2) << v;
}

namespace {

// The label values a NIfTI label map holds.
std::set<int> values_of(const std::string& file) {
  const Volume seg = io::read_label(file);
  std::set<int> values;
  visit_pixels(seg, [&](const auto* p) {
    for (int64_t i = 0; i < seg.numel(); ++i) values.insert(static_cast<int>(p[i]));
  });
  return values;
}

}  // namespace

// Region-based training (before: refused up front). Nested regions region1 = {1, 2}, region2 = {2}:
// two sigmoid outputs (not three softmax classes), a pseudo Dice per region, a final validation
// scored per region under nnU-Net's keys, and predictions painted through regions_class_order.
TEST(WorkflowRegions, RegionDatasetTrainsPredictsAndEvaluatesPerRegion) {
  Workflow w("wf_regions", "--labels 2 --regions");
  const json raw_ds = read_json(w.raw() + "/dataset.json");
  ASSERT_EQ(raw_ds.at("labels").at("region1"), json({1, 2}));
  ASSERT_EQ(raw_ds.at("regions_class_order"), json({1, 2}));
  auto r = w.train("--val-iters-per-epoch 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ck = checkpoint::load_checkpoint(w.fold() + "/checkpoint_final.ckpt");
  EXPECT_EQ(ck.extra.at("num_classes"), 2);
  const auto lines = metrics_lines(w.fold() + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("pseudo_dice").size(), 2u) << lines[0].dump();
  const json summary = read_json(w.fold() + "/validation/summary.json");
  EXPECT_TRUE(summary.at("mean").contains("(1, 2)")) << summary.at("mean").dump();
  EXPECT_TRUE(summary.at("mean").contains("2")) << summary.at("mean").dump();

  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTr -o " + w.dir() / "pred" +
                        " -d 951 -c 3d_fullres -f 0 --disable_tta --npp 0 --nps 0 --threads 1 "
                        "--disable_progress_bar",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int v : values_of(w.dir() / "pred/case_000.nii.gz")) EXPECT_TRUE(v >= 0 && v <= 2) << v;
  r = test::run_cli("medseg_evaluate",
                    w.raw() + "/labelsTr " + w.dir() / "pred" + " --djfile " + w.raw() + "/dataset.json --chill",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json eval = read_json(w.dir() / "pred/summary.json");
  EXPECT_TRUE(eval.at("mean").contains("(1, 2)")) << eval.at("mean").dump();
}

// Regions and partially annotated labels together: the ignore label becomes the targets' mask
// channel (not a region), so the network still has one output per region.
TEST(WorkflowRegions, RegionsWithAnIgnoreLabelTrain) {
  Workflow w("wf_regions_ignore", "--labels 2 --regions --ignore-label");
  ASSERT_EQ(read_json(w.raw() + "/dataset.json").at("labels").at("ignore"), 3);
  const auto r = w.train("--val-iters-per-epoch 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(checkpoint::load_checkpoint(w.fold() + "/checkpoint_final.ckpt").extra.at("num_classes"), 2);
  const auto lines = metrics_lines(w.fold() + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("pseudo_dice").size(), 2u) << lines[0].dump();
}

// A cascade stage needs the previous stage's predictions as input: training it as a plain
// full-resolution model (what happened before) gave a model medseg_predict refused. Without those
// predictions it is refused up front; with them it trains (workflow_cascade_itk_test.cpp).
TEST(WorkflowDefects, CascadeStageWithoutPreviousStagePredictionsIsRefusedUpFront) {
  Workflow w("wf_cascade", "--labels 1");
  const std::string plans_file = w.pre() + "/nnUNetPlans.json";
  json plans = read_json(plans_file);
  plans["configurations"]["3d_lowres"] = {{"inherits_from", "3d_fullres"}, {"next_stage", "3d_cascade_fullres"}};
  plans["configurations"]["3d_cascade_fullres"] = {{"inherits_from", "3d_fullres"}, {"previous_stage", "3d_lowres"}};
  write_json(plans_file, plans);
  const auto r = w.train("", "3d_cascade_fullres");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("configuration '3d_cascade_fullres' is a cascade stage"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'3d_lowres' predictions of every case"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("predicted_next_stage"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(w.results())) << "nothing written";
}

// ema_momentum 0.25: ema_1 = 0.25 * ema_0 + 0.75 * mean_fg_dice_1 (and ema_0 = mean_fg_dice_0).
// With the hard-coded 0.9 of before, ema_1 = 0.9 * ema_0 + 0.1 * dice_1.
TEST(WorkflowDefects, EmaMomentumOfTheTrainerConfigIsUsed) {
  Workflow w("wf_ema", "--labels 1");
  json cfg = read_json(test::source_path("configs/nnUNetTrainer.json"));
  cfg["name"] = "EmaTrainer";
  cfg["ema_momentum"] = 0.25;
  const std::string cfg_file = w.dir() / "ema.json";
  write_json(cfg_file, cfg);
  const auto r = w.train("--tr " + cfg_file + " --val-iters-per-epoch 2", "3d_fullres", 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto lines = metrics_lines(w.fold("EmaTrainer") + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  const double d0 = lines[0].at("mean_fg_dice"), d1 = lines[1].at("mean_fg_dice");
  EXPECT_DOUBLE_EQ(lines[0].at("ema_pseudo_dice").get<double>(), d0);
  EXPECT_NEAR(lines[1].at("ema_pseudo_dice").get<double>(), 0.25 * d0 + 0.75 * d1, 1e-12)
      << "dice " << d0 << ", " << d1;
  if (std::abs(d1 - d0) < 1e-9) GTEST_SKIP() << "equal Dice in both epochs cannot tell the momentum apart";
}

// The average of two checkpoints is weights only: no optimizer buffers, RNG, sampler position or
// logs; medseg_predict takes it, --c refuses it with one line naming it and leaves it in place.
TEST(WorkflowDefects, AveragedCheckpointIsWeightsOnlyAndContinueRefusesIt) {
  Workflow w("wf_avg", "--labels 1");
  auto r = w.train("--val-iters-per-epoch 1 --checkpoint-every 1", "3d_fullres", 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string fold = w.fold(), avg = w.dir() / "avg.ckpt";
  const auto final_ck = checkpoint::load_checkpoint(fold + "/checkpoint_final.ckpt");
  ASSERT_FALSE(final_ck.optimizer.buffers.empty()) << "a training checkpoint holds momentum buffers";
  r = test::run_cli("medseg_checkpoint",
                    "average " + fold + "/checkpoint_final.ckpt " + fold + "/checkpoint_best.ckpt -o " + avg);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = checkpoint::load_checkpoint(avg);
  EXPECT_TRUE(a.weights_only);
  EXPECT_TRUE(a.optimizer.buffers.empty());
  EXPECT_EQ(a.optimizer.type, "");
  EXPECT_FALSE(a.rng.cpu.defined());
  EXPECT_TRUE(a.rng.workers.empty());
  EXPECT_TRUE(a.logs.empty());
  EXPECT_TRUE(a.sampler.empty());
  EXPECT_TRUE(a.ema.is_null());
  EXPECT_EQ(a.weights.size(), final_ck.weights.size());
  EXPECT_EQ(a.dataset, final_ck.dataset) << "the JSON copies stay: the average still predicts";

  // The user puts the average where --c looks.
  for (const char* n : {"checkpoint_final.ckpt", "checkpoint_best.ckpt", "checkpoint_latest.ckpt"})
    fs::remove(fold + "/" + n);
  fs::copy_file(avg, fold + "/checkpoint_latest.ckpt");
  // training_log.txt records the refused attempt; every other file stays as it was.
  const auto snapshot = [&] {
    auto m = test::folder_snapshot(fold);
    m.erase("training_log.txt");
    return m;
  };
  const auto before = snapshot();
  r = w.train("--val-iters-per-epoch 1 --c", "3d_fullres", 3);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fold + "/checkpoint_latest.ckpt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("weights-only checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(), before) << "the fold folder is left as it was";
}

namespace {

// A trainer config whose learning rate (1e-12) leaves the weights where they started to ~1e-12:
// what a run started from pretrained weights ends with is then what it started from.
std::string frozen_config(const Workflow& w) {
  json cfg = read_json(test::source_path("configs/nnUNetTrainer.json"));
  cfg["name"] = "FineTune";
  cfg["optimizer"]["lr"] = 1e-12;
  const std::string file = w.dir() / "finetune.json";
  write_json(file, cfg);
  return file;
}

std::map<std::string, at::Tensor> weights_of(const std::string& checkpoint_file) {
  const auto ck = checkpoint::load_checkpoint(checkpoint_file);
  return {ck.weights.begin(), ck.weights.end()};
}

// The run every fine-tuning test starts from: dataset 951, one epoch; `source` is its
// checkpoint_final.
void train_pretrained_source(const Workflow& w, std::string& source) {
  const auto r = w.train("--val-iters-per-epoch 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  source = w.fold() + "/checkpoint_final.ckpt";
}

bool is_head(const std::string& name) { return name.rfind("decoder.seg_layers.", 0) == 0; }

}  // namespace

// Same labels: every tensor, heads included, comes from the pretrained run. A fresh He-initialised
// network differs from it by O(1); the frozen run's drift is ~1e-12.
TEST(WorkflowPretrained, SameLabelsLoadEveryTensor) {
  Workflow w("wf_pre_same", "--labels 1");
  std::string source;
  ASSERT_NO_FATAL_FAILURE(train_pretrained_source(w, source));
  auto r = w.train("--val-iters-per-epoch 1 --tr " + frozen_config(w) + " -pretrained_weights " + source);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pretrained weights: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("left as initialised"), std::string::npos) << r.output;
  const auto a = weights_of(source), b = weights_of(w.fold("FineTune") + "/checkpoint_final.ckpt");
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : b) {
    ASSERT_TRUE(a.count(name)) << name;
    EXPECT_TRUE(at::allclose(t, a.at(name), 1e-6, 1e-9)) << name;
  }
  EXPECT_EQ(checkpoint::load_checkpoint(w.fold("FineTune") + "/checkpoint_final.ckpt").extra.at("pretrained_weights"),
            source);
}

// Other labels (2 classes instead of 1): the heads keep their fresh initialisation and say so;
// every other tensor comes from the pretrained run.
TEST(WorkflowPretrained, OtherLabelsSkipTheSegmentationHeads) {
  Workflow w("wf_pre_other", "--labels 1");
  w.add_dataset(952, "--labels 2");
  std::string source;
  ASSERT_NO_FATAL_FAILURE(train_pretrained_source(w, source));
  auto r = w.train("--val-iters-per-epoch 1 --tr " + frozen_config(w) + " -pretrained_weights " + source, "3d_fullres",
                   1, 952);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("segmentation heads left as initialised (the labels differ): decoder.seg_layers."),
            std::string::npos)
      << r.output;
  const auto a = weights_of(source), b = weights_of(w.fold("FineTune", 952) + "/checkpoint_final.ckpt");
  int heads = 0;
  for (const auto& [name, t] : b) {
    ASSERT_TRUE(a.count(name)) << name;
    if (is_head(name)) {
      ++heads;
      EXPECT_NE(t.sizes(), a.at(name).sizes()) << name;
    } else {
      EXPECT_TRUE(at::allclose(t, a.at(name), 1e-6, 1e-9)) << name;
    }
  }
  EXPECT_GT(heads, 0);
}

// Another architecture (2 input channels against 1) is refused before anything is written, naming
// the file and the tensor; so are a missing or truncated checkpoint, and -pretrained_weights with --c.
TEST(WorkflowPretrained, OtherArchitectureAndContinueAreRefused) {
  Workflow w("wf_pre_bad", "--labels 1");
  w.add_dataset(953, "--labels 1 --channels 2");
  std::string source;
  ASSERT_NO_FATAL_FAILURE(train_pretrained_source(w, source));
  auto r = w.train("-pretrained_weights " + source, "3d_fullres", 1, 953);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(source + ": tensor 'encoder."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("has shape"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(w.results() + "/Dataset953_Flow")) << "nothing written";
  // A missing or truncated checkpoint: one line naming it, nothing written.
  const std::string missing = w.dir() / "missing.ckpt", truncated = w.dir() / "truncated.ckpt";
  fs::copy_file(source, truncated);
  fs::resize_file(truncated, fs::file_size(source) / 2);
  for (const std::string& bad : {missing, truncated}) {
    r = w.train("-pretrained_weights " + bad, "3d_fullres", 1, 953);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(bad + ": "), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(w.results() + "/Dataset953_Flow")) << "nothing written";
  }
  r = w.train("--c -pretrained_weights " + source);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot be combined with --c"), std::string::npos) << r.output;
}

// nnU-Net's model selection end to end on trained models: 2d and 3d_fullres, two folds each, trained
// with --npz; find_best_configuration scores both cross-validations and their ensemble. Each
// configuration's cross-validation Dice is the mean of its two one-case folds' validation Dice (the
// folds' own summary.json files), and the pick is the best of the three.
TEST(WorkflowSelection, FindBestOverTrained2dAnd3dFullresWithTwoFolds) {
  test::TempDir dir("wf_find_best");
  const std::string env =
      "MEDSEG_RAW=" + dir / "raw" + " MEDSEG_PREPROCESSED=" + dir / "pre" + " MEDSEG_RESULTS=" + dir / "results";
  auto r = test::run_cli("medseg_make_dataset",
                         "-d 953 -n Pick --cases 5 --min-shape 12 20 20 --max-shape 14 22 22 "
                         "--seed 8 --labels 1",
                         env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 953 -c 2d 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* config : {"2d", "3d_fullres"})
    for (int fold : {0, 1}) {
      r = test::run_cli("medseg_train",
                        std::string("953 ") + config + " " + std::to_string(fold) +
                            " --epochs 1 --iters-per-epoch 2 --val-iters-per-epoch 0 --num-workers 1 "
                            "--threads 1 --no_pbar --npz",
                        env);
      ASSERT_EQ(r.exit_code, 0) << config << " fold " << fold << ": " << r.output;
    }
  r = test::run_cli("medseg_find_best_configuration", "953 -c 2d 3d_fullres -f 0 1 --np 1", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path results = dir / "results/Dataset953_Pick";
  const json info = read_json((results / "inference_information.json").string());
  ASSERT_EQ(info.at("considered_models").size(), 3u) << info.dump(1);
  double best = -1;
  for (const auto& m : info.at("considered_models")) {
    const double d = m.at("foreground_mean_dice").get<double>();
    best = std::max(best, d);
    if (m.at("configurations").size() != 1) continue;
    const std::string config = m.at("configurations")[0];
    double folds = 0;
    for (int fold : {0, 1})
      folds += read_json((results / ("nnUNetTrainer__nnUNetPlans__" + config) / ("fold_" + std::to_string(fold)) /
                          "validation/summary.json")
                             .string())
                   .at("foreground_mean")
                   .at("Dice")
                   .get<double>();
    EXPECT_NEAR(d, folds / 2, 1e-9) << config;
  }
  const std::string best_name = info.at("best_model_or_ensemble").at("name");
  for (const auto& m : info.at("considered_models")) {
    if (m.at("name") == best_name) { EXPECT_EQ(m.at("foreground_mean_dice").get<double>(), best); }
  }
  std::ifstream instructions(results / "inference_instructions.txt");
  std::stringstream text;
  text << instructions.rdbuf();
  EXPECT_NE(text.str().find("medseg_predict"), std::string::npos) << text.str();
}

namespace {

// nnU-Net's data_identifier spelling of a spacing: "1.00_0.75_0.75".
std::string spacing_text(const json& spacing) {
  std::string out;
  for (const json& v : spacing) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v.get<double>());
    out += (out.empty() ? "" : "_") + std::string(buf);
  }
  return out;
}

}  // namespace

// Fine-tuning from an nnssl checkpoint the nnU-Net way (docs/finetuning.md): plans with pretrain_info name the
// checkpoint (scripts/nnssl_checkpoint_reference.py writes one of the plans' own U-Net, as nnssl saves it), and
// PretrainedTrainer starts from its encoder with batch size 2 and the warm-up from 1e-3 (epoch 0: 1e-3 / 50);
// --from_scratch takes 1e-2 instead; without pretrain_info nor --from_scratch the trainer is refused, naming both.
TEST(WorkflowPretrained, PretrainedTrainerFineTunesAnNnsslCheckpointFromThePlans) {
  const char* python = std::getenv("MEDSEG_NNUNET_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "MEDSEG_NNUNET_PYTHON is not set (scripts/test.sh sets it)";
  Workflow w("wf_pre_nnssl", "--labels 1");
  const std::string plans = w.pre() + "/nnUNetPlans.json", ck = w.dir() / "ssl/nnssl.pth";
  const std::string cmd = std::string(python) + " " + test::source_path("scripts/nnssl_checkpoint_reference.py") + " " +
                          w.dir() / "ssl" + " --plans " + plans + " > " + w.dir() / "ssl.log" + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(w.dir() / "ssl.log");
  json p = read_json(plans);
  p["plans_name"] = "ptPlans__Mae";
  p["pretrain_info"] = {{"checkpoint_path", ck}, {"checkpoint_name", "Mae"}};
  write_json(w.pre() + "/ptPlans__Mae.json", p);

  auto r = w.train("--val-iters-per-epoch 1 -p nnUNetPlans --tr PretrainedTrainer");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--from_scratch"), std::string::npos) << r.output;
  r = w.train("--val-iters-per-epoch 1 -p ptPlans__Mae --tr PretrainedTrainer");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pretrained encoder: "), std::string::npos) << r.output;
  const std::string fold = w.dir() / "results/Dataset951_Flow/PretrainedTrainer__ptPlans__Mae__3d_fullres/fold_0";
  const auto final_ck = checkpoint::load_checkpoint(fold + "/checkpoint_final.ckpt");
  EXPECT_EQ(final_ck.extra.at("pretrained_weights"), ck);
  EXPECT_EQ(final_ck.plans["configurations"]["3d_fullres"]["batch_size"], 2);
  EXPECT_NEAR(metrics_lines(fold + "/metrics.jsonl").at(0).at("lr").get<double>(), 1e-3 / 50, 1e-12);

  r = w.train("--val-iters-per-epoch 1 -p ptPlans__Mae --tr PretrainedTrainer --from_scratch", "3d_fullres", 1);
  ASSERT_EQ(r.exit_code, 1) << "the fold folder is used: " << r.output;
  fs::remove_all(fold);
  r = w.train("--val-iters-per-epoch 1 -p ptPlans__Mae --tr PretrainedTrainer --from_scratch");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("pretrained encoder: "), std::string::npos) << r.output;
  EXPECT_NEAR(metrics_lines(fold + "/metrics.jsonl").at(0).at("lr").get<double>(), 1e-2 / 50, 1e-12);

  // The same plans made by medseg_preprocess_like_nnssl (the base plans' spacing; the checkpoint's architecture and
  // patch, which here are the base plans'), preprocessed, and trained from.
  r = test::run_cli("medseg_preprocess_like_nnssl", "-d 951 -n Mae -pc " + ck + " -am default_nnunet -np 1", w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string made =
      "ptPlans__Mae____Spacing__" + spacing_text(p["configurations"]["3d_fullres"]["spacing"]) + "___Norm__Z";
  const json made_plans = read_json(w.pre() + "/" + made + ".json");
  EXPECT_EQ(made_plans["pretrain_info"]["checkpoint_path"], ck);
  EXPECT_EQ(made_plans["configurations"]["3d_fullres"]["batch_size"], 2);
  r = w.train("--val-iters-per-epoch 1 -p " + made + " --tr PretrainedTrainer");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pretrained encoder: "), std::string::npos) << r.output;
}
