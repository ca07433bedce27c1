// medseg_predict's DICOM SEG output (docs/dicom.md): a series GDCM wrote (support/dicom_writer.h) predicts to
// CASE.dcm, which is read back here with GDCM, not with DCMTK that wrote it: the object, its references to the
// source study, frame of reference, series and each slice, and every frame's bits against the NIfTI
// prediction of the same case. Where the runner provides them (scripts/test.sh does), highdicom
// (scripts/check_dicom_seg.py) and dciodvfy (dicom3tools) read it too.
#include <gdcmReader.h>
#include <gdcmSequenceOfItems.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "dicom_test_util.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/dicom_writer.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

std::string text(const gdcm::DataSet& ds, uint16_t g, uint16_t e) {
  const gdcm::Tag t(g, e);
  if (!ds.FindDataElement(t) || ds.GetDataElement(t).GetByteValue() == nullptr) return "";
  const gdcm::ByteValue* bv = ds.GetDataElement(t).GetByteValue();
  std::string s(bv->GetPointer(), bv->GetLength());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

int us(const gdcm::DataSet& ds, uint16_t g, uint16_t e) {
  const std::string b = text(ds, g, e) + std::string(2, '\0');
  return static_cast<uint8_t>(b[0]) | (static_cast<uint8_t>(b[1]) << 8);
}

std::vector<gdcm::DataSet> items(const gdcm::DataSet& ds, uint16_t g, uint16_t e) {
  std::vector<gdcm::DataSet> out;
  const gdcm::Tag t(g, e);
  if (!ds.FindDataElement(t)) return out;
  gdcm::SmartPointer<gdcm::SequenceOfItems> sq = ds.GetDataElement(t).GetValueAsSQ();
  if (!sq) return out;
  for (gdcm::SequenceOfItems::SizeType i = 1; i <= sq->GetNumberOfItems(); ++i)
    out.push_back(sq->GetItem(i).GetNestedDataSet());
  return out;
}

gdcm::DataSet read_dataset(const std::string& file) {
  gdcm::Reader r;
  r.SetFileName(file.c_str());
  EXPECT_TRUE(r.Read()) << file;
  return r.GetFile().GetDataSet();
}

std::string run_checked(const std::string& cmd) {
  const std::string out = (fs::temp_directory_path() / ("medseg_dcm_check_" + std::to_string(::getpid()))).string();
  const int rc = std::system((cmd + " > " + out + " 2>&1").c_str());
  std::string text = test::read_text(out);
  fs::remove(out);
  return rc == 0 ? text : "FAILED (" + std::to_string(rc) + "): " + text;
}

// The independent readers, where the runner has them (scripts/test.sh provides both): the Python check
// `script` (scripts/check_dicom_*.py, whose success line holds `success`) and dciodvfy, which must report
// no error.
void expect_independent_readers_agree(const std::string& script, const std::string& object, const std::string& series,
                                      const std::string& nifti, const std::string& success) {
  if (const char* py = std::getenv("MEDSEG_DICOM_PYTHON")) {
    const std::string out = run_checked(std::string(py) + " " + test::source_path("scripts/" + script) + " " + object +
                                        " " + series + " " + nifti);
    EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;
    EXPECT_NE(out.find(success), std::string::npos) << out;
  }
  if (std::system("command -v dciodvfy > /dev/null 2>&1") == 0) {
    const std::string out = run_checked("dciodvfy " + object);
    EXPECT_EQ(out.find("Error"), std::string::npos) << out;
  }
}

// Every frame of `seg`: its segment's bits equal `labels` on the source slice it derives from (which
// `slice_of(SOP Instance UID, Referenced Frame Number or 0)` gives, -1 for an unknown one), and its position is
// that slice's; empty frames are left out.
void expect_frames_match(const gdcm::DataSet& seg, const Volume& labels, const test::DicomSeriesSpec& s,
                         const std::function<int(const std::string&, int)>& slice_of) {
  std::map<int, std::string> segment_names;
  for (const auto& item : items(seg, 0x0062, 0x0002))
    segment_names[us(item, 0x0062, 0x0004)] = text(item, 0x0062, 0x0005);
  const std::map<std::string, int> value{{"a", 1}, {"b", 2}};
  const int rows = us(seg, 0x0028, 0x0010), cols = us(seg, 0x0028, 0x0011);
  ASSERT_EQ(rows, s.rows);
  ASSERT_EQ(cols, s.columns);
  const std::string bits = text(seg, 0x7fe0, 0x0010) + std::string(8, '\0');
  const auto frames = items(seg, 0x5200, 0x9230);
  ASSERT_EQ(std::stoi(text(seg, 0x0028, 0x0008)), static_cast<int>(frames.size()));
  int64_t expected_frames = 0;
  for (int number = 1; number <= static_cast<int>(segment_names.size()); ++number)
    for (int z = 0; z < s.slices; ++z) {
      bool any = false;
      for (int i = 0; i < rows * cols; ++i)
        any = any || labels.at(z, i / cols, i % cols) == value.at(segment_names[number]);
      expected_frames += any;
    }
  EXPECT_EQ(static_cast<int64_t>(frames.size()), expected_frames) << "empty frames are left out";
  EXPECT_GT(frames.size(), 0u);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const int number = us(items(frames[f], 0x0062, 0x000a).at(0), 0x0062, 0x000b);
    const auto derivation = items(frames[f], 0x0008, 0x9124).at(0);
    const auto source = items(derivation, 0x0008, 0x2112).at(0);
    const std::string frame_number = text(source, 0x0008, 0x1160);
    const int z = slice_of(text(source, 0x0008, 0x1155), frame_number.empty() ? 0 : std::stoi(frame_number));
    ASSERT_GE(z, 0) << "frame " << f << " references an unknown instance or frame";
    // The frame's position is its source slice's.
    const std::string ipp = text(items(frames[f], 0x0020, 0x9113).at(0), 0x0020, 0x0032);
    const auto p = test::slice_position(s, z);
    double x = 0, y = 0, w = 0;
    ASSERT_EQ(std::sscanf(ipp.c_str(), "%lf\\%lf\\%lf", &x, &y, &w), 3) << ipp;
    EXPECT_NEAR(x, p[0], 1e-4);
    EXPECT_NEAR(y, p[1], 1e-4);
    EXPECT_NEAR(w, p[2], 1e-4);
    for (int i = 0; i < rows * cols; ++i) {
      const std::size_t bit = f * static_cast<std::size_t>(rows * cols) + static_cast<std::size_t>(i);
      const bool on = (static_cast<uint8_t>(bits[bit / 8]) >> (bit % 8)) & 1u;
      ASSERT_EQ(on, labels.at(z, i / cols, i % cols) == value.at(segment_names[number]))
          << "frame " << f << " (segment " << number << ", slice " << z << ") pixel " << i;
    }
  }
}

}  // namespace

TEST(DicomSegOutput, ASeriesPredictsToASegThatMatchesItsNiftiPrediction) {
  test::TempDir d("dcmseg");
  const std::string model = test::dicom_tiny_model(d);
  const auto s = test::ct_series();
  const auto files = test::write_dicom_series(d / "in/ct", s);
  const std::string common = " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar";
  auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "seg" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(d / "seg/ct.dcm")) << r.output;
  EXPECT_FALSE(fs::exists(d / "seg/ct.nii.gz"));
  r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "nii --output_format nifti" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume labels = io::read_image(d / "nii/ct.nii.gz");

  const gdcm::DataSet seg = read_dataset(d / "seg/ct.dcm");
  EXPECT_EQ(text(seg, 0x0008, 0x0016), "1.2.840.10008.5.1.4.1.1.66.4");  // Segmentation Storage
  EXPECT_EQ(text(seg, 0x0020, 0x000d), s.study_uid);
  EXPECT_EQ(text(seg, 0x0020, 0x0052), s.for_uid);
  EXPECT_NE(text(seg, 0x0020, 0x000e), s.series_uid);  // a new series
  const auto ref_series = items(seg, 0x0008, 0x1115);
  ASSERT_EQ(ref_series.size(), 1u);
  EXPECT_EQ(text(ref_series[0], 0x0020, 0x000e), s.series_uid);
  EXPECT_EQ(items(ref_series[0], 0x0008, 0x114a).size(), files.size());  // every source instance

  // The algorithm: medseg, its version, and the model folder with its folds as parameters.
  const auto algorithm = items(items(seg, 0x0062, 0x0002).at(0), 0x0062, 0x0007).at(0);
  EXPECT_EQ(text(algorithm, 0x0066, 0x0036), "medseg");
  EXPECT_EQ(text(algorithm, 0x0066, 0x0032),
            "model " + fs::path(model).parent_path().filename().string() + "/model, folds 0");
  std::map<std::string, int> source_slice;  // SOP Instance UID -> k
  for (std::size_t k = 0; k < files.size(); ++k)
    source_slice[text(read_dataset(files[k]), 0x0008, 0x0018)] = static_cast<int>(k);
  expect_frames_match(seg, labels, s, [&](const std::string& uid, int frame) {
    EXPECT_EQ(frame, 0) << "a single-frame source's reference names no frame";
    return source_slice.count(uid) ? source_slice[uid] : -1;
  });

  expect_independent_readers_agree("check_dicom_seg.py", d / "seg/ct.dcm", d / "in/ct", d / "nii/ct.nii.gz",
                                   "equal to");
}

// The same case as an RT Structure Set: its structure read with GDCM here; filled back by pydicom
// (scripts/check_dicom_rtstruct.py) it must overlap the NIfTI prediction with Dice >= 0.98 per label.
TEST(DicomSegOutput, ASeriesPredictsToAnRtstructThatFillsBackToItsNiftiPrediction) {
  test::TempDir d("dcmrt");
  const std::string model = test::dicom_tiny_model(d);
  const auto s = test::ct_series();
  const auto files = test::write_dicom_series(d / "in/ct", s);
  const std::string common = " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar";
  auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "rt --output_format rtstruct" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(d / "rt/ct_rtstruct.dcm")) << r.output;
  r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "nii --output_format nifti" + common);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume labels = io::read_image(d / "nii/ct.nii.gz");

  const gdcm::DataSet rt = read_dataset(d / "rt/ct_rtstruct.dcm");
  EXPECT_EQ(text(rt, 0x0008, 0x0016), "1.2.840.10008.5.1.4.1.1.481.3");  // RT Structure Set Storage
  EXPECT_EQ(text(rt, 0x0020, 0x000d), s.study_uid);
  const auto frame = items(rt, 0x3006, 0x0010).at(0);
  EXPECT_EQ(text(frame, 0x0020, 0x0052), s.for_uid);
  std::map<std::string, int> source_slice;
  for (std::size_t k = 0; k < files.size(); ++k)
    source_slice[text(read_dataset(files[k]), 0x0008, 0x0018)] = static_cast<int>(k);
  std::map<std::string, bool> present;
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const double v = labels.at(i / (s.rows * s.columns), (i / s.columns) % s.rows, i % s.columns);
    if (v == 1) present["a"] = true;
    if (v == 2) present["b"] = true;
  }
  const auto rois = items(rt, 0x3006, 0x0020);
  EXPECT_EQ(rois.size(), present.size());
  for (const auto& roi : rois) EXPECT_TRUE(present.count(text(roi, 0x3006, 0x0026))) << text(roi, 0x3006, 0x0026);
  int contours = 0;
  for (const auto& roi : items(rt, 0x3006, 0x0039))
    for (const auto& c : items(roi, 0x3006, 0x0040)) {
      EXPECT_EQ(text(c, 0x3006, 0x0042), "CLOSED_PLANAR");
      EXPECT_TRUE(source_slice.count(text(items(c, 0x3006, 0x0016).at(0), 0x0008, 0x1155)));
      ++contours;
    }
  EXPECT_GT(contours, 0);

  expect_independent_readers_agree("check_dicom_rtstruct.py", d / "rt/ct_rtstruct.dcm", d / "in/ct",
                                   d / "nii/ct.nii.gz", "Dice per label");
}

// A series kept as one enhanced multi-frame object (frame f holds slice slices - f, the reverse of spatial order):
// the SEG's frames and the RTSTRUCT's contours reference the object and the frame of their slice.
TEST(DicomSegOutput, AMultiFrameSourceIsReferencedFrameByFrame) {
  test::TempDir d("dcmmf");
  const std::string model = test::dicom_tiny_model(d);
  const auto s = test::ct_series();
  const std::string source = test::write_enhanced_dicom(d / "in/ct/ct.dcm", s);
  const std::string uid = text(read_dataset(source), 0x0008, 0x0018);
  const std::string common = " -m " + model + " -npp 1 -nps 1 --disable_tta --disable_progress_bar";
  for (const char* format : {"dicom_seg", "rtstruct", "nifti"}) {
    const auto r =
        test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / format + " --output_format " + format + common);
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.output;
  }
  const Volume labels = io::read_image(d / "nifti/ct.nii.gz");
  auto slice_of = [&](const std::string& u, int frame) {
    return u == uid && frame >= 1 && frame <= s.slices ? s.slices - frame : -1;
  };

  const gdcm::DataSet seg = read_dataset(d / "dicom_seg/ct.dcm");
  const auto ref_series = items(seg, 0x0008, 0x1115);
  ASSERT_EQ(ref_series.size(), 1u);
  EXPECT_EQ(items(ref_series[0], 0x0008, 0x114a).size(), 1u);  // the one object, once
  expect_frames_match(seg, labels, s, slice_of);
  expect_independent_readers_agree("check_dicom_seg.py", d / "dicom_seg/ct.dcm", d / "in/ct", d / "nifti/ct.nii.gz",
                                   "equal to");

  const gdcm::DataSet rt = read_dataset(d / "rtstruct/ct_rtstruct.dcm");
  const auto series = items(items(items(rt, 0x3006, 0x0010).at(0), 0x3006, 0x0012).at(0), 0x3006, 0x0014).at(0);
  EXPECT_EQ(items(series, 0x3006, 0x0016).size(), static_cast<std::size_t>(s.slices));  // each frame
  const auto normal = test::slice_normal(s);
  int contours = 0;
  for (const auto& roi : items(rt, 0x3006, 0x0039))
    for (const auto& c : items(roi, 0x3006, 0x0040)) {
      const auto image = items(c, 0x3006, 0x0016).at(0);
      const std::string frame = text(image, 0x0008, 0x1160);
      ASSERT_FALSE(frame.empty()) << "a contour of a multi-frame source names its frame";
      const int z = slice_of(text(image, 0x0008, 0x1155), std::stoi(frame));
      ASSERT_GE(z, 0) << frame;
      // Its first point lies in that slice's plane.
      double p[3];
      ASSERT_EQ(std::sscanf(text(c, 0x3006, 0x0050).c_str(), "%lf\\%lf\\%lf", &p[0], &p[1], &p[2]), 3);
      const auto o = test::slice_position(s, z);
      EXPECT_NEAR((p[0] - o[0]) * normal[0] + (p[1] - o[1]) * normal[1] + (p[2] - o[2]) * normal[2], 0, 1e-3);
      ++contours;
    }
  EXPECT_GT(contours, 0);
  expect_independent_readers_agree("check_dicom_rtstruct.py", d / "rtstruct/ct_rtstruct.dcm", d / "in/ct",
                                   d / "nifti/ct.nii.gz", "Dice per label");
}

TEST(DicomSegOutput, CodesComeFromTheModelFolderAndNiftiInputIsRefused) {
  test::TempDir d("dcmseg");
  const std::string model = test::dicom_tiny_model(d);
  std::ofstream(model + "/dicom_codes.json")
      << R"({"labels": {"a": {"category": ["123037004", "SCT", "Anatomical Structure"],
                             "type": ["10200004", "SCT", "Liver"], "color": [221, 130, 101]}}})";
  test::write_dicom_series(d / "in/ct", test::ct_series());
  io::write_image(d / "in/plain_0000.nii.gz", io::read_image(d / "in/ct"));
  const auto r = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out -m " + model +
                                                     " -npp 1 -nps 1 --disable_tta --disable_progress_bar"
                                                     " --output_format dicom_seg");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("not a DICOM series, so there is no series for a DICOM object to reference"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(fs::exists(d / "out/ct.dcm")) << r.output;
  EXPECT_FALSE(fs::exists(d / "out/plain.nii.gz"));
  const gdcm::DataSet seg = read_dataset(d / "out/ct.dcm");
  bool liver = false;
  for (const auto& item : items(seg, 0x0062, 0x0002)) {
    const std::string type = text(items(item, 0x0062, 0x000f).at(0), 0x0008, 0x0100);
    if (text(item, 0x0062, 0x0005) == "a") liver = type == "10200004";
    if (text(item, 0x0062, 0x0005) == "b") {
      EXPECT_EQ(type, "85756007");  // the generic Tissue
    }
  }
  EXPECT_TRUE(liver);

  std::ofstream(model + "/dicom_codes.json") << R"({"labels": {"kidney": {"category": [], "type": []}}})";
  const auto bad = test::run_cli("medseg_predict", "-i " + d / "in/ct" + " -o " + d / "out2 -m " + model +
                                                       " -npp 1 -nps 1 --disable_tta --disable_progress_bar");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("dicom_codes.json: 'labels' names 'kidney', which the model does not segment"),
            std::string::npos)
      << bad.output;
}
