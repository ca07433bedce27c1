// DICOM series as training data (docs/dicom.md, "Training data"): a raw dataset whose imagesTr holds series
// folders that GDCM wrote (support/dicom_writer.h) verifies, fingerprints and preprocesses exactly as its NIfTI
// twin, whose geometry is built here by hand from the writer's positions and cosines; a dataset with a missing
// channel series, a case given twice, a stray folder and a label on another grid gets one line for each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "io/image_io.h"
#include "support/dicom_twin.h"
#include "support/dicom_writer.h"
#include "support/output_lines.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

constexpr const char* kDicomName = "Dataset962_DicomTr";

// Case k's series: flipped rows (exact cosines and float-exact spacings, so that the twin's NIfTI header holds the
// same numbers); case 0 is CT with a rescale, the others have a zero border (cropping) and case 2 thicker slices
// (resampling to the plan's spacing).
test::DicomSeriesSpec case_series(int k, int channel) {
  test::DicomSeriesSpec s;
  s.rows = 14 + 2 * k;
  s.columns = 12 + k;
  s.slices = 9 - k;
  s.orientation = {1, 0, 0, 0, -1, 0};
  s.pixel_spacing = {0.75, 1.25};
  s.first_position = {-8, 16.5, 4.0 * k};
  s.slice_step = k == 2 ? 3.75 : 2.5;
  s.slope = k == 0 ? 0.5 : 1;
  s.intercept = k == 0 ? -100 : 0;
  s.series_uid += "." + std::to_string(10 * k + channel + 2);
  s.raw = [k, channel](int z, int r, int c) {
    const bool border = k > 0 && (z == 0 || r < 2 || c == 0);
    return border ? 0 : 1 + 40 * ((z * 7 + r * 3 + c * (5 + channel)) % 11) + (r > 6 && r < 12 && c > 4 ? 300 : 0);
  };
  return s;
}

// Label 1 where the raw value is high, 2 on the bright block, on the twin's grid.
Volume case_label(const test::DicomSeriesSpec& s) {
  const Volume twin = test::nifti_twin(s);
  std::vector<double> v;
  for (int z = 0; z < s.slices; ++z)
    for (int r = 0; r < s.rows; ++r)
      for (int c = 0; c < s.columns; ++c) {
        const int raw = s.raw(z, r, c);
        v.push_back(raw > 300 ? 2 : raw > 200 ? 1 : 0);
      }
  return Volume::from_values(PixelType::UInt8, twin.shape(), twin.geometry(), v);
}

void dicom_write_dataset_json(const std::string& folder, int channels, int cases) {
  std::ofstream f(folder + "/dataset.json");
  f << R"({"channel_names": {"0": "CT")" << (channels > 1 ? R"(, "1": "MR")" : "")
    << R"(}, "labels": {"background": 0, "a": 1, "b": 2}, "numTraining": )" << cases
    << R"(, "file_ending": ".nii.gz"})";
}

// imagesTr/case_k/ as series folders (dicom) or imagesTr/case_k_0000.nii.gz (the twin), one label each.
std::string write_raw(const std::string& raw, bool dicom) {
  const std::string ds = raw + "/" + kDicomName;
  fs::create_directories(ds + "/imagesTr");
  fs::create_directories(ds + "/labelsTr");
  for (int k = 0; k < 3; ++k) {
    const std::string id = "case_" + std::to_string(k);
    const test::DicomSeriesSpec s = case_series(k, 0);
    if (dicom)
      test::write_dicom_series(ds + "/imagesTr/" + id, s);
    else
      io::write_image(ds + "/imagesTr/" + id + "_0000.nii.gz", test::nifti_twin(s));
    io::write_image(ds + "/labelsTr/" + id + ".nii.gz", case_label(s));
  }
  dicom_write_dataset_json(ds, 1, 3);
  return ds;
}

// Every regular file under `root`, by relative path, with its bytes.
std::map<std::string, std::string> tree(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    out[fs::relative(e.path(), root).string()] = std::string(std::istreambuf_iterator<char>(f), {});
  }
  return out;
}

}  // namespace

TEST(DicomDataset, SeriesFoldersVerifyFingerprintAndPreprocessAsTheirNiftiTwins) {
  test::TempDir d("dcmds");
  const std::string ds = write_raw(d / "raw_dcm", true);
  write_raw(d / "raw_nii", false);
  auto r = test::run_cli("medseg_verify_dataset", "-i " + ds + " --np 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  for (const char* kind : {"dcm", "nii"}) {
    const std::string env = "MEDSEG_RAW=" + d / "raw_" + kind + " MEDSEG_PREPROCESSED=" + d / "pre_" + kind;
    r = test::run_cli("medseg_plan_and_preprocess", "-d 962 -c 3d_fullres --np 1 --no_pbar", env);
    ASSERT_EQ(r.exit_code, 0) << kind << ": " << r.output;
  }
  const auto dcm = tree(d / "pre_dcm/" + kDicomName), nii = tree(d / "pre_nii/" + kDicomName);
  ASSERT_EQ(dcm.size(), nii.size());
  EXPECT_TRUE(dcm.count("dataset_fingerprint.json"));
  EXPECT_TRUE(dcm.count("gt_segmentations/case_2.nii.gz"));
  int cases = 0;
  for (const auto& [rel, bytes] : nii) {
    ASSERT_TRUE(dcm.count(rel)) << rel;
    EXPECT_EQ(dcm.at(rel), bytes) << rel << " differs between the DICOM dataset and its NIfTI twin";
    cases += rel.rfind("nnUNetPlans_3d_fullres/", 0) == 0;
  }
  EXPECT_GE(cases, 3);
}

TEST(DicomDataset, VerifyNamesEachProblemOfASeriesDataset) {
  test::TempDir d("dcmbad");
  const std::string ds = d / kDicomName, images = ds + "/imagesTr";
  fs::create_directories(ds + "/labelsTr");
  auto add_case = [&](const std::string& id, int k, bool second_channel) {
    test::write_dicom_series(images + "/" + id + "/0000", case_series(k, 0));
    if (second_channel) test::write_dicom_series(images + "/" + id + "/0001", case_series(k, 1));
    io::write_image(ds + "/labelsTr/" + id + ".nii.gz", case_label(case_series(k, 0)));
  };
  add_case("good", 0, true);
  add_case("one_channel", 1, false);
  add_case("twice", 0, true);
  io::write_image(images + "/twice_0000.nii.gz", test::nifti_twin(case_series(0, 0)));
  add_case("other_grid", 1, true);
  test::DicomSeriesSpec shifted = case_series(1, 0);
  shifted.pixel_spacing = {1.0, 1.25};  // the series keeps 0.75 mm between rows
  io::write_image(ds + "/labelsTr/other_grid.nii.gz", case_label(shifted));
  fs::create_directories(images + "/notes");
  std::ofstream(images + "/notes/readme.txt") << "not a series";
  dicom_write_dataset_json(ds, 2, 4);

  const auto r = test::run_cli("medseg_verify_dataset", "-i " + ds + " --np 1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::pair<std::string, std::string> expected[] = {
      {images + "/one_channel/0001", "missing channel 1 of case 'one_channel'"},
      {images + "/twice", "is given both as this DICOM series folder and as " + images + "/twice_0000.nii.gz"},
      {images + "/notes", "unexpected folder (not a DICOM series folder)"},
      {ds + "/labelsTr/other_grid.nii.gz", "does not share the grid of " + images + "/other_grid/0000"},
  };
  for (const auto& [path, what] : expected) {
    const std::string line = test::line_naming(r.output, path + ":");
    EXPECT_NE(line.find(what), std::string::npos) << "wanted a line naming " << path << ": " << what << "\n"
                                                  << r.output;
  }
  EXPECT_EQ(test::line_naming(r.output, images + "/good"), "") << r.output;
}
