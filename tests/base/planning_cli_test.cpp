// medseg_plan_experiment end to end: both calling styles, custom configurations kept on re-plan,
// and one clear error line naming the file for bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/json_io.h"
#include "planning_fixtures.h"
#include "support/bad_input.h"
#include "support/test_support.h"
#include "support/output_lines.h"

using namespace medseg;
using medseg::test::run_cli;
using medseg::test::TempDir;

using medseg::test::count_lines;

namespace {

const char* kApp = "medseg_plan_experiment";

struct Files {
  TempDir dir{"plan_cli"};
  std::string fp = dir / "dataset_fingerprint.json", ds = dir / "dataset.json";
  Files() {
    write_json(fp, test::uniform_fingerprint({1, 1, 1}, {36, 50, 35}, 260));
    write_json(ds, test::dataset_json({"MRI"}, 3, 260));
  }
  std::string args(const std::string& extra) const {
    return "--fingerprint " + fp + " --dataset-json " + ds + " -o " + (dir / "out/plans.json") + " " + extra;
  }
};

}  // namespace

TEST(PlanningCli, FileStyleWritesNnunetPlans) {
  Files f;
  const auto r = run_cli(kApp, f.args("-pl ExperimentPlanner --dataset-name Dataset004_Hippocampus"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json p = read_json(f.dir / "out/plans.json");
  EXPECT_EQ(p["dataset_name"], "Dataset004_Hippocampus");
  EXPECT_EQ(p["configurations"]["3d_fullres"]["batch_size"], 9);
  EXPECT_EQ(p["configurations"]["2d"]["batch_size"], 366);
  EXPECT_NE(r.output.find("patch 40x56x40, batch 9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("est. peak"), std::string::npos) << r.output;  // the byte model's estimate
  EXPECT_TRUE(p["configurations"]["3d_fullres"]["medseg"]["estimated_peak_bytes"].is_number_integer());
}

TEST(PlanningCli, DatasetStyleUsesRootsAndKeepsCustomConfigurations) {
  TempDir d("plan_cli_d");
  const std::string raw = d / "raw/Dataset004_Hippocampus", pre = d / "pre/Dataset004_Hippocampus";
  write_json(raw + "/dataset.json", test::dataset_json({"MRI"}, 3, 260));
  write_json(pre + "/dataset_fingerprint.json", test::uniform_fingerprint({1, 1, 1}, {36, 50, 35}, 260));
  const std::string env = "MEDSEG_RAW=" + (d / "raw") + " MEDSEG_PREPROCESSED=" + (d / "pre");
  auto r = run_cli(kApp, "-d 4 -pl nnUNetPlannerResEncM -gpu_memory_target 8", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string plans_path = pre + "/nnUNetResEncUNetMPlans.json";
  json p = read_json(plans_path);
  EXPECT_EQ(p["dataset_name"], "Dataset004_Hippocampus");
  EXPECT_EQ(p["configurations"]["3d_fullres"]["batch_size"], 58);
  EXPECT_TRUE(std::filesystem::exists(pre + "/dataset.json"));
  // A user-made configuration survives re-planning, like nnU-Net's save_plans.
  p["configurations"]["3d_fullres_bs4"] = {{"inherits_from", "3d_fullres"}, {"batch_size", 4}};
  write_json(plans_path, p);
  r = run_cli(kApp, "-d Dataset004_Hippocampus -pl nnUNetPlannerResEncM -overwrite_plans_name nnUNetResEncUNetMPlans",
              env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(plans_path)["configurations"]["3d_fullres_bs4"]["batch_size"], 4);
}

TEST(PlanningCli, BadJsonIsOneLineNamingTheFile) {
  Files f;
  write_file_atomic(f.fp, "{\"spacings\": [[1,1,1], ");
  const auto r = run_cli(kApp, f.args(""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(f.fp), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("invalid JSON"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
}

TEST(PlanningCli, WrongLengthsAndMissingKeysNameTheFile) {
  Files f;
  json fp = test::uniform_fingerprint({1, 1, 1}, {36, 50, 35}, 3);
  fp["shapes_after_crop"].erase(0);
  write_json(f.fp, fp);
  auto r = run_cli(kApp, f.args(""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(f.fp + ": 'spacings' has 3 cases but 'shapes_after_crop' has 2"), std::string::npos)
      << r.output;

  Files g;
  json ds = test::dataset_json({"MRI"}, 3, 260);
  ds.erase("numTraining");
  write_json(g.ds, ds);
  r = run_cli(kApp, g.args(""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(g.ds + ": 'numTraining'"), std::string::npos) << r.output;
}

TEST(PlanningCli, UnknownPlannerAndMissingFingerprint) {
  Files f;
  auto r = run_cli(kApp, f.args("-pl nnUNetPlannerResEncXXL"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("unknown planner 'nnUNetPlannerResEncXXL'"), std::string::npos) << r.output;
  TempDir d("plan_cli_m");
  write_json(d / "raw/Dataset007_X/dataset.json", test::dataset_json({"CT"}, 2, 5));
  r = run_cli(kApp, "-d 7", "MEDSEG_RAW=" + (d / "raw") + " MEDSEG_PREPROCESSED=" + (d / "pre"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("dataset_fingerprint.json: fingerprint missing"), std::string::npos) << r.output;
}

TEST(PlanningCli, SpatialParallelNoPatchSplitsIntoNamesTheFlag) {
  // 1000 ranks: no patch of a 36x50x35 dataset has an axis of 1000 slabs. The planner used to shrink
  // to nothing and blame "the GPU memory target".
  Files f;
  const auto r = run_cli(kApp, f.args("--spatial_parallel 1000"));
  test::expect_refused(r, kApp,
                       {"--spatial_parallel 1000: no patch splits into 1000 slabs aligned with the network's strides"});
  EXPECT_EQ(r.output.find("memory target"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(f.dir / "out"));
  // A rank count that splits still plans.
  const auto ok = run_cli(kApp, f.args("--spatial_parallel 2"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// Issue 42: -o naming the fingerprint or dataset.json replaced that input with the plans.
TEST(PlanningCli, AnOutputOverAnInputIsRefused) {
  Files f;
  const std::string fp_before = test::read_text(f.fp), ds_before = test::read_text(f.ds);
  for (const auto& [out, fragment] : std::vector<std::pair<std::string, std::string>>{
           {f.fp, "is the fingerprint itself"}, {f.ds, "is the dataset.json itself"}}) {
    const auto r = run_cli(kApp, "--fingerprint " + f.fp + " --dataset-json " + f.ds + " -o " + out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find(out + ": " + fragment), std::string::npos) << r.output;
  }
  EXPECT_EQ(test::read_text(f.fp), fp_before);
  EXPECT_EQ(test::read_text(f.ds), ds_before);
}
