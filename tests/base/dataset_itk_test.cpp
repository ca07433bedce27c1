// Raw dataset discovery (nnU-Net v2 layout), dataset.json validation and verify_dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_io.h"
#include "core/paths.h"
#include "io/dataset.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

void write_vol(const std::string& path, std::array<int64_t, 3> shape, double value, Geometry g = {}) {
  std::vector<double> v(static_cast<size_t>(shape[0] * shape[1] * shape[2]), value);
  io::write_image(path, Volume::from_values(PixelType::Float32, shape, g, v));
}
void write_lbl(const std::string& path, std::array<int64_t, 3> shape, int value) {
  std::vector<double> v(static_cast<size_t>(shape[0] * shape[1] * shape[2]), 0.0);
  v[0] = value;
  io::write_image(path, Volume::from_values(PixelType::UInt8, shape, Geometry{}, v));
}

// Dataset042_Test with two channels and cases a, b.
std::string make_dataset(const test::TempDir& root) {
  const std::string ds = root / "Dataset042_Test";
  fs::create_directories(ds + "/imagesTr");
  fs::create_directories(ds + "/labelsTr");
  for (const char* id : {"b", "a"}) {
    write_vol(ds + "/imagesTr/" + id + "_0000.nii.gz", {3, 4, 5}, 1.0);
    write_vol(ds + "/imagesTr/" + id + "_0001.nii.gz", {3, 4, 5}, 2.0);
    write_lbl(ds + "/labelsTr/" + id + ".nii.gz", {3, 4, 5}, 1);
  }
  write_json(ds + "/dataset.json", json{{"channel_names", {{"0", "T2"}, {"1", "ADC"}}},
                                        {"labels", {{"background", 0}, {"lesion", 1}}},
                                        {"numTraining", 2},
                                        {"file_ending", ".nii.gz"}});
  return ds;
}

bool any_contains(const std::vector<std::string>& v, const std::string& a, const std::string& b = "") {
  for (const auto& s : v)
    if (s.find(a) != std::string::npos && s.find(b) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Dataset, FindsCasesSortedWithChannelsInOrder) {
  test::TempDir root("ds");
  const auto info = io::load_dataset_info(make_dataset(root));
  EXPECT_EQ(info.name, "Dataset042_Test");
  ASSERT_EQ(info.channel_names, (std::vector<std::string>{"T2", "ADC"}));
  EXPECT_EQ(info.label_values(), (std::vector<int>{0, 1}));
  const auto cases = io::list_training_cases(info);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].id, "a");
  EXPECT_EQ(fs::path(cases[0].images[1]).filename(), "a_0001.nii.gz");
  EXPECT_EQ(fs::path(cases[1].label).filename(), "b.nii.gz");
  EXPECT_TRUE(io::verify_dataset(info).empty());
}

TEST(Dataset, ExplicitDatasetMappingOverridesScan) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  json j = read_json(ds + "/dataset.json");
  j["dataset"] = {
      {"only", {{"images", {"imagesTr/a_0000.nii.gz", "imagesTr/a_0001.nii.gz"}}, {"label", "labelsTr/a.nii.gz"}}}};
  write_json(ds + "/dataset.json", j);
  const auto cases = io::list_training_cases(io::load_dataset_info(ds));
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].id, "only");
}

TEST(Dataset, MissingChannelIsNamed) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  fs::remove(ds + "/imagesTr/b_0001.nii.gz");
  try {
    io::list_training_cases(io::load_dataset_info(ds));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("b_0001.nii.gz"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(any_contains(io::verify_dataset(io::load_dataset_info(ds)), "b_0001.nii.gz", "missing channel"));
}

TEST(Dataset, VerifyReportsEveryProblem) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  Geometry shifted;
  shifted.origin = {5, 0, 0};
  write_vol(ds + "/imagesTr/a_0001.nii.gz", {3, 4, 5}, 2.0, shifted);  // grid mismatch
  write_lbl(ds + "/labelsTr/b.nii.gz", {3, 4, 5}, 7);                  // undeclared label
  write_vol(ds + "/imagesTr/c_0000.nii.gz", {3, 4, 5}, std::nan(""));  // NaN, missing ch1 + label
  write_vol(ds + "/imagesTr/c_0001.nii.gz", {3, 4, 5}, 1.0);
  std::ofstream(ds + "/imagesTr/notes.txt") << "x";  // stray file
  const auto p = io::verify_dataset(io::load_dataset_info(ds));
  EXPECT_TRUE(any_contains(p, "a_0001.nii.gz", "origin")) << testing::PrintToString(p);
  EXPECT_TRUE(any_contains(p, "b.nii.gz", "7"));
  EXPECT_TRUE(any_contains(p, "c.nii.gz", "label file missing"));
  EXPECT_TRUE(any_contains(p, "notes.txt", "unexpected"));
  EXPECT_TRUE(any_contains(p, "numTraining is 2", "3 case"));
}

TEST(Dataset, NaNVoxelsAreReported) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  write_vol(ds + "/imagesTr/a_0000.nii.gz", {3, 4, 5}, std::nan(""));
  EXPECT_TRUE(any_contains(io::verify_dataset(io::load_dataset_info(ds)), "a_0000.nii.gz", "NaN"));
}

TEST(Dataset, BadDatasetJsonNamesFileAndKey) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  std::ofstream(ds + "/dataset.json") << "{\"channel_names\": {\"0\": \"CT\"}, \"labels\": ";
  EXPECT_THROW(io::load_dataset_info(ds), FileError);
  write_json(ds + "/dataset.json", json{{"channel_names", {{"0", "CT"}}},
                                        {"labels", {{"background", 0}, {"x", 2}}},
                                        {"numTraining", 2},
                                        {"file_ending", ".nii.gz"}});
  try {
    io::load_dataset_info(ds);
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("consecutive"), std::string::npos) << e.what();
  }
}

TEST(Paths, FindDatasetByIdOrName) {
  test::TempDir root("raw");
  fs::create_directories(root / "Dataset004_Hippocampus");
  fs::create_directories(root / "Dataset027_ACDC");
  EXPECT_EQ(find_dataset_name(root.path(), "4"), "Dataset004_Hippocampus");
  EXPECT_EQ(find_dataset_name(root.path(), "004"), "Dataset004_Hippocampus");
  EXPECT_EQ(find_dataset_name(root.path(), "ACDC"), "Dataset027_ACDC");
  EXPECT_EQ(find_dataset_name(root.path(), "Dataset027_ACDC"), "Dataset027_ACDC");
  try {
    find_dataset_name(root.path(), "5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Dataset004_Hippocampus"), std::string::npos);  // lists candidates
  }
}

TEST(Paths, RootFromEnvironment) {
  ::setenv("MEDSEG_RESULTS", "/some/where", 1);
  EXPECT_EQ(root_folder(Root::Results), "/some/where");
  EXPECT_EQ(root_folder(Root::Results, "/flag"), "/flag");
  ::unsetenv("MEDSEG_RESULTS");
  ::unsetenv("nnUNet_results");
  EXPECT_THROW(root_folder(Root::Results), Error);
}

TEST(VerifyCli, ExitCodeAndLines) {
  test::TempDir root("ds");
  const std::string ds = make_dataset(root);
  auto ok = test::run_cli("medseg_verify_dataset", "-i " + ds);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  fs::remove(ds + "/labelsTr/a.nii.gz");
  auto bad = test::run_cli("medseg_verify_dataset", "-i " + ds + " -np 2");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("a.nii.gz"), std::string::npos) << bad.output;
}
