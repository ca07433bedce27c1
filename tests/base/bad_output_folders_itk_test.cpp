// A command that fails leaves the disk as it found it: no partial dataset from medseg_make_dataset,
// no second DatasetXXX_* folder for a taken id, no half-written preprocessed data (the previous
// data stays), and no empty output folders from any CLI that fails on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>

#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

std::vector<std::string> entries(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const char* kTiny = " --cases 2 --min-shape 8 10 10 --max-shape 8 10 10 --np 1";

}  // namespace

TEST(MakeDataset, TakenIdIsRefusedNamingTheExistingFolder) {
  test::TempDir d("mkid");
  auto r = test::run_cli("medseg_make_dataset", "-o " + (d / "raw") + " -d 953 -n First" + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto before = test::folder_snapshot(d / "raw");
  for (const char* flags : {"", " --overwrite"}) {
    SCOPED_TRACE(flags);
    r = test::run_cli("medseg_make_dataset", "-o " + (d / "raw") + " -d 953 -n Second" + kTiny + flags);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Dataset953_First: dataset id 953 is taken"), std::string::npos) << r.output;
    EXPECT_EQ(entries(d / "raw"), std::vector<std::string>{"Dataset953_First"});
    EXPECT_EQ(test::folder_snapshot(d / "raw"), before);
  }
}

TEST(MakeDataset, FailedMakeLeavesNothingAndKeepsTheOldDataset) {
  // ".xyz" has no image writer: the make fails at the first image, after its folders exist.
  test::TempDir d("mkfail");
  struct Row {
    const char* name;
    bool existing;
  };
  for (const Row& row : {Row{"fresh", false}, Row{"overwrite_existing", true}}) {
    SCOPED_TRACE(row.name);
    const std::string raw = d / row.name;
    fs::create_directories(raw);
    if (row.existing) {
      const auto r = test::run_cli("medseg_make_dataset", "-o " + raw + " -d 954 -n Tiny" + kTiny);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    const auto before = test::folder_snapshot(raw);
    const auto r =
        test::run_cli("medseg_make_dataset", "-o " + raw + " -d 954 -n Tiny --file-ending .xyz --overwrite" + kTiny);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(test::folder_snapshot(raw), before) << "no partial folder, no temporary folder, the old dataset intact";
  }
}

TEST(Preprocess, FailedRunKeepsThePreviousDataAndLeavesNoPartialFolder) {
  test::TempDir d("ppfail");
  const std::string env = "MEDSEG_RAW=" + (d / "raw") + " MEDSEG_PREPROCESSED=" + (d / "pp");
  fs::create_directories(d / "raw");
  auto r =
      test::run_cli("medseg_make_dataset", "-d 955 -n Tiny --cases 3 --min-shape 8 12 12 --max-shape 8 12 12", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 955 -c 3d_fullres --np 1 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pp = d / "pp/Dataset955_Tiny";
  const auto before = test::folder_snapshot(pp);
  ASSERT_EQ(before.count("nnUNetPlans_3d_fullres/case_002.npy"), 1u);
  std::ofstream(d / "raw/Dataset955_Tiny/imagesTr/case_002_0000.nii.gz", std::ios::binary) << "not an image";
  r = test::run_cli("medseg_preprocess", "-d 955 -c 3d_fullres --np 1 --no-progress", env);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("case_002_0000.nii.gz"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(pp), before)
      << "the previous preprocessed data must survive a failed run, with nothing added";
}

// Each row fails on bad input while its output would go into a folder that does not exist yet.
TEST(FailedCommands, LeaveNoOutputFolderBehind) {
  test::TempDir d("nofold");
  std::ofstream(d / "dataset.json") << R"({"channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1},
                                          "numTraining": 1, "file_ending": ".nii.gz"})";
  fs::create_directories(d / "in");
  const std::string out = d / "new";
  struct Row {
    const char* app;
    std::string args;
    std::string env;
  };
  const std::vector<Row> rows{
      {"medseg_make_dataset", "-o " + out + "/raw -d 956 -n Tiny --file-ending .xyz" + std::string(kTiny), ""},
      {"medseg_evaluate",
       (d / "nogt") + " " + (d / "nopred") + " --djfile " + (d / "dataset.json") + " -o " + out + "/s.json", ""},
      {"medseg_extract_fingerprint", "--raw-folder " + (d / "Dataset957_None") + " -o " + out + "/fp.json", ""},
      {"medseg_plan_experiment",
       "--fingerprint " + (d / "nofp.json") + " --dataset-json " + (d / "dataset.json") + " -o " + out + "/plans.json",
       ""},
      {"medseg_checkpoint", "average " + (d / "a.ckpt") + " " + (d / "b.ckpt") + " -o " + out + "/avg.ckpt", ""},
      {"medseg_predict", "-i " + (d / "in") + " -o " + out + " -m " + (d / "nomodel"), ""},
      {"medseg_init_model", "-d 958 -c 3d_fullres -o " + out + "/model", "MEDSEG_PREPROCESSED=" + d.path()},
      {"medseg_train", "958 3d_fullres 0", "MEDSEG_PREPROCESSED=" + d.path() + " MEDSEG_RESULTS=" + out},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.app);
    const auto r = test::run_cli(row.app, row.args, row.env);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_FALSE(fs::exists(out)) << r.output;
    fs::remove_all(out);
  }
}
