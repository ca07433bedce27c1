// NIfTI files with geometry ITK cannot take (NaN/Inf sform or quaternion, zero/negative/NaN
// spacing, singular sform) are refused per file, with one line naming the file and the defect,
// by every CLI that reads training images, and nothing is written. Before the header check ITK
// abort()ed on a NaN sform (the CLIs died with SIGABRT) and took spacing 1.0 for a bad pixdim.
// The CLIs run as subprocesses so an abort() fails the row instead of killing the test binary.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "io/nifti_check.h"
#include "io/nifti_header.h"
#include "io/synthetic_dataset.h"
#include "support/nifti_patch.h"
#include "support/test_support.h"
#include "support/output_lines.h"

namespace fs = std::filesystem;
using namespace medseg;
namespace nii = medseg::test::nifti;

using medseg::test::line_naming;

namespace {

constexpr const char* kName = "Dataset950_Geo";

struct GeoRow {
  const char* name;
  const char* ending;  // .nii or .nii.gz
  bool label_file;     // patch the label instead of the image
  void (*patch)(std::string&);
  const char* expect;  // fragment of the one-line message
};
// gtest prints a row by its name.
void PrintTo(const GeoRow& r, std::ostream* os) { *os << r.name; }

void transform_codes(std::string& b, int16_t qform, int16_t sform) {
  nii::poke<int16_t>(b, nii::kQformCode, qform);
  nii::poke<int16_t>(b, nii::kSformCode, sform);
}
void sform_only(std::string& b) { transform_codes(b, 0, 1); }
void qform_only(std::string& b) { transform_codes(b, 1, 0); }

const GeoRow kGeometryRows[] = {
    {"SformNaN_gz", ".nii.gz", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowX, nii::kNaN);
     },
     "sform matrix holds NaN"},
    {"SformNaN_nii", ".nii", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowX + 4, nii::kNaN);
     },
     "sform matrix holds NaN"},
    {"SformNaNWithQform_gz", ".nii.gz", false,
     [](std::string& b) {
       transform_codes(b, 1, 1);
       nii::poke(b, nii::kSrowZ + 8, nii::kNaN);
     },
     "sform matrix holds NaN"},
    {"SformInf_gz", ".nii.gz", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowY + 4, nii::kInf);
     },
     "sform matrix holds Inf"},
    {"SformInfOffset_nii", ".nii", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowZ + 12, -nii::kInf);
     },
     "sform matrix holds Inf"},
    {"SformSingular_gz", ".nii.gz", false,
     [](std::string& b) {
       sform_only(b);
       for (size_t k = 0; k < 3; ++k) nii::poke(b, nii::kSrowY + 4 * k, nii::peek<float>(b, nii::kSrowX + 4 * k));
     },
     "sform matrix is singular"},
    {"SformZeroAxis_nii", ".nii", false,
     [](std::string& b) {
       sform_only(b);
       for (size_t row : {nii::kSrowX, nii::kSrowY, nii::kSrowZ}) nii::poke(b, row + 8, 0.0f);
     },
     "its z axis is zero"},
    // Values near FLT_MAX made ITK's orientation SVD loop forever (fuzz finding, hardening.md).
    {"SformHugeOffset_nii", ".nii", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowX + 12, 3e38f);
     },
     "sform matrix holds 3e+38 (beyond +-1e+09)"},
    {"SformHugePixdim_gz", ".nii.gz", false,
     [](std::string& b) {
       transform_codes(b, 1, 1);
       nii::poke(b, nii::kPixdim + 4, 3e38f);
     },
     "spacing 3e+38 (beyond +-1e+09) along x"},
    {"QformHugeOffset_nii", ".nii", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kQoffsetX + 8, -2e10f);
     },
     "qform offset holds -2e+10"},
    {"QformNaNQuaternion_gz", ".nii.gz", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kQuaternB, nii::kNaN);
     },
     "qform quaternion holds NaN"},
    {"QformInfOffset_nii", ".nii", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kQoffsetX + 4, nii::kInf);
     },
     "qform offset holds Inf"},
    {"QformOnlyPixdimNaN_gz", ".nii.gz", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 4, nii::kNaN);
     },
     "spacing NaN along x"},
    {"QformOnlyPixdimInf_nii", ".nii", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 8, nii::kInf);
     },
     "spacing Inf along y"},
    {"QformOnlyPixdimZero_gz", ".nii.gz", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 12, 0.0f);
     },
     "spacing 0 along z"},
    {"QformOnlyPixdimNegative_nii", ".nii", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 8, -1.5f);
     },
     "spacing -1.5 along y"},
    {"NoTransformPixdimZero_gz", ".nii.gz", false,
     [](std::string& b) {
       transform_codes(b, 0, 0);
       nii::poke(b, nii::kPixdim + 4, 0.0f);
     },
     "spacing 0 along x"},
    {"LabelFileSformNaN_gz", ".nii.gz", true,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowX, nii::kNaN);
     },
     "sform matrix holds NaN"},
    {"BigEndianSformNaN_nii", ".nii", false,
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowY, nii::kNaN);
       b = nii::byte_swapped(b);
     },
     "sform matrix holds NaN"},
    {"BigEndianQformOnlyPixdimZero_gz", ".nii.gz", false,
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 8, 0.0f);
       b = nii::byte_swapped(b);
     },
     "spacing 0 along y"},
};

// A tiny two-case dataset per file ending, with its fingerprint and plans, made once.
struct Base {
  std::string raw, pp;
};

const Base& base(const std::string& ending) {
  static test::TempDir dir("geobase");
  static std::map<std::string, Base> made;
  auto it = made.find(ending);
  if (it != made.end()) return it->second;
  const std::string tag = ending == ".nii" ? "nii" : "gz";
  Base b{dir / (tag + "/raw"), dir / (tag + "/pp")};
  io::SyntheticDatasetOptions o;
  o.dataset_id = 950;
  o.name = "Geo";
  o.num_cases = 2;
  o.min_shape = o.max_shape = {8, 12, 12};
  o.file_ending = ending;
  io::write_synthetic_dataset(b.raw, o);
  const std::string env = "MEDSEG_RAW=" + b.raw + " MEDSEG_PREPROCESSED=" + b.pp;
  auto r = test::run_cli("medseg_extract_fingerprint", "-d 950 --max-samples-total 1000 --np 1 --no-progress", env);
  if (r.exit_code == 0) r = test::run_cli("medseg_plan_experiment", "-d 950", env);
  if (r.exit_code != 0) throw std::runtime_error("planning the base dataset failed: " + r.output);
  return made.emplace(ending, b).first->second;
}

class BadGeometry : public ::testing::TestWithParam<GeoRow> {
 protected:
  void SetUp() override {
    const GeoRow& row = GetParam();
    const Base& b = base(row.ending);
    raw_ = dir_ / "raw";
    pp_ = dir_ / "pp";
    fs::copy(b.raw, raw_, fs::copy_options::recursive);
    fs::copy(b.pp, pp_, fs::copy_options::recursive);
    const std::string folder = raw_ + "/" + kName;
    bad_file_ =
        row.label_file ? folder + "/labelsTr/case_000" + row.ending : folder + "/imagesTr/case_000_0000" + row.ending;
    nii::patch_file(bad_file_, row.patch);
  }

  // One clean failure: an exit code (no signal), and a line naming the file and the defect.
  void expect_refused(const test::CmdResult& r) {
    const GeoRow& row = GetParam();
    EXPECT_GE(r.exit_code, 1) << r.output;
    EXPECT_LT(r.exit_code, 128) << "killed by a signal:\n" << r.output;
    const std::string line = line_naming(r.output, fs::path(bad_file_).filename().string());
    EXPECT_NE(line.find(row.expect), std::string::npos)
        << "wanted a line naming " << bad_file_ << " and '" << row.expect << "'; got:\n"
        << r.output;
  }
  std::string env(const std::string& pp) const { return "MEDSEG_RAW=" + raw_ + " MEDSEG_PREPROCESSED=" + pp; }

  test::TempDir dir_{"geo"};
  std::string raw_, pp_, bad_file_;
};

TEST_P(BadGeometry, VerifyDatasetListsIt) {
  const auto r = test::run_cli("medseg_verify_dataset", "-i " + raw_ + "/" + kName + " --np 1");
  expect_refused(r);
  EXPECT_NE(r.output.find("problem: " + bad_file_), std::string::npos) << r.output;
}

TEST_P(BadGeometry, ExtractFingerprintWritesNothing) {
  const std::string out = dir_ / "fp/dataset_fingerprint.json";
  expect_refused(test::run_cli("medseg_extract_fingerprint",
                               "--raw-folder " + raw_ + "/" + kName + " -o " + out + " --np 1 --no-progress"));
  EXPECT_FALSE(fs::exists(out));
}

TEST_P(BadGeometry, PlanAndPreprocessWritesNothing) {
  const std::string fresh = dir_ / "pp_fresh";
  expect_refused(
      test::run_cli("medseg_plan_and_preprocess", "-d 950 -c 3d_fullres --npfp 1 -np 1 --no-progress", env(fresh)));
  EXPECT_FALSE(fs::exists(fresh + "/" + kName + "/dataset_fingerprint.json"));
  EXPECT_FALSE(fs::exists(fresh + "/" + kName + "/nnUNetPlans.json"));
  EXPECT_FALSE(fs::exists(fresh + "/" + kName + "/nnUNetPlans_3d_fullres"));
}

TEST_P(BadGeometry, PreprocessLeavesNoPartialOutput) {
  expect_refused(test::run_cli("medseg_preprocess", "-d 950 -c 3d_fullres --np 1 --no-progress", env(pp_)));
  EXPECT_FALSE(fs::exists(pp_ + "/" + kName + "/nnUNetPlans_3d_fullres"));
}

INSTANTIATE_TEST_SUITE_P(Rows, BadGeometry, ::testing::ValuesIn(kGeometryRows),
                         [](const ::testing::TestParamInfo<GeoRow>& i) { return std::string(i.param.name); });

}  // namespace

// The header decoder on both NIfTI versions and byte orders: a file ITK wrote (spacing 0.5, 0.75,
// 2 and LPS origin 1, 2, 3, so RAS srow x = -0.5, offsets -1, -2, 3), the same file byte-swapped,
// and a hand-made NIfTI-2 header (ITK 5.2 cannot write one).
TEST(NiftiHeader, DecodesBothVersionsAndByteOrders) {
  test::TempDir d("niihdr");
  Geometry g;
  g.spacing = {0.5, 0.75, 2.0};
  g.origin = {1, 2, 3};
  io::write_image(d / "a.nii", Volume(PixelType::Int16, {4, 5, 6}, g));
  const std::string le = nii::read_bytes(d / "a.nii"), be = nii::byte_swapped(le);
  for (const std::string* b : {&le, &be}) {
    const io::NiftiHeader h =
        io::parse_nifti_header("a.nii", reinterpret_cast<const unsigned char*>(b->data()), b->size());
    EXPECT_EQ(h.swapped, b == &be);
    EXPECT_EQ(h.ndim, 3);
    EXPECT_EQ(h.dim[1], 6);
    EXPECT_EQ(h.dim[3], 4);
    EXPECT_DOUBLE_EQ(h.pixdim[2], 0.75);
    EXPECT_GT(h.sform_code, 0);
    EXPECT_DOUBLE_EQ(h.srow[0], -0.5);
    EXPECT_DOUBLE_EQ(h.srow[3], -1.0);
    EXPECT_DOUBLE_EQ(h.srow[11], 3.0);
    EXPECT_EQ(io::nifti_geometry_problem(h), "");
  }

  std::string v2(540, '\0');
  nii::poke<int32_t>(v2, 0, 540);
  nii::poke<int16_t>(v2, 12, 4);   // datatype int16
  nii::poke<int16_t>(v2, 14, 16);  // bitpix
  nii::poke<int64_t>(v2, 16, 3);   // dim[0]
  for (int i = 1; i <= 3; ++i) nii::poke<int64_t>(v2, 16 + 8 * i, 10 * i);
  for (int i = 1; i <= 3; ++i) nii::poke<double>(v2, 104 + 8 * i, 0.5 * i);
  nii::poke<int64_t>(v2, 168, 544);  // vox_offset
  nii::poke<int32_t>(v2, 348, 1);    // sform_code
  for (int r = 0; r < 3; ++r) nii::poke<double>(v2, 400 + 32 * r + 8 * r, 0.5 * (r + 1));
  io::NiftiHeader h = io::parse_nifti_header("b.nii", reinterpret_cast<const unsigned char*>(v2.data()), v2.size());
  EXPECT_EQ(h.version, 2);
  EXPECT_EQ(h.dim[2], 20);
  EXPECT_DOUBLE_EQ(h.pixdim[3], 1.5);
  EXPECT_EQ(h.vox_offset, 544);
  EXPECT_EQ(io::nifti_geometry_problem(h), "");
  nii::poke<double>(v2, 400 + 32 + 8, std::numeric_limits<double>::quiet_NaN());  // srow_y[1]
  h = io::parse_nifti_header("b.nii", reinterpret_cast<const unsigned char*>(v2.data()), v2.size());
  EXPECT_EQ(io::nifti_geometry_problem(h), "sform matrix holds NaN");
  nii::poke<double>(v2, 400 + 32 + 8, 0.0);
  h = io::parse_nifti_header("b.nii", reinterpret_cast<const unsigned char*>(v2.data()), v2.size());
  EXPECT_EQ(io::nifti_geometry_problem(h), "sform matrix is singular (its y axis is zero)");
}

// NIfTI-2 dimensions whose byte count does not fit 64 bits (found while writing the nifti_header
// fuzz target, docs/hardening.md): before, the count wrapped to 0, the 544-byte file passed the completeness
// check and ITK was left to allocate what the header declared.
struct HugeDimsRow {
  const char* name;
  int64_t dim1, dim2, dim3;
};

class NiftiHugeDims : public ::testing::TestWithParam<HugeDimsRow> {};

TEST_P(NiftiHugeDims, AreRefusedBeforeItkReads) {
  test::TempDir d("niihuge");
  std::string v2(544, '\0');  // header + 4 extension bytes, no voxels
  nii::poke<int32_t>(v2, 0, 540);
  std::memcpy(&v2[4], "n+2\0\r\n\032\n", 8);
  nii::poke<int16_t>(v2, 12, 4);   // datatype int16
  nii::poke<int16_t>(v2, 14, 16);  // bitpix
  nii::poke<int64_t>(v2, 16, 3);   // dim[0]
  nii::poke<int64_t>(v2, 24, GetParam().dim1);
  nii::poke<int64_t>(v2, 32, GetParam().dim2);
  nii::poke<int64_t>(v2, 40, GetParam().dim3);
  for (int i = 1; i <= 3; ++i) nii::poke<double>(v2, 104 + 8 * i, 1.0);
  nii::poke<int64_t>(v2, 168, 544);  // vox_offset
  const std::string path = d / "huge.nii";
  nii::write_bytes(path, v2);
  for (const auto& read : {std::function<void()>([&] { io::check_nifti_complete(path); }),
                           std::function<void()>([&] { io::read_image(path); })}) {
    try {
      read();
      ADD_FAILURE() << "accepted";
    } catch (const FileError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_NE(std::string(e.what()).find("exceeds 2^64 bytes"), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, NiftiHugeDims,
                         ::testing::Values(HugeDimsRow{"voxels_wrap_to_zero", int64_t{1} << 32, int64_t{1} << 32, 1},
                                           HugeDimsRow{"bytes_wrap_to_zero", int64_t{1} << 31, int64_t{1} << 31, 2}),
                         [](const auto& row) { return std::string(row.param.name); });

// The file libFuzzer found (image_read target): a 4x3 image with an sform offset of 2^127. ITK's
// NiftiImageIO ran vnl_svd<float> on its orientation and never returned; now the header check
// refuses it before ITK opens the file. The finding's first byte is the fuzzer's mode byte.
TEST(NiftiFuzzFinding, ItkSvdHangIsRefusedBeforeItkReads) {
  const std::string finding = test::read_text(test::source_path("tests/fuzz/findings/image_read_itk_svd_hang.bin"));
  ASSERT_EQ(finding.size(), 365u);
  test::TempDir d("niisvd");
  const std::string path = d / "hang.nii";
  nii::write_bytes(path, finding.substr(1));
  try {
    io::read_image(path);
    ADD_FAILURE() << "accepted";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string(e.what()).find("sform matrix holds 1.70141e+38 (beyond +-1e+09)"), std::string::npos)
        << e.what();
  }
}

// Other formats: the geometry ITK reports from the header gets the same checks (ITK's own
// messages were "cannot read voxel data (truncated or corrupt file?)").
TEST(BadGeometryNrrd, ZeroSpacingAndSingularDirectionAreNamed) {
  test::TempDir d("geonrrd");
  const std::string folder = d / "Dataset952_Nrrd";
  fs::create_directories(folder + "/imagesTr");
  fs::create_directories(folder + "/labelsTr");
  write_json(folder + "/dataset.json", json{{"channel_names", {{"0", "CT"}}},
                                            {"labels", {{"background", 0}, {"a", 1}}},
                                            {"numTraining", 2},
                                            {"file_ending", ".nrrd"}});
  auto nrrd = [](const std::string& path, const std::string& type, const std::string& directions,
                 const std::string& data) {
    write_file_atomic(path, "NRRD0004\ntype: " + type +
                                "\ndimension: 3\nspace: left-posterior-superior\n"
                                "sizes: 2 2 2\nspace directions: " +
                                directions +
                                "\nkinds: domain domain domain\n"
                                "endian: little\nencoding: raw\nspace origin: (0,0,0)\n\n" +
                                data);
  };
  const std::string ones(8, '\1'), zeros(8, '\0');
  nrrd(folder + "/imagesTr/zero_0000.nrrd", "uchar", "(0,0,0) (0,1,0) (0,0,1)", ones);
  nrrd(folder + "/imagesTr/parallel_0000.nrrd", "uchar", "(1,0,0) (2,0,0) (0,0,1)", ones);
  for (const char* id : {"zero", "parallel"})
    nrrd(folder + "/labelsTr/" + id + ".nrrd", "uchar", "(1,0,0) (0,1,0) (0,0,1)", zeros);
  const auto r = test::run_cli("medseg_verify_dataset", "-i " + folder + " --np 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(line_naming(r.output, "zero_0000.nrrd").find("bad geometry in the header: spacing 0 along x"),
            std::string::npos)
      << r.output;
  EXPECT_NE(
      line_naming(r.output, "parallel_0000.nrrd").find("bad geometry in the header: direction matrix is singular"),
      std::string::npos)
      << r.output;
}
