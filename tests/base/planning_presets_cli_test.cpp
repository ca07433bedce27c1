// medseg_plan_experiment with user planner presets: found by --presets, $MEDSEG_PLANS_PRESETS or a path, and
// changing the plans as their values say; bad presets give one line naming the file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/json_io.h"
#include "planning_fixtures.h"
#include "support/test_support.h"
#include "support/output_lines.h"

using namespace medseg;
using medseg::test::run_cli;
using medseg::test::TempDir;

namespace fs = std::filesystem;

using medseg::test::count_lines;

namespace {

const char* kPresetsApp = "medseg_plan_experiment";

json shipped(const std::string& name) { return read_json(test::source_path("plans/" + name + ".json")); }

// The Hippocampus-like dataset of the planner tests: 260 cases of 36x50x35 at 1 mm, 3 labels. Its 3d_fullres
// patch is 40x56x40 for every ResEnc preset, and nnUNetPlannerResEncM's batch is 58 (no dataset cap).
struct Hippocampus {
  TempDir dir{"preset_cli"};
  std::string fp = dir / "dataset_fingerprint.json", ds = dir / "dataset.json", out = dir / "out/plans.json";
  Hippocampus() {
    write_json(fp, test::uniform_fingerprint({1, 1, 1}, {36, 50, 35}, 260));
    write_json(ds, test::dataset_json({"MRI"}, 3, 260));
  }
  test::CmdResult plan(const std::string& extra, const std::string& env = "") const {
    return run_cli(kPresetsApp, "--fingerprint " + fp + " --dataset-json " + ds + " -o " + out + " " + extra, env);
  }
  json fullres() const { return read_json(out)["configurations"]["3d_fullres"]; }
};

// A copy of nnUNetPlannerResEncM under another name, as a user would start one.
json resenc_m_copy(const std::string& name) {
  json p = shipped("nnUNetPlannerResEncM");
  p["name"] = name;
  p.erase("experiment_planner_used");
  return p;
}

}  // namespace

TEST(PlannerPresetCli, UserPresetInPresetsFolderChangesTheDatasetCap) {
  Hippocampus h;
  json p = resenc_m_copy("MyResEncM");
  p["batch"]["max_dataset_covered"] = 0.05;
  write_json(h.dir / "presets/MyResEncM.json", p);
  const auto r = h.plan("-pl MyResEncM --presets " + (h.dir / "presets"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // ExperimentPlanner's 5% cap: 260 * 36*50*35 voxels * 0.05 / (40*56*40) = 9.14 -> 9, instead of ResEncM's 58.
  EXPECT_EQ(h.fullres()["batch_size"], 9);
  EXPECT_EQ(read_json(h.out)["experiment_planner_used"], "MyResEncM");
  EXPECT_EQ(h.fullres()["data_identifier"], "nnUNetPlans_3d_fullres");
}

TEST(PlannerPresetCli, LargerMemoryTargetInAPresetActsLikeGpuMemoryTarget) {
  Hippocampus h;
  json p = resenc_m_copy("ResEncM16");
  p["gpu_memory_target_gb"] = 16;
  const std::string path = h.dir / "ResEncM16.json";
  write_json(path, p);
  auto r = h.plan("-pl " + path);  // a path works without a search folder
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json from_preset = h.fullres();
  // The patch already is the whole (padded) median image at 8 GB, so the doubled reference doubles the batch:
  // 58 = round(x) at 8 GB gives 2x in [115, 117] at 16 GB.
  EXPECT_EQ(from_preset["patch_size"], json({40, 56, 40}));
  EXPECT_GE(from_preset["batch_size"].get<int>(), 115);
  EXPECT_LE(from_preset["batch_size"].get<int>(), 117);
  r = h.plan("-pl nnUNetPlannerResEncM -gpu_memory_target 16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(h.fullres()["batch_size"], from_preset["batch_size"]);
  EXPECT_EQ(h.fullres()["architecture"], from_preset["architecture"]);
}

TEST(PlannerPresetCli, EnvironmentFolderComesBeforeShippedPresets) {
  Hippocampus h;
  json p = shipped("ExperimentPlanner");
  p["batch"]["max_dataset_covered"] = 0.1;  // 16.38M voxels * 0.1 / 89,600 = 18.28 -> 18 (shipped: 9)
  write_json(h.dir / "mine/ExperimentPlanner.json", p);
  const auto r = h.plan("-pl ExperimentPlanner", "MEDSEG_PLANS_PRESETS=" + (h.dir / "mine"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(h.fullres()["batch_size"], 18);
}

TEST(PlannerPresetCli, UnknownNameListsTheKnownPresetsOnOneLine) {
  Hippocampus h;
  write_json(h.dir / "presets/MyResEncM.json", resenc_m_copy("MyResEncM"));
  const auto r = h.plan("-pl NoSuchPlanner --presets " + (h.dir / "presets"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  for (const char* name : {"unknown planner 'NoSuchPlanner'", "ExperimentPlanner", "nnUNetPlannerResEncXL",
                           "SwinUNETRPlanner", "MyResEncM"})
    EXPECT_NE(r.output.find(name), std::string::npos) << name << "\n" << r.output;
  EXPECT_FALSE(fs::exists(h.out));
}

TEST(PlannerPresetCli, MissingPresetsFolderAndRenamedCopyAreErrors) {
  Hippocampus h;
  auto r = h.plan("-pl ExperimentPlanner --presets " + (h.dir / "nope"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(h.dir / "nope"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  write_json(h.dir / "presets/Renamed.json", shipped("nnUNetPlannerResEncM"));  // still named nnUNetPlannerResEncM
  r = h.plan("-pl Renamed --presets " + (h.dir / "presets"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(h.dir / "presets/Renamed.json: key 'name'"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_FALSE(fs::exists(h.out));
}

namespace {

struct BadPreset {
  std::string name;
  std::string base;                 // shipped preset the row starts from
  std::function<void(json&)> edit;  // nullptr: the file holds `text` instead
  std::string expected;             // in the one error line, after "<file>: "
  std::string text = "";
};

const std::vector<BadPreset> kBadPresets = {
    {"MissingNetwork", "nnUNetPlannerResEncM", [](json& p) { p.erase("network"); }, "missing key 'network'"},
    {"MissingFormatVersion", "nnUNetPlannerResEncM", [](json& p) { p.erase("format_version"); },
     "missing key 'format_version'"},
    {"MissingReferenceValue", "ExperimentPlanner", [](json& p) { p["reference"].erase("feature_maps_3d"); },
     "missing key 'reference.feature_maps_3d'"},
    {"MissingBlocks", "ExperimentPlanner", [](json& p) { p.erase("blocks_per_stage"); },
     "missing key 'blocks_per_stage'"},
    {"TargetIsAString", "nnUNetPlannerResEncM", [](json& p) { p["gpu_memory_target_gb"] = "8"; },
     "key 'gpu_memory_target_gb' is \"8\" (expected a number)"},
    {"NegativeTarget", "nnUNetPlannerResEncM", [](json& p) { p["gpu_memory_target_gb"] = -8; },
     "key 'gpu_memory_target_gb' is -8"},
    {"ZeroReferenceMemory", "nnUNetPlannerResEncM", [](json& p) { p["reference"]["gpu_memory_gb"] = 0; },
     "key 'reference.gpu_memory_gb' is 0"},
    {"ZeroDatasetCover", "nnUNetPlannerResEncM", [](json& p) { p["batch"]["max_dataset_covered"] = 0; },
     "key 'batch.max_dataset_covered' is 0"},
    {"ZeroMinBatch", "nnUNetPlannerResEncM", [](json& p) { p["batch"]["min"] = 0; }, "key 'batch.min' is 0"},
    {"EmptyEncoderBlocks", "nnUNetPlannerResEncM", [](json& p) { p["blocks_per_stage"]["encoder"] = json::array(); },
     "key 'blocks_per_stage.encoder' is empty"},
    {"FractionalBlocks", "nnUNetPlannerResEncM", [](json& p) { p["blocks_per_stage"]["encoder"][1] = 2.5; },
     "key 'blocks_per_stage.encoder[1]' is 2.5 (expected an integer)"},
    {"DecoderNotOneShorter", "ExperimentPlanner",
     [](json& p) {
       p["blocks_per_stage"]["decoder"] = {2, 2, 2};
     },
     "key 'blocks_per_stage.decoder' has 3 entries"},
    {"MaxFeaturesBelowBase", "ExperimentPlanner", [](json& p) { p["features"]["max_3d"] = 16; },
     "key 'features.max_3d' is 16"},
    {"UnknownNetwork", "nnUNetPlannerResEncM", [](json& p) { p["network"] = "VNet"; }, "key 'network' is 'VNet'"},
    {"UnknownShrinkRule", "ExperimentPlanner", [](json& p) { p["shrink_while"] = "estimate > 2"; },
     "key 'shrink_while' is 'estimate > 2'"},
    {"FormatVersion2", "nnUNetPlannerResEncM", [](json& p) { p["format_version"] = 2; }, "key 'format_version' is 2"},
    {"MisspelledKey", "nnUNetPlannerResEncM", [](json& p) { p["gpu_memory_target"] = 8; },
     "unknown key 'gpu_memory_target'"},
    {"MisspelledNestedKey", "nnUNetPlannerResEncM", [](json& p) { p["lowres"]["threshold"] = 0.2; },
     "unknown key 'lowres.threshold'"},
    {"SwinKeyOnAUNet", "nnUNetPlannerResEncM", [](json& p) { p["swin"] = json::object(); },
     "key 'swin' does not apply to network ResidualEncoderUNet"},
    {"UNetKeyOnSwin", "SwinUNETRPlanner", [](json& p) { p["reference"] = json::object(); },
     "key 'reference' does not apply to network SwinUNETR"},
    {"SwinFeatureSizeNotMultipleOf12", "SwinUNETRPlanner", [](json& p) { p["swin"]["feature_size"] = 30; },
     "key 'swin.feature_size' is 30 (must be a multiple of 12)"},
    {"PlansNameIsAPath", "nnUNetPlannerResEncM", [](json& p) { p["default_plans_name"] = "../x"; },
     "key 'default_plans_name' is '../x'"},
    {"NotAnObject", "", nullptr, "a planner preset must be a JSON object", "[1, 2]"},
    {"TruncatedJson", "", nullptr, "invalid JSON", "{\"format_version\": 1, \"name\": "},
};

void PrintTo(const BadPreset& row, std::ostream* os) { *os << row.name; }

class BadPresetCli : public ::testing::TestWithParam<BadPreset> {};

}  // namespace

TEST_P(BadPresetCli, OneLineNamingFileAndKey) {
  const BadPreset& row = GetParam();
  Hippocampus h;
  const std::string path = h.dir / (row.name + ".json");
  if (row.edit) {
    json p = shipped(row.base);
    row.edit(p);
    write_json(path, p);
  } else {
    write_file_atomic(path, row.text);
  }
  const auto r = h.plan("-pl " + path);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(path + ": " + row.expected), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_FALSE(fs::exists(h.out));
  EXPECT_FALSE(fs::exists(h.dir / "out"));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadPresetCli, ::testing::ValuesIn(kBadPresets),
                         [](const auto& row) { return row.param.name; });

// plans/examples/Dataset900_Demo/nnUNetPlans.json documents what the planner makes of the demo dataset
// (scripts/demo.sh); it must stay what medseg_plan_experiment writes for that fingerprint.
TEST(PlannerPresetCli, DemoExamplePlansAreWhatThePlannerWrites) {
  TempDir d("preset_demo");
  const std::string ex = test::source_path("plans/examples/Dataset900_Demo");
  const auto r = run_cli(kPresetsApp, "--fingerprint " + ex + "/dataset_fingerprint.json --dataset-json " + ex +
                                          "/dataset.json -pl ExperimentPlanner -o " + (d / "nnUNetPlans.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_text(d / "nnUNetPlans.json"), test::read_text(ex + "/nnUNetPlans.json"))
      << "regenerate plans/examples/Dataset900_Demo (plans/README.md)";
}
