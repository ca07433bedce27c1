// medseg_predict with one input whose NIfTI geometry ITK cannot take, between two good cases:
// the bad case is reported with one line naming its file and defect, the good cases are written,
// the exit code is 1. Before the header check a NaN sform made ITK abort() the whole run (the good
// cases got no output) and a zero/NaN pixdim was silently taken as spacing 1.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <sstream>

#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/nifti_patch.h"
#include "support/test_support.h"
#include "support/output_lines.h"

using namespace medseg;
namespace fs = std::filesystem;
namespace nii = medseg::test::nifti;

using medseg::test::line_naming;

namespace {

struct PredictRow {
  const char* name;
  void (*patch)(std::string&);
  const char* expect;
};
// gtest prints a row by its name.
void PrintTo(const PredictRow& r, std::ostream* os) { *os << r.name; }

void sform_only(std::string& b) {
  nii::poke<int16_t>(b, nii::kQformCode, 0);
  nii::poke<int16_t>(b, nii::kSformCode, 1);
}
void qform_only(std::string& b) {
  nii::poke<int16_t>(b, nii::kQformCode, 1);
  nii::poke<int16_t>(b, nii::kSformCode, 0);
}

const PredictRow kRows[] = {
    {"SformNaN",
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowX, nii::kNaN);
     },
     "sform matrix holds NaN"},
    {"SformInf",
     [](std::string& b) {
       sform_only(b);
       nii::poke(b, nii::kSrowZ + 8, nii::kInf);
     },
     "sform matrix holds Inf"},
    {"SformSingular",
     [](std::string& b) {
       sform_only(b);
       for (size_t row : {nii::kSrowX, nii::kSrowY, nii::kSrowZ}) nii::poke(b, row + 4, 0.0f);
     },
     "sform matrix is singular"},
    {"QformNaNQuaternion",
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kQuaternB + 4, nii::kNaN);
     },
     "qform quaternion holds NaN"},
    {"QformOnlyPixdimNaN",
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 4, nii::kNaN);
     },
     "spacing NaN along x"},
    {"QformOnlyPixdimZero",
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 12, 0.0f);
     },
     "spacing 0 along z"},
    {"QformOnlyPixdimNegative",
     [](std::string& b) {
       qform_only(b);
       nii::poke(b, nii::kPixdim + 8, -2.0f);
     },
     "spacing -2 along y"},
};

Volume blob(float base) {
  Volume v(PixelType::Float32, {17, 18, 16}, Geometry{});
  float* p = v.data<float>();
  for (int64_t i = 0; i < v.numel(); ++i) p[i] = base + static_cast<float>((i * 7) % 11);
  return v;
}

}  // namespace

class PredictBadGeometry : public ::testing::TestWithParam<PredictRow> {};

TEST_P(PredictBadGeometry, GoodCasesAreWrittenAndTheBadOneNamed) {
  test::TempDir d("predgeo");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 5);
  const std::string model = d / "model";
  test::write_model_folder(model, s, net, {"0"});
  const std::string in = d / "in", out = d / "out";
  io::write_image(in + "/a_good_0000.nii.gz", blob(1.0f));
  io::write_image(in + "/b_bad_0000.nii.gz", blob(2.0f));
  io::write_image(in + "/c_good_0000.nii.gz", blob(3.0f));
  nii::patch_file(in + "/b_bad_0000.nii.gz", GetParam().patch);
  const auto r = test::run_cli("medseg_predict", "-i " + in + " -o " + out + " -m " + model +
                                                     " -npp 1 -nps 1 --disable_tta --disable_progress_bar --threads 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(fs::exists(out + "/a_good.nii.gz")) << r.output;
  EXPECT_TRUE(fs::exists(out + "/c_good.nii.gz")) << r.output;
  EXPECT_FALSE(fs::exists(out + "/b_bad.nii.gz")) << r.output;
  const std::string line = line_naming(r.output, "  b_bad: ");
  EXPECT_NE(line.find("b_bad_0000.nii.gz"), std::string::npos) << r.output;
  EXPECT_NE(line.find(GetParam().expect), std::string::npos) << "wanted '" << GetParam().expect << "':\n" << r.output;
  EXPECT_NE(r.output.find("1 case(s) failed"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Rows, PredictBadGeometry, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<PredictRow>& i) { return std::string(i.param.name); });
