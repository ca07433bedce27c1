// Label maps with values dataset.json does not declare (7 in a 0..2 dataset), negative values
// (-1 would merge with preprocessing's "outside the image"), non-integer values, and values far
// outside int32 are refused naming the case, the file and the value, by verify, fingerprint and
// preprocessing; before, preprocessing took them and training failed ("Target 7 is out of
// bounds") or trained on them, and 3e9 was reported wrapped around int32. Region datasets and the
// ignore label count their values as declared.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "io/synthetic_dataset.h"
#include "support/nifti_patch.h"
#include "support/test_support.h"
#include "support/output_lines.h"

namespace fs = std::filesystem;
using namespace medseg;

using medseg::test::line_naming;

namespace {

constexpr const char* kLabelsName = "Dataset951_Lab";

// A tiny two-case dataset (labels 0, 1, 2) with its fingerprint and plans, made once.
struct LabelsBase {
  test::TempDir dir{"labbase"};
  std::string raw = dir / "raw", pp = dir / "pp";
  LabelsBase() {
    io::SyntheticDatasetOptions o;
    o.dataset_id = 951;
    o.name = "Lab";
    o.num_cases = 2;
    o.min_shape = o.max_shape = {8, 12, 12};
    io::write_synthetic_dataset(raw, o);
    const std::string env = "MEDSEG_RAW=" + raw + " MEDSEG_PREPROCESSED=" + pp;
    auto r = test::run_cli("medseg_extract_fingerprint", "-d 951 --max-samples-total 1000 --np 1 --no-progress", env);
    if (r.exit_code == 0) r = test::run_cli("medseg_plan_experiment", "-d 951", env);
    if (r.exit_code != 0) throw std::runtime_error("planning the base dataset failed: " + r.output);
  }
};

const LabelsBase& labels_base() {
  static LabelsBase b;
  return b;
}

// A copy of the base dataset to spoil.
struct Copy {
  test::TempDir dir{"lab"};
  std::string raw = dir / "raw", pp = dir / "pp";
  std::string folder = raw + "/" + kLabelsName;
  Copy() {
    fs::copy(labels_base().raw, raw, fs::copy_options::recursive);
    fs::copy(labels_base().pp, pp, fs::copy_options::recursive);
  }
  std::string env(const std::string& pp_root) const { return "MEDSEG_RAW=" + raw + " MEDSEG_PREPROCESSED=" + pp_root; }
  std::string label(const std::string& id) const { return folder + "/labelsTr/" + id + ".nii.gz"; }
  // Rewrites a case's label map as `type`, with `value` at the centre voxel.
  void set_label_value(const std::string& id, PixelType type, double value) const {
    const Volume l = io::read_label(label(id));
    std::vector<double> v = l.to_double();
    v[v.size() / 2] = value;
    io::write_image(label(id), Volume::from_values(type, l.shape(), l.geometry(), v));
  }
};

struct LabelRow {
  const char* name;
  PixelType type;
  double value;
  const char* expect;  // fragment of the one-line message, with the value as it is in the file
};
// gtest prints a row by its name.
void PrintTo(const LabelRow& r, std::ostream* os) { *os << r.name; }

const LabelRow kLabelsRows[] = {
    {"Undeclared7", PixelType::UInt8, 7, "label value(s) 7 not declared in dataset.json (declared: 0, 1, 2)"},
    {"Negative", PixelType::Int16, -1, "label value(s) -1 not declared in dataset.json"},
    {"NonInteger", PixelType::Float32, 2.5, "non-integer value(s) 2.5"},
    {"Float3e9", PixelType::Float32, 3e9, "value 3000000000"},
    {"UInt32_3e9", PixelType::UInt32, 3e9, "value 3000000000"},
    {"Int64_minus3e9", PixelType::Int64, -3e9, "value -3000000000"},
};

class BadLabel : public ::testing::TestWithParam<LabelRow> {
 protected:
  void SetUp() override { c_.set_label_value("case_000", GetParam().type, GetParam().value); }
  void expect_refused(const test::CmdResult& r) {
    EXPECT_GE(r.exit_code, 1) << r.output;
    EXPECT_LT(r.exit_code, 128) << "killed by a signal:\n" << r.output;
    const std::string line = line_naming(r.output, c_.label("case_000"));
    EXPECT_NE(line.find(GetParam().expect), std::string::npos)
        << "wanted a line naming " << c_.label("case_000") << " and '" << GetParam().expect << "'; got:\n"
        << r.output;
    EXPECT_EQ(r.output.find("-1294967296"), std::string::npos) << "3e9 wrapped around int32:\n" << r.output;
  }
  Copy c_;
};

TEST_P(BadLabel, VerifyDatasetNamesIt) {
  const auto r = test::run_cli("medseg_verify_dataset", "-i " + c_.folder + " --np 1");
  expect_refused(r);
  EXPECT_NE(r.output.find("problem: " + c_.label("case_000")), std::string::npos) << r.output;
}

TEST_P(BadLabel, PreprocessRefusesItAndLeavesNoPartialOutput) {
  expect_refused(test::run_cli("medseg_preprocess", "-d 951 -c 3d_fullres --np 1 --no-progress", c_.env(c_.pp)));
  EXPECT_FALSE(fs::exists(c_.pp + "/" + kLabelsName + "/nnUNetPlans_3d_fullres"));
}

TEST_P(BadLabel, PlanAndPreprocessRefusesItBeforeWritingAnything) {
  const std::string fresh = c_.dir / "pp_fresh";
  expect_refused(
      test::run_cli("medseg_plan_and_preprocess", "-d 951 -c 3d_fullres --npfp 1 -np 1 --no-progress", c_.env(fresh)));
  EXPECT_FALSE(fs::exists(fresh + "/" + kLabelsName + "/dataset_fingerprint.json"));
  EXPECT_FALSE(fs::exists(fresh + "/" + kLabelsName + "/nnUNetPlans.json"));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadLabel, ::testing::ValuesIn(kLabelsRows),
                         [](const ::testing::TestParamInfo<LabelRow>& i) { return std::string(i.param.name); });

// Valid label declarations that verify used to flag or must keep accepting: the values of a
// region dataset are the union of its lists; nnU-Net's ignore label sits in `labels`.
struct DeclaredRow {
  const char* name;
  json labels;
  double value;  // written into case_000's label map
};

TEST(DeclaredLabels, RegionAndIgnoreValuesAreDeclared) {
  const DeclaredRow rows[] = {
      {"Regions", json{{"background", 0}, {"whole", {1, 2}}, {"core", 2}}, 1},
      {"RegionsOnlyLists", json{{"background", 0}, {"whole", {1, 2}}, {"core", {2}}}, 1},
      {"IgnoreInLabels", json{{"background", 0}, {"a", 1}, {"b", 2}, {"ignore", 3}}, 3},
  };
  for (const DeclaredRow& row : rows) {
    SCOPED_TRACE(row.name);
    Copy c;
    json ds = read_json(c.folder + "/dataset.json");
    ds["labels"] = row.labels;
    write_json(c.folder + "/dataset.json", ds);
    c.set_label_value("case_000", PixelType::UInt8, row.value);
    const auto r = test::run_cli("medseg_verify_dataset", "-i " + c.folder + " --np 1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

// A negative value in dataset.json is refused where it is read (a plain one was reported as "not
// consecutive (missing 0)", one in a region list was taken).
TEST(DeclaredLabels, NegativeValueInDatasetJsonIsRefused) {
  const DeclaredRow rows[] = {
      {"Plain", json{{"background", 0}, {"a", -1}}, 0},
      {"InRegion", json{{"background", 0}, {"whole", {1, -1}}, {"core", 1}}, 0},
  };
  for (const DeclaredRow& row : rows) {
    SCOPED_TRACE(row.name);
    Copy c;
    json ds = read_json(c.folder + "/dataset.json");
    ds["labels"] = row.labels;
    write_json(c.folder + "/dataset.json", ds);
    const auto r = test::run_cli("medseg_verify_dataset", "-i " + c.folder + " --np 1");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(line_naming(r.output, "dataset.json").find("negative value -1"), std::string::npos) << r.output;
  }
}

// verify goes on after a bad file: a NaN sform in one case, an undeclared label in the other and
// a stray file are all listed, and the exit code is 1.
TEST(VerifyDataset, ListsEveryFindingAfterABadFile) {
  Copy c;
  test::nifti::patch_file(c.folder + "/imagesTr/case_000_0000.nii.gz", [](std::string& b) {
    test::nifti::poke<int16_t>(b, test::nifti::kSformCode, 1);
    test::nifti::poke(b, test::nifti::kSrowX, test::nifti::kNaN);
  });
  c.set_label_value("case_001", PixelType::UInt8, 7);
  write_file_atomic(c.folder + "/imagesTr/notes.txt", "stray");
  const auto r = test::run_cli("medseg_verify_dataset", "-i " + c.folder + " --np 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(line_naming(r.output, "case_000_0000.nii.gz").find("sform matrix holds NaN"), std::string::npos)
      << r.output;
  EXPECT_NE(line_naming(r.output, "case_001.nii.gz").find("label value(s) 7"), std::string::npos) << r.output;
  EXPECT_NE(line_naming(r.output, "notes.txt").find("unexpected file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 problem(s)"), std::string::npos) << r.output;
}

}  // namespace
