// medseg_move_plans_between_datasets against nnU-Net's rules, written out by hand: dataset_name and
// plans_name replaced, data identifiers renamed, the reader/writer chosen for the target, key order kept.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/json_io.h"
#include "planning/move_plans.h"
#include "support/test_support.h"

using namespace medseg;
using planning::ordered_json;

namespace {

const char* kSourcePlans = R"({
  "dataset_name": "Dataset001_A",
  "plans_name": "nnUNetPlans",
  "image_reader_writer": "SimpleITKIO",
  "configurations": {
    "2d": {"data_identifier": "nnUNetPlans_2d", "patch_size": [64, 64]},
    "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "patch_size": [32, 48, 48]},
    "3d_custom": {"data_identifier": "custom_3d", "patch_size": [32, 48, 48]},
    "3d_cascade_fullres": {"inherits_from": "3d_fullres"}
  }
})";

void move_write_dataset_json(const std::string& path, const std::string& file_ending) {
  write_json(path, json{{"labels", {{"background", 0}, {"x", 1}}},
                        {"file_ending", file_ending},
                        {"channel_names", {{"0", "CT"}}},
                        {"numTraining", 1}});
}

}  // namespace

TEST(MovePlans, RenamesAsNnUNetDoes) {
  test::TempDir d("move_plans");
  move_write_dataset_json(d / "dataset.json", ".png");
  const auto target = planning::load_dataset_json(d / "dataset.json");
  const ordered_json out = planning::move_plans(ordered_json::parse(kSourcePlans), "Dataset002_B", "nnUNetPlans",
                                                "nnUNetPlansFrom1", target);
  EXPECT_EQ(out["dataset_name"], "Dataset002_B");
  EXPECT_EQ(out["plans_name"], "nnUNetPlansFrom1");
  EXPECT_EQ(out["configurations"]["2d"]["data_identifier"], "nnUNetPlansFrom1_2d");
  EXPECT_EQ(out["configurations"]["3d_fullres"]["data_identifier"], "nnUNetPlansFrom1_3d_fullres");
  EXPECT_EQ(out["configurations"]["3d_custom"]["data_identifier"], "nnUNetPlansFrom1_custom_3d");
  EXPECT_FALSE(out["configurations"]["3d_cascade_fullres"].contains("data_identifier"));
  EXPECT_EQ(out["image_reader_writer"], "NaturalImage2DIO");  // .png
  EXPECT_EQ(out.begin().key(), "dataset_name");               // the file's key order
  EXPECT_EQ(std::next(out["configurations"].begin()).key(), "3d_fullres");
  // The same plans name keeps the identifiers.
  const ordered_json same =
      planning::move_plans(ordered_json::parse(kSourcePlans), "Dataset002_B", "nnUNetPlans", "nnUNetPlans", target);
  EXPECT_EQ(same["configurations"]["3d_custom"]["data_identifier"], "custom_3d");
}

TEST(MovePlansCli, WritesTheTargetsPlansAndRefusesWhatIsMissing) {
  test::TempDir d("move_plans_cli");
  const std::string env = "MEDSEG_RAW=" + d / "raw" + " MEDSEG_PREPROCESSED=" + d / "pre";
  std::filesystem::create_directories(d / "pre/Dataset001_A");
  std::filesystem::create_directories(d / "raw/Dataset002_B");
  move_write_dataset_json(d / "raw/Dataset002_B/dataset.json", ".nii.gz");
  auto r = test::run_cli("medseg_move_plans_between_datasets", "-s 1 -t 2 -sp nnUNetPlans -tp nnUNetPlansFrom1", env);
  EXPECT_NE(r.exit_code, 0);  // no source plans yet
  EXPECT_NE(r.output.find("Dataset001_A/nnUNetPlans.json"), std::string::npos) << r.output;
  write_file_atomic(d / "pre/Dataset001_A/nnUNetPlans.json", kSourcePlans);
  r = test::run_cli("medseg_move_plans_between_datasets", "-s 1 -t Dataset002_B -sp nnUNetPlans -tp nnUNetPlansFrom1",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json out = read_json(d / "pre/Dataset002_B/nnUNetPlansFrom1.json");
  EXPECT_EQ(out["dataset_name"], "Dataset002_B");
  EXPECT_EQ(out["image_reader_writer"], "SimpleITKIO");
  EXPECT_EQ(out["configurations"]["2d"]["data_identifier"], "nnUNetPlansFrom1_2d");
  r = test::run_cli("medseg_move_plans_between_datasets", "-s 1 -t 2 -sp nnUNetPlans -tp ../escape", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("plain file name"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d / "pre/escape.json"));
  r = test::run_cli("medseg_move_plans_between_datasets", "-s 1 -t 7 -sp nnUNetPlans", env);
  EXPECT_NE(r.exit_code, 0);  // no dataset 7
}
