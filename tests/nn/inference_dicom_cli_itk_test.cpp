// DICOM series as prediction input (docs/dicom.md): a series GDCM wrote (support/dicom_writer.h) predicts
// with medseg_predict (--output_format nifti) and api::Segmenter exactly as the same volume given as NIfTI, whose
// geometry is built here by hand from the writer's positions and cosines; a bad series fails its case by name while the
// others still run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api/segmenter.h"
#include "core/error.h"
#include "dicom_test_util.h"
#include "inference_test_util.h"
#include "io/dicom_seg.h"
#include "io/image_io.h"
#include "support/dicom_writer.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

void expect_same_prediction(const std::string& a, const std::string& b) {
  const Volume x = io::read_image(a), y = io::read_image(b);
  ASSERT_EQ(x.shape(), y.shape());
  EXPECT_EQ(geometry_mismatch(x.geometry(), x.shape(), y.geometry(), y.shape()), "");
  int64_t differ = 0;
  for (int64_t z = 0; z < x.shape()[0]; ++z)
    for (int64_t r = 0; r < x.shape()[1]; ++r)
      for (int64_t c = 0; c < x.shape()[2]; ++c) differ += x.at(z, r, c) != y.at(z, r, c);
  EXPECT_EQ(differ, 0) << a << " vs " << b;
}

}  // namespace

TEST(DicomPredict, ASeriesPredictsAsItsNiftiTwin) {
  test::TempDir d("dcmp");
  const std::string model = test::dicom_tiny_model(d);
  const auto s = test::ct_series();
  test::write_dicom_series(d / "in/ct", s);
  fs::create_directories(d / "twin");
  io::write_image(d / "twin/ct_0000.nii.gz", test::nifti_twin(s));
  const std::string common =
      " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar --output_format nifti";
  auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out_dcm" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_predict", "-i " + d / "twin" + " -o " + d / "out_nii" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_prediction(d / "out_dcm/ct.nii.gz", d / "out_nii/ct.nii.gz");

  // The series folder itself as the input: one case named after it.
  r = test::run_cli("medseg_predict", "-i " + d / "in/ct/" + " -o " + d / "out_one" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_prediction(d / "out_one/ct.nii.gz", d / "out_nii/ct.nii.gz");

  // The API on the series read by io::read_image.
  api::SegmenterOptions o;
  o.mirroring = false;
  api::Segmenter seg(model, o);
  const Volume labels = seg.segment({io::read_image(d / "in/ct")}).labels;
  io::write_image(d / "api.nii.gz", labels);
  expect_same_prediction(d / "api.nii.gz", d / "out_nii/ct.nii.gz");

  // The embedding program writes the SEG itself, as docs/api.md shows; it reads back as the same labels
  // through the series' grid (its frames are checked in inference_dicom_seg_cli_itk_test.cpp).
  io::DicomSegInfo info;
  info.segments.push_back({1, "a", io::generic_category(), io::generic_type(), {221, 130, 101}});
  info.segments.push_back({2, "b", io::generic_category(), io::generic_type(), {31, 119, 180}});
  io::write_dicom_seg(d / "api.dcm", labels, d / "in/ct", "", info);
  EXPECT_GT(fs::file_size(d / "api.dcm"), 0u);
  Volume shifted = labels;
  shifted.geometry().origin[0] += 5;
  EXPECT_THROW(io::write_dicom_seg(d / "bad.dcm", shifted, d / "in/ct", "", info), FileError);
  EXPECT_FALSE(fs::exists(d / "bad.dcm"));
}

TEST(DicomPredict, ABadSeriesFailsItsCaseByNameAndTheOthersRun) {
  test::TempDir d("dcmp");
  const std::string model = test::dicom_tiny_model(d);
  auto s = test::ct_series();
  s.slices = 5;
  test::write_dicom_series(d / "in/good", s);
  const auto files = test::write_dicom_series(d / "in/gap", s);
  fs::remove(files[2]);
  fs::create_directories(d / "in/notes");  // a folder without DICOM is no case
  const auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out -m " + model +
                                                     " -npp 1 -nps 1 --disable_tta --disable_progress_bar"
                                                     " --output_format nifti");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "out/good.nii.gz")) << r.output;
  EXPECT_FALSE(fs::exists(d / "out/gap.nii.gz"));
  EXPECT_NE(r.output.find("a slice is missing between"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 case(s) failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("notes"), std::string::npos) << r.output;
}

// A case folder holding two series fails naming both; --series_uid picks one, which then predicts (and is
// referenced by the SEG) as that series alone; --series_uid CASE=UID picks per case.
TEST(DicomPredict, SeriesUidPicksOneOfSeveralSeries) {
  test::TempDir d("dcmp");
  const std::string model = test::dicom_tiny_model(d);
  auto a = test::ct_series(), b = test::ct_series();
  a.slices = b.slices = 9;
  b.series_uid = "1.2.826.0.1.3680043.10.543.1.7";
  b.raw = [](int k, int r, int c) { return 30 * ((k * 5 + r * 7 + c * 3) % 13); };
  test::write_dicom_series(d / "in/two", a, "a");
  test::write_dicom_series(d / "in/two", b, "b");
  test::write_dicom_series(d / "alone/two", b);
  const std::string common = " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar";
  auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out0" + common);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("holds 2 series; keep one per case folder or pick one with --series_uid"), std::string::npos)
      << r.output;
  r = test::run_cli("medseg_predict",
                    "-i " + d / "in" + " -o " + d / "out1 --output_format nifti --series_uid " + b.series_uid + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_predict", "-i " + d / "alone" + " -o " + d / "out2 --output_format nifti" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_prediction(d / "out1/two.nii.gz", d / "out2/two.nii.gz");
  r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out3 --series_uid " + b.series_uid + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "out3/two.dcm")) << r.output;

  // Per case: CASE=UID picks each folder's own series; a case the input does not hold is refused by name.
  test::write_dicom_series(d / "in/three", a, "a");
  test::write_dicom_series(d / "in/three", b, "b");
  test::write_dicom_series(d / "alone_a/three", a);
  r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out4 --output_format nifti --series_uid two=" +
                                          b.series_uid + " --series_uid three=" + a.series_uid + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_predict", "-i " + d / "alone_a" + " -o " + d / "out5 --output_format nifti" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_prediction(d / "out4/two.nii.gz", d / "out2/two.nii.gz");
  expect_same_prediction(d / "out4/three.nii.gz", d / "out5/three.nii.gz");
  r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out6 --series_uid tow=" + b.series_uid + common);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the input holds no case 'tow'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out6")) << "nothing is written before the refusal";
}

// A case folder as one .zip, written by Python's zipfile (another writer than libzip, which medseg reads
// with), predicts as the folder. No name inside the zip becomes a path: an entry named ../../escape.txt
// lands nowhere outside medseg's scratch folder, which is gone after the run. A damaged zip fails its case.
TEST(DicomPredict, AZippedCaseFolderPredictsAsTheFolder) {
  test::TempDir d("dcmp");
  const std::string model = test::dicom_tiny_model(d);
  auto s = test::ct_series();
  s.slices = 7;
  test::write_dicom_series(d / "folder/ct", s);
  fs::create_directories(d / "zips/inner");
  const std::string script = d / "zip.py";
  std::ofstream(script) << "import os, sys, zipfile\n"
                           "src, out = sys.argv[1], sys.argv[2]\n"
                           "with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:\n"
                           "    for f in sorted(os.listdir(src)):\n"
                           "        z.write(os.path.join(src, f), 'ct/' + f)\n"
                           "    z.writestr('../../escape.txt', 'not a path')\n";
  ASSERT_EQ(std::system(("python3 " + script + " " + d / "folder/ct" + " " + d / "zips/inner/ct.zip").c_str()), 0);
  std::ofstream(d / "zips/inner/broken.zip") << "PK\3\4 and then nothing a zip needs";
  const std::string common =
      " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar --output_format nifti";
  auto r = test::run_cli("medseg_predict", "-i " + d / "zips/inner" + " -o " + d / "out_zip" + common);
  EXPECT_NE(r.exit_code, 0) << r.output;  // broken.zip
  EXPECT_NE(r.output.find("broken.zip"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 case(s) failed"), std::string::npos) << r.output;
  r = test::run_cli("medseg_predict", "-i " + d / "folder" + " -o " + d / "out_folder" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_prediction(d / "out_zip/ct.nii.gz", d / "out_folder/ct.nii.gz");
  EXPECT_FALSE(fs::exists(d / "escape.txt"));
  EXPECT_FALSE(fs::exists(d / "zips/escape.txt"));
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    EXPECT_EQ(e.path().filename().string().rfind("medseg_dicom_zip_", 0), std::string::npos) << e.path();
  // The zip given itself, written as a SEG that references the extracted series.
  r = test::run_cli("medseg_predict", "-i " + d / "zips/inner/ct.zip" + " -o " + d / "out_seg -m " + model +
                                          " -npp 1 -nps 1 --disable_tta --disable_progress_bar");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "out_seg/ct.dcm"));
}
