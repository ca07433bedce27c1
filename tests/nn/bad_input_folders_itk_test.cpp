// What medseg_init_model and medseg_train do to a results folder that already holds something, and
// what a refused command leaves behind: trained checkpoints are never replaced by accident, two
// training runs never mix in one fold folder, a failed command creates no folders, and --c falls
// back to the newest checkpoint that loads when a newer one is corrupt.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <ostream>

#include "core/json_io.h"
#include "support/test_support.h"
#include "training/metrics_log.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Raw dataset 952 -> plans -> preprocessed 3d_fullres, made once for every test of this file.
struct Dataset {
  test::TempDir dir{"badfold"};
  Dataset() {
    fs::create_directories(dir / "raw");
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 952 -n Tiny --cases 6 --min-shape 12 20 20 --max-shape 14 22 22 --seed 5",
                           "MEDSEG_RAW=" + (dir / "raw"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    r = test::run_cli("medseg_plan_and_preprocess", "-d 952 -c 3d_fullres --np 2 --no_pbar",
                      "MEDSEG_RAW=" + (dir / "raw") + " MEDSEG_PREPROCESSED=" + (dir / "pre"));
    if (r.exit_code != 0) throw std::runtime_error(r.output);
  }
};

const Dataset& dataset() {
  static Dataset d;
  return d;
}

std::string env(const std::string& results) {
  return "MEDSEG_PREPROCESSED=" + (dataset().dir / "pre") + " MEDSEG_RESULTS=" + results;
}

std::string model_dir(const std::string& results) {
  return results + "/Dataset952_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
}

const char* kTrainFlags =
    " --iters-per-epoch 2 --val-iters-per-epoch 1 --num-workers 0 --threads 1 --deterministic "
    "--checkpoint-every 1 --no_pbar";

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Flips one byte near the end (inside the data the checksum covers).
void corrupt(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(fs::file_size(path)) - 40);
  const char c = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(fs::file_size(path)) - 40);
  f.put(static_cast<char>(c ^ 0x5a));
}

int error_lines(const std::string& out) {
  int n = 0;
  for (auto p = out.find("error:"); p != std::string::npos; p = out.find("error:", p + 1)) ++n;
  return n;
}

}  // namespace

// --- medseg_init_model -------------------------------------------------------------------------

struct InitRow {
  std::string name;
  std::string folds;    // -f
  bool overwrite;       // --overwrite
  bool ok;              // expected exit code 0
  std::string message;  // expected in the output when refused
  std::string absent;   // a folder (relative to the model folder) that must not exist afterwards
};
// gtest prints a row by its name.
void PrintTo(const InitRow& row, std::ostream* os) { *os << row.name; }

class InitModel : public ::testing::TestWithParam<InitRow> {};

TEST_P(InitModel, NeverReplacesACheckpointUnasked) {
  const InitRow& row = GetParam();
  test::TempDir d("initm");
  const std::string model = d / "model";
  auto r = test::run_cli("medseg_init_model", "-d 952 -c 3d_fullres -f 0 --seed 1 -o " + model, env(d / "results"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto before = test::folder_snapshot(model);
  const std::string final0 = test::read_text(model + "/fold_0/checkpoint_final.ckpt");

  r = test::run_cli(
      "medseg_init_model",
      "-d 952 -c 3d_fullres -f " + row.folds + " --seed 2 -o " + model + (row.overwrite ? " --overwrite" : ""),
      env(d / "results"));
  if (row.ok) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(test::read_text(model + "/fold_0/checkpoint_final.ckpt"), final0) << "--overwrite replaces it";
    return;
  }
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(row.message), std::string::npos) << r.output;
  EXPECT_EQ(error_lines(r.output), 1) << r.output;
  EXPECT_EQ(test::folder_snapshot(model), before) << "a refused init_model changed the model folder";
  if (!row.absent.empty()) { EXPECT_FALSE(fs::exists(model + "/" + row.absent)) << row.absent; }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, InitModel,
    ::testing::Values(InitRow{"existing_final", "0", false, false, "fold_0/checkpoint_final.ckpt: already exists", ""},
                      InitRow{"existing_final_overwrite", "0", true, true, "", ""},
                      InitRow{"second_fold_exists", "1 0", false, false, "fold_0/checkpoint_final.ckpt", "fold_1"},
                      InitRow{"negative_fold", "-3", false, false, "'-3'", "fold_-3"},
                      InitRow{"negative_fold_overwrite", "-3", true, false, "'-3'", "fold_-3"},
                      InitRow{"word_fold", "abc", false, false, "'abc'", "fold_abc"},
                      InitRow{"fraction_fold", "1.5", false, false, "'1.5'", "fold_1.5"},
                      InitRow{"path_fold", "../x", true, false, "'../x'", "fold_.."}),
    [](const ::testing::TestParamInfo<InitRow>& row) { return row.param.name; });

TEST(InitModelFresh, NegativeFoldLeavesNoFolder) {
  test::TempDir d("initm2");
  const auto r =
      test::run_cli("medseg_init_model", "-d 952 -c 3d_fullres -f -3 -o " + (d / "model"), env(d / "results"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(d / "model")) << r.output;
}

// --- medseg_train into a fold that holds a run ---------------------------------------------------

struct OccupiedRow {
  std::string name;
  std::vector<std::string> files;  // present in fold_0 before the fresh run
};
// gtest prints a row by its name.
void PrintTo(const OccupiedRow& row, std::ostream* os) { *os << row.name; }

class TrainOccupied : public ::testing::TestWithParam<OccupiedRow> {};

TEST_P(TrainOccupied, FreshRunIsRefusedAndChangesNothing) {
  test::TempDir d("occ");
  const std::string results = d / "results", fold = model_dir(results) + "/fold_0";
  for (const auto& f : GetParam().files) write_text(fold + "/" + f, "the old run's " + f + "\n");
  const auto before = test::folder_snapshot(results);
  const auto r = test::run_cli("medseg_train", std::string("952 3d_fullres 0 --epochs 1") + kTrainFlags, env(results));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fold_0: already holds a training run (" + GetParam().files[0]), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("use --c to continue it"), std::string::npos) << r.output;
  EXPECT_EQ(error_lines(r.output), 1) << r.output;
  EXPECT_EQ(test::folder_snapshot(results), before)
      << "nothing may be written: no plans.json copies, no training_log.txt";
}

INSTANTIATE_TEST_SUITE_P(
    Rows, TrainOccupied,
    ::testing::Values(OccupiedRow{"final", {"checkpoint_final.ckpt"}},
                      OccupiedRow{"only_latest", {"checkpoint_latest.ckpt"}},
                      OccupiedRow{"only_best", {"checkpoint_best.ckpt"}},
                      OccupiedRow{"only_metrics", {"metrics.jsonl"}},
                      OccupiedRow{"finished_run", {"checkpoint_best.ckpt", "checkpoint_final.ckpt", "metrics.jsonl"}}),
    [](const ::testing::TestParamInfo<OccupiedRow>& row) { return row.param.name; });

// --- medseg_train --val without the checkpoint --------------------------------------------------

struct ValRow {
  std::string name;
  std::string fold;
  std::string flags;
  std::vector<std::string> existing;  // files under the model folder before the run
  std::string missing;                // the checkpoint the error names
};
// gtest prints a row by its name.
void PrintTo(const ValRow& row, std::ostream* os) { *os << row.name; }

class TrainValUntrained : public ::testing::TestWithParam<ValRow> {};

TEST_P(TrainValUntrained, LeavesNoFolderBehind) {
  const ValRow& row = GetParam();
  test::TempDir d("valun");
  const std::string results = d / "results";
  fs::create_directories(results);
  for (const auto& f : row.existing) write_text(model_dir(results) + "/" + f, "kept\n");
  const auto before = test::folder_snapshot(results);
  const auto r =
      test::run_cli("medseg_train", "952 3d_fullres " + row.fold + " " + row.flags + kTrainFlags, env(results));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fold_" + row.fold + "/" + row.missing + ": checkpoint not found"), std::string::npos)
      << r.output;
  EXPECT_EQ(error_lines(r.output), 1) << r.output;
  EXPECT_EQ(test::folder_snapshot(results), before) << "a failed --val must leave the results folder as it was";
}

INSTANTIATE_TEST_SUITE_P(Rows, TrainValUntrained,
                         ::testing::Values(ValRow{"no_model_folder", "0", "--val", {}, "checkpoint_final.ckpt"},
                                           ValRow{"other_fold_trained",
                                                  "1",
                                                  "--val",
                                                  {"plans.json", "fold_0/checkpoint_final.ckpt"},
                                                  "checkpoint_final.ckpt"},
                                           ValRow{"val_best_without_best",
                                                  "0",
                                                  "--val --val_best",
                                                  {"fold_0/checkpoint_final.ckpt"},
                                                  "checkpoint_best.ckpt"}),
                         [](const ::testing::TestParamInfo<ValRow>& row) { return row.param.name; });

// --- medseg_train --c with corrupt checkpoints --------------------------------------------------

class TrainResumeFallback : public ::testing::Test {
 protected:
  // A finished 2-epoch run whose final checkpoint is renamed checkpoint_latest (an interrupted
  // longer run), with a corrupt checkpoint_best next to it.
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("resfb");
    const std::string results = *dir_ / "trained";
    const auto r =
        test::run_cli("medseg_train", std::string("952 3d_fullres 0 --epochs 2") + kTrainFlags, env(results));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  // A copy of the trained results, prepared as described above.
  static std::string prepare(const std::string& name) {
    const std::string results = *dir_ / name;
    fs::copy(*dir_ / "trained", results, fs::copy_options::recursive);
    const std::string fold = model_dir(results) + "/fold_0";
    fs::rename(fold + "/checkpoint_final.ckpt", fold + "/checkpoint_latest.ckpt");
    fs::copy_file(fold + "/checkpoint_latest.ckpt", fold + "/checkpoint_best.ckpt",
                  fs::copy_options::overwrite_existing);
    corrupt(fold + "/checkpoint_best.ckpt");
    return results;
  }
  static test::TempDir* dir_;
};
test::TempDir* TrainResumeFallback::dir_ = nullptr;

TEST_F(TrainResumeFallback, CorruptBestIsSkippedAndLatestResumes) {
  const std::string results = prepare("one_corrupt"), fold = model_dir(results) + "/fold_0";
  const std::string corrupt_best = test::read_text(fold + "/checkpoint_best.ckpt");
  const auto r =
      test::run_cli("medseg_train", std::string("952 3d_fullres 0 --epochs 3 --c") + kTrainFlags, env(results));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped checkpoint_best.ckpt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checksum mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resumed from checkpoint_latest.ckpt (epoch 2, iteration 0)"), std::string::npos) << r.output;
  const auto log = training::read_metrics(fold + "/metrics.jsonl");
  ASSERT_EQ(log.size(), 3u) << "epochs 0 and 1 from before, epoch 2 after resuming";
  for (int e = 0; e < 3; ++e) EXPECT_EQ(log[static_cast<std::size_t>(e)].epoch, e);
  EXPECT_TRUE(fs::exists(fold + "/checkpoint_final.ckpt"));
  // The corrupt file is replaced only by a new best checkpoint (the normal save), never removed.
  EXPECT_TRUE(fs::exists(fold + "/checkpoint_best.ckpt"));
}

TEST_F(TrainResumeFallback, AllCorruptIsOneErrorNamingTheFiles) {
  const std::string results = prepare("all_corrupt"), fold = model_dir(results) + "/fold_0";
  corrupt(fold + "/checkpoint_latest.ckpt");
  const auto before = test::folder_snapshot(results);
  const auto r =
      test::run_cli("medseg_train", std::string("952 3d_fullres 0 --epochs 3 --c") + kTrainFlags, env(results));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(error_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("checkpoint_latest.ckpt: checksum mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checkpoint_best.ckpt: checksum mismatch"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(results), before) << "the corrupt files and the folder stay as they were";
}

TEST(TrainResumeWithoutCheckpoint, OldMetricsLinesAreDropped) {
  // A run killed after logging epoch 0 but before its first checkpoint: --c starts over, and the
  // old line must not stay next to the new run's line for the same epoch.
  test::TempDir d("resnock");
  const std::string results = d / "results", fold = model_dir(results) + "/fold_0";
  training::EpochMetrics m;
  m.train_loss = 123.0;
  write_text(fold + "/metrics.jsonl", training::to_json(m).dump() + "\n");
  const auto r =
      test::run_cli("medseg_train", std::string("952 3d_fullres 0 --epochs 1 --c") + kTrainFlags, env(results));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log = training::read_metrics(fold + "/metrics.jsonl");
  ASSERT_EQ(log.size(), 1u) << test::read_text(fold + "/metrics.jsonl");
  EXPECT_EQ(log[0].epoch, 0);
  EXPECT_NE(log[0].train_loss, 123.0);
}
