// Determining and applying postprocessing on folders, against Dice values counted by hand:
// a spurious component is removed and Dice rises; a true second component is kept; the per-label
// rule takes one label's step when the foreground step would hurt another; the CLIs, a model
// folder's cross-validation, and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_io.h"
#include "io/image_io.h"
#include "postprocessing/crossval.h"
#include "postprocessing/determine.h"
#include "support/bad_input.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::postprocessing;
namespace fs = std::filesystem;

namespace {

constexpr std::array<int64_t, 3> kPostShape{6, 10, 10};

struct Drawing {
  std::vector<double> v = std::vector<double>(6 * 10 * 10, 0.0);
  Drawing& box(int value, std::array<int, 3> lo, std::array<int, 3> hi) {
    for (int z = lo[0]; z < hi[0]; ++z)
      for (int y = lo[1]; y < hi[1]; ++y)
        for (int x = lo[2]; x < hi[2]; ++x) v[static_cast<size_t>((z * 10 + y) * 10 + x)] = value;
    return *this;
  }
  Drawing& voxel(int value, int z, int y, int x) { return box(value, {z, y, x}, {z + 1, y + 1, x + 1}); }
  void write(const std::string& path) const {
    Geometry g;
    g.spacing = {0.9, 0.9, 2.0};
    g.origin = {10, -20, 30};
    io::write_image(path, Volume::from_values(PixelType::UInt8, kPostShape, g, v));
  }
};

// Label 1: a 27-voxel cube and a separate 8-voxel cube; label 2: an 8-voxel cube.
Drawing reference() {
  return Drawing().box(1, {1, 1, 1}, {4, 4, 4}).box(1, {1, 6, 1}, {3, 8, 3}).box(2, {1, 6, 6}, {3, 8, 8});
}

void post_write_dataset_json(const std::string& folder) {
  write_json(folder + "/dataset.json", {{"labels", {{"background", 0}, {"liver", 1}, {"tumour", 2}}},
                                        {"channel_names", {{"0", "CT"}}},
                                        {"numTraining", 2},
                                        {"file_ending", ".nii.gz"}});
}

double dice(const json& summary, const std::string& key) {
  return key == "fg" ? summary["foreground_mean"]["Dice"].get<double>() : summary["mean"][key]["Dice"].get<double>();
}

// d/ref/a.nii.gz holds reference(), d/pred/a.nii.gz `pred`, d/pred/dataset.json the labels.
void write_case_folders(const test::TempDir& d, const Drawing& pred) {
  fs::create_directories(d / "ref");
  fs::create_directories(d / "pred");
  post_write_dataset_json(d / "pred");
  reference().write(d / "ref/a.nii.gz");
  pred.write(d / "pred/a.nii.gz");
}

// reference() with a stray label-2 voxel far from everything.
Drawing with_stray_label_2() {
  Drawing pred = reference();
  pred.voxel(2, 5, 0, 9);
  return pred;
}

DetermineOptions options(const std::string& pred, const std::string& ref) {
  DetermineOptions o;
  o.predictions = pred;
  o.references = ref;
  evaluation::labels_from_dataset_json(read_json(pred + "/dataset.json"), o.evaluation);
  return o;
}

}  // namespace

TEST(DeterminePostprocessing, SpuriousComponentIsRemovedAndDiceRises) {
  test::TempDir d("ppdet");
  fs::create_directories(d / "ref");
  fs::create_directories(d / "pred");
  post_write_dataset_json(d / "pred");
  // Both labels hold one component each here; the predictions add one stray label-1 voxel.
  const Drawing ref = Drawing().box(1, {1, 1, 1}, {4, 4, 4}).box(2, {1, 4, 1}, {3, 6, 3});
  for (const char* c : {"a", "b"}) {
    ref.write(d / "ref" + "/" + c + ".nii.gz");
    Drawing pred = ref;
    pred.voxel(1, 5, 9, 9);
    pred.write(d / "pred" + "/" + c + ".nii.gz");
  }
  const Postprocessing pp = determine_postprocessing(options(d / "pred", d / "ref"));
  // Label 1: TP 27, FP 1 -> Dice 54/55; label 2 perfect. The foreground step (labels 1 and 2 touch,
  // so they form one component) removes only the stray voxel.
  ASSERT_EQ(pp.steps.size(), 1u);
  EXPECT_EQ(pp.steps[0].values, (std::vector<int>{1, 2}));
  EXPECT_NEAR(dice(pp.before, "1"), 54.0 / 55.0, 1e-12);
  EXPECT_NEAR(dice(pp.before, "fg"), (54.0 / 55.0 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(dice(pp.after, "fg"), 1.0, 1e-12);
  // The postprocessed predictions equal the references, grid included.
  for (const char* c : {"a", "b"}) {
    const Volume got = io::read_image(d / "pred/postprocessed" + "/" + c + ".nii.gz");
    EXPECT_EQ(got.to_double(), ref.v);
    EXPECT_EQ(got.pixel_type(), PixelType::UInt8);
    EXPECT_NEAR(got.geometry().spacing[2], 2.0, 1e-6);
  }
  EXPECT_NEAR(dice(read_json(d / "pred/postprocessed/summary.json"), "fg"), 1.0, 1e-12);
  EXPECT_EQ(postprocessing_from_json(read_json(d / "pred/postprocessing.json"), "pp").steps[0].values,
            (std::vector<int>{1, 2}));
}

TEST(DeterminePostprocessing, PerLabelStepWhenTheForegroundStepWouldHurt) {
  test::TempDir d("ppdet2");
  write_case_folders(d, with_stray_label_2());
  const Postprocessing pp = determine_postprocessing(options(d / "pred", d / "ref"));
  // Keeping the largest foreground component would drop label 1's true 8-voxel cube (Dice 54/62)
  // and all of label 2 (Dice 0): refused. Label 1 alone: drops the same true cube: refused.
  // Label 2 alone: drops the stray voxel, Dice 16/17 -> 1: taken.
  ASSERT_EQ(pp.steps.size(), 1u);
  EXPECT_EQ(pp.steps[0].values, (std::vector<int>{2}));
  EXPECT_NEAR(dice(pp.before, "2"), 16.0 / 17.0, 1e-12);
  EXPECT_NEAR(dice(pp.after, "2"), 1.0, 1e-12);
  EXPECT_NEAR(dice(pp.after, "1"), 1.0, 1e-12);
  EXPECT_EQ(io::read_image(d / "pred/postprocessed/a.nii.gz").to_double(), reference().v);
}

TEST(DeterminePostprocessing, NothingIsChosenWhenNothingHelps) {
  test::TempDir d("ppdet3");
  write_case_folders(d, reference());
  DetermineOptions o = options(d / "pred", d / "ref");
  o.keep_postprocessed = false;
  const Postprocessing pp = determine_postprocessing(o);
  EXPECT_TRUE(pp.steps.empty());
  EXPECT_FALSE(fs::exists(d / "pred/postprocessed"));
  EXPECT_TRUE(postprocessing_from_json(read_json(d / "pred/postprocessing.json"), "pp").steps.empty());
}

TEST(PostprocessingCli, DetermineThenApplyAsAUserWould) {
  test::TempDir d("ppcli");
  write_case_folders(d, with_stray_label_2());
  auto r = test::run_cli("medseg_determine_postprocessing", "-i " + d / "pred" + " -ref " + d / "ref" + " -np 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 step(s) chosen"), std::string::npos) << r.output;
  r = test::run_cli("medseg_apply_postprocessing",
                    "-i " + d / "pred" + " -o " + d / "out" + " -pp_json " + d / "pred/postprocessing.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(io::read_image(d / "out/a.nii.gz").to_double(), reference().v);
  EXPECT_TRUE(fs::exists(d / "out/dataset.json"));
}

TEST(PostprocessingCli, BadInputIsOneLineAndTouchesNothing) {
  test::TempDir d("ppbad");
  fs::create_directories(d / "pred");
  post_write_dataset_json(d / "pred");
  reference().write(d / "pred/a.nii.gz");
  write_json(d / "pred/postprocessing.json",
             {{"postprocessing_fns", {"fill_holes"}}, {"postprocessing_kwargs", {{{"labels_or_regions", 1}}}}});
  const auto before = test::folder_snapshot(d.path());
  struct Case {
    std::string app, args, says;
  };
  const std::vector<Case> cases = {
      {"medseg_apply_postprocessing", "-i " + d / "pred" + " -o " + d / "out", "unknown postprocessing step"},
      {"medseg_apply_postprocessing",
       "-i " + d / "pred" + " -o " + d / "pred" + " -pp_json " + d / "pred/postprocessing.json",
       "unknown postprocessing step"},
      {"medseg_determine_postprocessing", "-i " + d / "pred" + " -ref " + d / "nowhere", "reference folder not found"},
      {"medseg_determine_postprocessing", "-m " + d / "pred", "no fold_K/validation folder"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_cli(c.app, c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(test::folder_snapshot(d.path()), before) << c.args;
  }
  // The input folder as output: refused before anything is read or written.
  write_json(d / "good.json", {{"postprocessing_fns", json::array()}, {"postprocessing_kwargs", json::array()}});
  const auto snap = test::folder_snapshot(d / "pred");
  const auto r = test::run_cli("medseg_apply_postprocessing",
                               "-i " + d / "pred" + " -o " + d / "pred/" + " -pp_json " + d / "good.json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("is the input folder"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(d / "pred"), snap);
}

// Issue 26: a case that fails half-way removes the output folder the command made, with the cases
// written before it: a half-written folder would pass for postprocessed predictions.
TEST(PostprocessingCli, AFailedApplyLeavesNoOutputFolder) {
  test::TempDir d("pphalf");
  write_case_folders(d, with_stray_label_2());
  std::ofstream(d / "pred/zz_last.nii.gz") << "not an image";
  write_json(d / "pp.json", {{"postprocessing_fns", json::array()}, {"postprocessing_kwargs", json::array()}});
  const auto before = test::folder_snapshot(d.path());
  const auto r = test::run_cli("medseg_apply_postprocessing",
                               "-i " + d / "pred" + " -o " + d / "out/pp" + " -pp_json " + d / "pp.json" + " -np 1");
  test::expect_refused(r, "medseg_apply_postprocessing", {d / "pred/zz_last.nii.gz"});
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
}

// Issue 26: a folder named plans.json in the input said "Operation not supported".
TEST(PostprocessingCli, AFolderWhereAJsonFileBelongsIsNamed) {
  test::TempDir d("ppdir");
  write_case_folders(d, with_stray_label_2());
  fs::create_directories(d / "pred/plans.json");
  write_json(d / "pp.json", {{"postprocessing_fns", json::array()}, {"postprocessing_kwargs", json::array()}});
  const auto before = test::folder_snapshot(d.path());
  const auto r = test::run_cli("medseg_apply_postprocessing",
                               "-i " + d / "pred" + " -o " + d / "out" + " -pp_json " + d / "pp.json");
  test::expect_refused(r, "medseg_apply_postprocessing", {d / "pred/plans.json: is a folder, not a file"});
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
}

TEST(PostprocessingCli, StepsTheDatasetCannotHaveAreRefused) {
  // dataset.json declares labels 1 and 2; each step below was applied (as label 1, or as nothing).
  const std::vector<std::pair<json, std::vector<std::string>>> rows = {
      {7, {"step 0 keeps label 7, which dataset.json does not declare (foreground labels: [1,2])"}},
      {json::parse("[1, [2, 9]]"), {"step 0 keeps label 9, which dataset.json does not declare"}},
      {4294967297LL, {"postprocessing_kwargs[0].labels_or_regions is 4294967297 (expected an integer"}},
      {json::parse("[[[1, 2]]]"),
       {"postprocessing_kwargs[0].labels_or_regions[0][0] is [1,2]", "a region holds labels, not lists"}},
  };
  for (const auto& [labels, says] : rows) {
    SCOPED_TRACE(labels.dump());
    test::TempDir d("ppundeclared");
    write_case_folders(d, with_stray_label_2());
    write_json(d / "pp.json", {{"postprocessing_fns", {"remove_all_but_largest_component_from_segmentation"}},
                               {"postprocessing_kwargs", {{{"labels_or_regions", labels}}}}});
    const auto before = test::folder_snapshot(d.path());
    const auto r = test::run_cli("medseg_apply_postprocessing",
                                 "-i " + d / "pred" + " -o " + d / "out" + " -pp_json " + d / "pp.json");
    std::vector<std::string> fragments = says;
    fragments.push_back(d / "pp.json");
    test::expect_refused(r, "medseg_apply_postprocessing", fragments);
    EXPECT_EQ(test::folder_snapshot(d.path()), before);
  }
}

TEST(PostprocessingCli, ModelFolderCrossValidationGivesPredictTheFile) {
  test::TempDir d("ppmodel");
  const std::string model = d / "results/Dataset123_Liver/nnUNetTrainer__nnUNetPlans__3d_fullres";
  const std::string gt = d / "pre/Dataset123_Liver/gt_segmentations";
  fs::create_directories(gt);
  post_write_dataset_json(model);
  const char* fold_of[] = {"0", "1", "0"};
  for (int i = 0; i < 3; ++i) {
    const std::string c = "case_" + std::to_string(i) + ".nii.gz";
    reference().write(gt + "/" + c);
    const std::string val = model + "/fold_" + fold_of[i] + "/validation";
    fs::create_directories(val);
    with_stray_label_2().write(val + "/" + c);
  }
  write_json(model + "/fold_0/validation/summary.json", json::object());  // not a case: not gathered
  const auto r = test::run_cli("medseg_determine_postprocessing", "-m " + model, "MEDSEG_PREPROCESSED=" + d / "pre");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gathered 3 validation case(s) of 2 fold(s)"), std::string::npos) << r.output;
  const std::string cv = model + "/crossval_results_folds_0_1";
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fs::exists(cv + "/case_" + std::to_string(i) + ".nii.gz"));
  EXPECT_EQ(postprocessing_from_json(read_json(model + "/postprocessing.json"), "pp").steps[0].values,
            (std::vector<int>{2}));
  EXPECT_TRUE(fs::exists(cv + "/postprocessed/case_2.nii.gz"));

  // A case validated by two folds means the folds overlap: refused, naming the file.
  reference().write(model + "/fold_1/validation/case_0.nii.gz");
  const auto snap = test::folder_snapshot(model);
  try {
    gather_crossval(model, {}, gt, ".nii.gz");
    ADD_FAILURE() << "overlapping folds accepted";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("case_0.nii.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the folds overlap"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::folder_snapshot(model), snap);
}

// nnUNetv2_accumulate_crossval_results: the folds gathered and scored; label 2 has one stray voxel
// in each prediction (Dice 16/17), label 1 is exact.
TEST(AccumulateCrossvalCli, GathersTheFoldsAndScoresThem) {
  test::TempDir d("accumulate");
  const std::string model = d / "results/Dataset123_Liver/nnUNetTrainer__nnUNetPlans__3d_fullres";
  const std::string gt = d / "pre/Dataset123_Liver/gt_segmentations";
  fs::create_directories(gt);
  post_write_dataset_json(model);
  const char* fold_of[] = {"0", "1", "0"};
  for (int i = 0; i < 4; ++i)
    reference().write(gt + "/case_" + std::to_string(i) + ".nii.gz");  // case_3: fold 2, not trained
  for (int i = 0; i < 3; ++i) {
    const std::string val = model + "/fold_" + fold_of[i] + "/validation";
    fs::create_directories(val);
    with_stray_label_2().write(val + "/case_" + std::to_string(i) + ".nii.gz");
  }
  const std::string env = "MEDSEG_PREPROCESSED=" + d / "pre" + " MEDSEG_RESULTS=" + d / "results";
  auto r = test::run_cli("medseg_accumulate_crossval_results", "123 -c 3d_fullres -f 0 1", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = read_json(model + "/crossval_results_folds_0_1/summary.json");
  EXPECT_EQ(s["metric_per_case"].size(), 3u);
  EXPECT_DOUBLE_EQ(dice(s, "1"), 1.0);
  EXPECT_DOUBLE_EQ(dice(s, "2"), 16.0 / 17.0);
  // -o: a new folder is made; one that holds something is refused and left as it was.
  r = test::run_cli("medseg_accumulate_crossval_results", "Liver -c 3d_fullres -o " + d / "cv", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "cv/summary.json"));
  EXPECT_TRUE(fs::exists(d / "cv/case_2.nii.gz"));
  fs::create_directories(d / "busy");
  write_json(d / "busy/mine.json", json::object());
  r = test::run_cli("medseg_accumulate_crossval_results", "123 -c 3d_fullres -o " + d / "busy", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("is not empty"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(d / "busy").size(), 1u);
  r = test::run_cli("medseg_accumulate_crossval_results", "123 -c 3d_fullres -f 2", env);  // fold 2 not trained
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("fold_2/validation"), std::string::npos) << r.output;
  r = test::run_cli("medseg_accumulate_crossval_results", "123 -c ../x", env);
  EXPECT_NE(r.exit_code, 0);
}
