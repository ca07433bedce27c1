// medseg_evaluate refuses a prediction it cannot score honestly: one on another grid than its
// reference (origin, spacing, direction), or one (or a reference) holding a label value
// dataset.json does not declare. Before, it scored such pairs voxel by voxel without a word.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "support/test_support.h"
#include "support/output_lines.h"

namespace fs = std::filesystem;
using namespace medseg;

using medseg::test::line_naming;

namespace {

const std::array<int64_t, 3> kShape{4, 5, 6};

// Label 1 in the first half of the voxels, 2 in a few, 0 elsewhere.
std::vector<double> labels() {
  std::vector<double> v(4 * 5 * 6, 0.0);
  for (size_t i = 0; i < v.size() / 2; ++i) v[i] = 1;
  for (size_t i = v.size() / 2; i < v.size() / 2 + 5; ++i) v[i] = 2;
  return v;
}

Geometry reference_geometry() {
  Geometry g;
  g.spacing = {0.8, 0.8, 2.5};
  g.origin = {10, -20, 30};
  return g;
}

struct EvalRow {
  const char* name;
  void (*spoil)(Geometry& g, std::vector<double>& pred, std::vector<double>& ref);
  const char* bad_file;  // "pred" or "gt": the file the message must name
  const char* expect;
};
// gtest prints a row by its name.
void PrintTo(const EvalRow& r, std::ostream* os) { *os << r.name; }

const EvalRow kRows[] = {
    {"ShiftedOrigin", [](Geometry& g, auto&, auto&) { g.origin[1] += 0.5; }, "pred", "origin"},
    {"OtherSpacing", [](Geometry& g, auto&, auto&) { g.spacing[2] = 3.0; }, "pred", "spacing"},
    {"FlippedDirection", [](Geometry& g, auto&, auto&) { g.direction[0] = -1; }, "pred", "direction"},
    {"UndeclaredLabelInPrediction", [](Geometry&, auto& pred, auto&) { pred[3] = 5; }, "pred",
     "label value(s) 5 not declared in dataset.json"},
    {"UndeclaredLabelInReference", [](Geometry&, auto&, auto& ref) { ref[7] = 9; }, "gt",
     "label value(s) 9 not declared in dataset.json"},
};

void write_dataset_json(const std::string& path, const json& labels) {
  write_json(
      path, json{{"labels", labels}, {"file_ending", ".nii.gz"}, {"channel_names", {{"0", "CT"}}}, {"numTraining", 1}});
}

}  // namespace

class BadPrediction : public ::testing::TestWithParam<EvalRow> {};

TEST_P(BadPrediction, IsRefusedNamingTheFile) {
  const EvalRow& row = GetParam();
  test::TempDir d("badeval");
  fs::create_directories(d / "gt");
  fs::create_directories(d / "pred");
  Geometry g = reference_geometry();
  std::vector<double> pred = labels(), ref = labels();
  row.spoil(g, pred, ref);
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, reference_geometry(), ref));
  io::write_image(d / "pred/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, g, pred));
  write_dataset_json(d / "dataset.json", {{"background", 0}, {"a", 1}, {"b", 2}});
  const auto r = test::run_cli("medseg_evaluate", d / "gt " + d / "pred -djfile " + d / "dataset.json --np 1");
  EXPECT_GE(r.exit_code, 1) << r.output;
  EXPECT_LT(r.exit_code, 128) << r.output;
  const std::string bad = d / (std::string(row.bad_file) + "/c1.nii.gz");
  EXPECT_NE(line_naming(r.output, bad).find(row.expect), std::string::npos)
      << "wanted a line naming " << bad << " and '" << row.expect << "'; got:\n"
      << r.output;
  EXPECT_FALSE(fs::exists(d / "pred/summary.json"));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadPrediction, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<EvalRow>& i) { return std::string(i.param.name); });

// The grid check has a tolerance: float32 rounding in a header written by another tool is no
// mismatch.
TEST(EvaluateGrid, RoundingInTheHeaderIsAccepted) {
  test::TempDir d("evaltol");
  fs::create_directories(d / "gt");
  fs::create_directories(d / "pred");
  Geometry g = reference_geometry();
  g.origin[0] += 1e-6;
  g.spacing[1] *= 1 + 1e-7;
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, reference_geometry(), labels()));
  io::write_image(d / "pred/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, g, labels()));
  write_dataset_json(d / "dataset.json", {{"background", 0}, {"a", 1}, {"b", 2}});
  const auto r = test::run_cli("medseg_evaluate", d / "gt " + d / "pred -djfile " + d / "dataset.json --np 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_DOUBLE_EQ(read_json(d / "pred/summary.json")["mean"]["1"]["Dice"].get<double>(), 1.0);
}

// nnU-Net's ignore label sits in `labels` ("ignore": 3): its voxels in the reference count
// nowhere, so a prediction that differs from the reference only there scores Dice 1.
TEST(EvaluateGrid, IgnoreLabelInLabelsIsDeclaredAndIgnored) {
  test::TempDir d("evalign");
  fs::create_directories(d / "gt");
  fs::create_directories(d / "pred");
  std::vector<double> ref = labels(), pred = labels();
  ref[0] = 3;  // pred says 1 there
  ref[20] = 3;
  pred[20] = 0;
  io::write_image(d / "gt/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, reference_geometry(), ref));
  io::write_image(d / "pred/c1.nii.gz", Volume::from_values(PixelType::UInt8, kShape, reference_geometry(), pred));
  write_dataset_json(d / "dataset.json", {{"background", 0}, {"a", 1}, {"b", 2}, {"ignore", 3}});
  const auto r = test::run_cli("medseg_evaluate", d / "gt " + d / "pred -djfile " + d / "dataset.json --np 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = read_json(d / "pred/summary.json");
  EXPECT_DOUBLE_EQ(s["mean"]["1"]["Dice"].get<double>(), 1.0);
  EXPECT_FALSE(s["mean"].contains("3"));
}

// Issue 42: `-o GT/case.nii.gz` replaced a reference label with the summary's JSON and exited 0. A
// summary is never written over a segmentation, inside the reference folder, or around the predictions;
// nnU-Net's default (PRED/summary.json) and any .json beside the predictions stay allowed.
TEST(EvaluateOutput, TheSummaryNeverReplacesAnInput) {
  test::TempDir d("evalout");
  fs::create_directories(d / "gt");
  fs::create_directories(d / "pred");
  const Volume v = Volume::from_values(PixelType::UInt8, kShape, reference_geometry(), labels());
  io::write_image(d / "gt/c1.nii.gz", v);
  io::write_image(d / "pred/c1.nii.gz", v);
  write_dataset_json(d / "dataset.json", {{"background", 0}, {"a", 1}, {"b", 2}});
  const auto before = test::folder_snapshot(d.path());
  for (const auto& [out, fragment] :
       std::vector<std::pair<std::string, std::string>>{{d / "gt/c1.nii.gz", "lies inside the reference folder"},
                                                        {d / "gt/summary.json", "lies inside the reference folder"},
                                                        {d / "gt", "is the reference folder itself"},
                                                        {d / "pred/c1.nii.gz", "ends like a segmentation"},
                                                        {d / "pred/other.nii", "ends like a segmentation"},
                                                        {d.path(), "contains the reference folder"}}) {
    SCOPED_TRACE(out);
    for (const char* app : {"medseg_evaluate", "medseg_evaluate_simple"}) {
      const std::string args = std::string(app) == "medseg_evaluate"
                                   ? d / "gt " + d / "pred -djfile " + d / "dataset.json --np 1 -o " + out
                                   : d / "gt " + d / "pred -l 1 2 --np 1 -o " + out;
      const auto r = test::run_cli(app, args);
      EXPECT_NE(r.exit_code, 0) << r.output;
      EXPECT_NE(r.output.find(out + ": " + fragment), std::string::npos) << r.output;
      EXPECT_EQ(test::folder_snapshot(d.path()), before);
    }
  }
  auto r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1 2 --np 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "pred/summary.json"));
  r = test::run_cli("medseg_evaluate_simple", d / "gt " + d / "pred -l 1 2 --np 1 -o " + d / "pred/fold0.json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}
