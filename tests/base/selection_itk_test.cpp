// Ensembling and model selection on hand-built cross-validation results: two "configurations"
// whose saved probabilities each get some voxels wrong, where only their average is right. Dice
// values are counted by hand; the ensemble's segmentation is compared with the reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "selection/ensemble.h"
#include "support/bad_input.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// 2 x 4 x 4 volumes; the reference has label 1 where x < 2 (16 voxels).
constexpr std::array<int64_t, 3> kSelectionShape{2, 4, 4};
constexpr int64_t kN = 32;

Geometry geometry() {
  Geometry g;
  g.spacing = {0.8, 0.8, 3.0};
  g.origin = {1, 2, 3};
  g.direction = {-1, 0, 0, 0, -1, 0, 0, 0, 1};
  return g;
}

std::vector<double> selection_reference() {
  std::vector<double> v(kN, 0.0);
  for (int64_t i = 0; i < kN; ++i) v[static_cast<size_t>(i)] = (i % 4) < 2;
  return v;
}

// p1 per voxel: `fg` on reference foreground, `bg` elsewhere, then the exceptions.
std::vector<float> foreground_probability(float fg, float bg, const std::vector<std::pair<int, float>>& except) {
  const auto ref = selection_reference();
  std::vector<float> p(kN);
  for (int64_t i = 0; i < kN; ++i) p[static_cast<size_t>(i)] = ref[static_cast<size_t>(i)] ? fg : bg;
  for (const auto& [i, v] : except) p[static_cast<size_t>(i)] = v;
  return p;
}

// Writes CASE.nii.gz (argmax) + CASE_probabilities.npy/.json as a validation with --npz does.
void write_prediction(const std::string& folder, const std::string& id, const std::vector<float>& p1) {
  fs::create_directories(folder);
  std::vector<float> probs(2 * kN);
  std::vector<double> seg(kN);
  for (int64_t i = 0; i < kN; ++i) {
    probs[static_cast<size_t>(i)] = 1 - p1[static_cast<size_t>(i)];
    probs[static_cast<size_t>(kN + i)] = p1[static_cast<size_t>(i)];
    seg[static_cast<size_t>(i)] = p1[static_cast<size_t>(i)] > 0.5f;
  }
  const std::vector<int64_t> shape{2, kSelectionShape[0], kSelectionShape[1], kSelectionShape[2]};
  const std::string base = folder + "/" + id;
  preprocessing::write_npy(base + "_probabilities.npy", "<f4", shape, probs.data(), probs.size() * sizeof(float));
  const Geometry g = geometry();
  write_json(base + "_probabilities.json", {{"format", "medseg-probabilities"},
                                            {"version", 1},
                                            {"kind", "softmax over labels"},
                                            {"class_values", {0, 1}},
                                            {"shape", shape},
                                            {"spacing", g.spacing},
                                            {"origin", g.origin},
                                            {"direction", g.direction}});
  io::write_image(base + ".nii.gz", Volume::from_values(PixelType::UInt8, kSelectionShape, g, seg));
}

const json kDataset = {{"labels", {{"background", 0}, {"organ", 1}}},
                       {"channel_names", {{"0", "MRI"}}},
                       {"numTraining", 4},
                       {"file_ending", ".nii.gz"}};

// Model A: one false positive at voxel 2 (p 0.6): Dice 32/33. Model B: false negatives at voxels
// 0 and 1 (p 0.3) and p 0.2 at voxel 2: Dice 28/30. Averages: voxel 2 0.4, voxels 0-1 0.6: all right.
const std::vector<std::pair<int, float>> kWrongA = {{2, 0.6f}};
const std::vector<std::pair<int, float>> kWrongB = {{0, 0.3f}, {1, 0.3f}, {2, 0.2f}};

}  // namespace

TEST(Ensemble, AveragedProbabilitiesGiveTheReference) {
  test::TempDir d("ens");
  write_prediction(d / "a", "c0", foreground_probability(0.9f, 0.1f, kWrongA));
  write_prediction(d / "b", "c0", foreground_probability(0.7f, 0.1f, kWrongB));
  write_json(d / "a/dataset.json", kDataset);
  const auto r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "out --save_npz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume seg = io::read_image(d / "out/c0.nii.gz");
  EXPECT_EQ(seg.to_double(), selection_reference());
  EXPECT_EQ(geometry_mismatch(seg.geometry(), seg.shape(), geometry(), kSelectionShape), "");
  std::vector<int64_t> shape;
  const auto avg = preprocessing::read_npy_float32(d / "out/c0_probabilities.npy", shape);
  EXPECT_FLOAT_EQ(avg[kN + 2], 0.4f);  // (0.6 + 0.2) / 2
  EXPECT_FLOAT_EQ(avg[kN + 0], 0.6f);  // (0.9 + 0.3) / 2
  EXPECT_FLOAT_EQ(avg[kN + 5], 0.8f);  // x = 1, foreground: (0.9 + 0.7) / 2
  EXPECT_FLOAT_EQ(avg[kN + 6], 0.1f);  // x = 2, background in both
  EXPECT_FLOAT_EQ(avg[6], 0.9f);
  EXPECT_TRUE(fs::exists(d / "out/dataset.json"));
}

TEST(Ensemble, FoldersThatDoNotMatchAreRefusedBeforeWriting) {
  test::TempDir d("ensbad");
  write_prediction(d / "a", "c0", foreground_probability(0.9f, 0.1f, {}));
  write_prediction(d / "a", "c1", foreground_probability(0.9f, 0.1f, {}));
  write_prediction(d / "b", "c0", foreground_probability(0.9f, 0.1f, {}));
  auto r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "out");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("c1_probabilities.npy"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out"));
  // Same cases, other geometry: named, and the output folder is gone again.
  write_prediction(d / "b", "c1", foreground_probability(0.9f, 0.1f, {}));
  json meta = read_json(d / "b/c1_probabilities.json");
  meta["spacing"] = {1.0, 1.0, 1.0};
  write_json(d / "b/c1_probabilities.json", meta);
  r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "out");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("c1_probabilities.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spacing"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out"));
  // A truncated array.
  write_prediction(d / "b", "c1", foreground_probability(0.9f, 0.1f, {}));
  const std::string npy = test::read_text(d / "b/c1_probabilities.npy");
  write_file_atomic(d / "b/c1_probabilities.npy", npy.substr(0, npy.size() - 9));
  r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "out");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out"));
}

namespace {

// Cross-validation results of two trained configurations of Dataset321_Organ (3d_fullres: model A,
// 2d: model B), folds 0 and 1 with two validation cases each, and the references.
struct TwoModels {
  explicit TwoModels(const test::TempDir& d)
      : results(d / "results/Dataset321_Organ"),
        gt(d / "pre/Dataset321_Organ/gt_segmentations"),
        a(results + "/nnUNetTrainer__nnUNetPlans__3d_fullres"),
        b(results + "/nnUNetTrainer__nnUNetPlans__2d"),
        env("MEDSEG_RESULTS=" + d / "results" + " MEDSEG_PREPROCESSED=" + d / "pre") {
    fs::create_directories(gt);
    for (const auto& m : {a, b}) write_json(m + "/dataset.json", kDataset);
    for (int c = 0; c < 4; ++c) {
      const std::string id = "case_" + std::to_string(c);
      io::write_image(gt + "/" + id + ".nii.gz",
                      Volume::from_values(PixelType::UInt8, kSelectionShape, geometry(), selection_reference()));
      const std::string fold = "fold_" + std::to_string(c / 2) + "/validation";
      write_prediction(a + "/" + fold, id, foreground_probability(0.9f, 0.1f, kWrongA));
      write_prediction(b + "/" + fold, id, foreground_probability(0.7f, 0.1f, kWrongB));
    }
  }
  std::string results, gt, a, b, env;
};

}  // namespace

TEST(FindBestConfiguration, PicksTheEnsembleAndWritesHowToRunIt) {
  test::TempDir d("best");
  const TwoModels m(d);
  const std::string &results = m.results, &a = m.a, &env = m.env;
  const auto r = test::run_cli("medseg_find_best_configuration", "321 -c 3d_fullres 2d -np 2", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json info = read_json(results + "/inference_information.json");
  ASSERT_EQ(info["considered_models"].size(), 3u) << info.dump(2);
  EXPECT_NEAR(info["considered_models"][0]["foreground_mean_dice"].get<double>(), 32.0 / 33.0, 1e-12);
  EXPECT_NEAR(info["considered_models"][1]["foreground_mean_dice"].get<double>(), 28.0 / 30.0, 1e-12);
  EXPECT_NEAR(info["considered_models"][2]["foreground_mean_dice"].get<double>(), 1.0, 1e-12);
  const std::string best = info["best_model_or_ensemble"]["name"];
  EXPECT_EQ(best, "ensemble___nnUNetTrainer__nnUNetPlans__3d_fullres___nnUNetTrainer__nnUNetPlans__2d___0_1");
  EXPECT_EQ(info["folds"], json({"0", "1"}));
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(io::read_image(results + "/ensembles/" + best + "/case_" + std::to_string(c) + ".nii.gz").to_double(),
              selection_reference());
  EXPECT_TRUE(fs::exists(results + "/ensembles/" + best + "/postprocessing.json"));
  const std::string txt = test::read_text(results + "/inference_instructions.txt");
  EXPECT_NE(txt.find("medseg_ensemble -i OUTPUT_FOLDER_MODEL_1 OUTPUT_FOLDER_MODEL_2"), std::string::npos) << txt;
  EXPECT_NE(txt.find("-c 2d -tr nnUNetTrainer -p nnUNetPlans -f 0 1 --save_probabilities"), std::string::npos) << txt;
  EXPECT_NE(txt.find("medseg_apply_postprocessing"), std::string::npos) << txt;

  // Without ensembling the single best model wins and its model folder gets the postprocessing.
  const auto r2 = test::run_cli("medseg_find_best_configuration", "321 -c 3d_fullres 2d --disable_ensembling", env);
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(read_json(results + "/inference_information.json")["best_model_or_ensemble"]["name"],
            "nnUNetTrainer__nnUNetPlans__3d_fullres");
  EXPECT_TRUE(fs::exists(a + "/postprocessing.json"));
  EXPECT_NE(test::read_text(results + "/inference_instructions.txt").find("medseg_predict applies it"),
            std::string::npos);

  // A configuration that was never trained: one line naming its folder.
  const auto r3 = test::run_cli("medseg_find_best_configuration", "321 -c 3d_fullres 3d_lowres", env);
  EXPECT_NE(r3.exit_code, 0);
  EXPECT_NE(r3.output.find("nnUNetTrainer__nnUNetPlans__3d_lowres"), std::string::npos) << r3.output;
}

// ---- refusals (issue 26): names that leave the folders, values that are no probabilities, folders,
// configurations and folds given twice. Each is one line naming the file or flag, and nothing is
// written anywhere (the whole scratch folder is compared before and after). ----

TEST(Ensemble, AFileEndingThatLeavesTheOutputFolderIsRefused) {
  test::TempDir d("ensesc");
  write_prediction(d / "a", "c0", foreground_probability(0.9f, 0.1f, kWrongA));
  write_prediction(d / "b", "c0", foreground_probability(0.7f, 0.1f, kWrongB));
  json ds = kDataset;
  ds["file_ending"] = "/../../../X.nii.gz";  // c0 + this is three folders above the output
  write_json(d / "a/dataset.json", ds);
  fs::create_directories(d / "deep/er");
  const auto before = test::folder_snapshot(d.path());
  const auto r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "deep/er/out");
  test::expect_refused(r, "medseg_ensemble",
                       {d / "a/dataset.json", "file_ending '/../../../X.nii.gz' is not a valid name (it contains '/'"});
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
  EXPECT_FALSE(fs::exists(d / "X.nii.gz"));
}

TEST(Ensemble, ValuesThatAreNoProbabilitiesAreRefusedNamingTheFile) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<float, std::string>> rows = {{nan, "holds nan (class 1, voxel 3)"},
                                                           {inf, "holds inf (class 1, voxel 3)"},
                                                           {-inf, "holds -inf (class 1, voxel 3)"},
                                                           {-0.25f, "holds -0.25 (class 1, voxel 3)"},
                                                           {1.5f, "holds 1.5 (class 1, voxel 3)"}};
  for (const auto& [value, says] : rows) {
    SCOPED_TRACE(says);
    test::TempDir d("ensnan");
    write_prediction(d / "a", "c0", foreground_probability(0.9f, 0.1f, kWrongA));
    write_prediction(d / "b", "c0", foreground_probability(0.7f, 0.1f, kWrongB));
    std::vector<int64_t> shape;
    std::vector<float> p = preprocessing::read_npy_float32(d / "b/c0_probabilities.npy", shape);
    p[kN + 3] = value;  // class 1 of voxel 3
    preprocessing::write_npy(d / "b/c0_probabilities.npy", "<f4", shape, p.data(), p.size() * sizeof(float));
    const auto before = test::folder_snapshot(d.path());
    const auto r = test::run_cli("medseg_ensemble", "-i " + d / "a" + " " + d / "b" + " -o " + d / "out");
    test::expect_refused(r, "medseg_ensemble", {d / "b/c0_probabilities.npy", says, "not a probability in [0, 1]"});
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
}

TEST(Ensemble, TheSameFolderTwiceIsRefusedNamingIt) {
  test::TempDir d("enstwice");
  write_prediction(d / "a", "c0", foreground_probability(0.9f, 0.1f, kWrongA));
  write_prediction(d / "b", "c0", foreground_probability(0.7f, 0.1f, kWrongB));
  const std::vector<std::pair<std::string, std::string>> rows = {
      {d / "a" + " " + d / "a", d / "a and " + d / "a are the same folder"},
      {d / "a" + " " + d / "a/", d / "a and " + d / "a/ are the same folder"},
      {d / "a" + " " + d / "b" + " " + d / "b/../a", d / "a and " + d / "b/../a are the same folder"},
  };
  const auto before = test::folder_snapshot(d.path());
  for (const auto& [inputs, says] : rows) {
    SCOPED_TRACE(inputs);
    const auto r = test::run_cli("medseg_ensemble", "-i " + inputs + " -o " + d / "out");
    test::expect_refused(r, "medseg_ensemble", {"-i: " + says});
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
}

TEST(FindBestConfiguration, NamesThatLeaveTheResultsAndRepeatsAreRefused) {
  test::TempDir d("bestbad");
  const TwoModels m(d);
  // A model-like folder outside MEDSEG_RESULTS that "-c 2d/../../../outside_model" reaches.
  fs::copy(m.b, d / "outside_model", fs::copy_options::recursive);
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"-c 3d_fullres 2d/../../../outside_model", "configuration (-c) '2d/../../../outside_model' is not a valid name"},
      {"-c .. 2d", "configuration (-c) '..' is not a valid name"},
      {"-c 3d_fullres 2d -tr ../../outside_model", "trainer name (-tr) '../../outside_model' is not a valid name"},
      {"-c 3d_fullres 2d -p a/b", "plans name (-p) 'a/b' is not a valid name"},
      {"-c 2d 2d", "-c 2d 2d: configuration '2d' is given twice"},
      {"-c 3d_fullres 2d 3d_fullres", "-c 3d_fullres 2d 3d_fullres: configuration '3d_fullres' is given twice"},
      {"-c 3d_fullres 2d -f 0 0", "-f 0 0: fold 0 is given twice"},
      {"-c 3d_fullres 2d -f 1 01", "-f 1 01: fold 1 is given twice"},
      {"-c 3d_fullres 2d -f 0/../../../../outside_model", "fold must be a non-negative integer or 'all', got '0/../"},
  };
  const auto before = test::folder_snapshot(d.path());
  for (const auto& [args, says] : rows) {
    SCOPED_TRACE(args);
    const auto r = test::run_cli("medseg_find_best_configuration", "321 " + args + " -np 1", m.env);
    test::expect_refused(r, "medseg_find_best_configuration", {says});
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
}

// Issue 26: a failed run leaves no crossval_results_folds_* (or ensemble) folder behind, whether it
// fails on a configuration that was never trained or on a damaged prediction after gathering.
TEST(FindBestConfiguration, AFailedRunLeavesNoFolderBehind) {
  test::TempDir d("bestfail");
  const TwoModels m(d);
  std::ofstream(m.b + "/fold_1/validation/case_3.nii.gz") << "not an image";
  const auto before = test::folder_snapshot(d.path());
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"-c 3d_fullres 3d_lowres", "nnUNetTrainer__nnUNetPlans__3d_lowres: no trained model here"},
      {"-c 3d_fullres 2d", "case_3.nii.gz"},
  };
  for (const auto& [args, says] : rows) {
    SCOPED_TRACE(args);
    const auto r = test::run_cli("medseg_find_best_configuration", "321 " + args + " -np 1", m.env);
    test::expect_refused(r, "medseg_find_best_configuration", {says});
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
}

// Issue 26: without -c, the configurations compared are those the plans define; a dataset planned
// without 3d_lowres is not told to train 3d_lowres first.
TEST(FindBestConfiguration, WithoutDashCTheConfigurationsAreThoseOfThePlans) {
  test::TempDir d("bestdefault");
  const TwoModels m(d);
  write_json(
      d / "pre/Dataset321_Organ/nnUNetPlans.json",
      {{"plans_name", "nnUNetPlans"}, {"configurations", {{"2d", json::object()}, {"3d_fullres", json::object()}}}});
  const auto r = test::run_cli("medseg_find_best_configuration", "321 -np 1", m.env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json info = read_json(m.results + "/inference_information.json");
  ASSERT_EQ(info["considered_models"].size(), 3u) << info.dump(2);  // 2d, 3d_fullres, their ensemble
  EXPECT_EQ(info["considered_models"][0]["configurations"], json({"2d"}));
  EXPECT_EQ(info["considered_models"][1]["configurations"], json({"3d_fullres"}));
}
