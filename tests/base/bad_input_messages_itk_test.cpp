// Truncated NIfTI files get a message that says what is there and what is missing, never one that
// contradicts itself: a .nii.gz cut inside its gzip header was "truncated: holds 0 of the 0 bytes
// its header describes", one cut in the gzip trailer "holds 4960 of the 4960 bytes".
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "support/nifti_patch.h"
#include "support/test_support.h"
#include "support/output_lines.h"

namespace fs = std::filesystem;
using namespace medseg;
namespace nii = medseg::test::nifti;

using medseg::test::line_naming;

namespace {

struct CutRow {
  const char* name;
  const char* ending;
  std::string (*cut)(const std::string& file_bytes, const std::string& nifti_bytes);  // the new file bytes
  const char* expect;
};
// gtest prints a row by its name.
void PrintTo(const CutRow& r, std::ostream* os) { *os << r.name; }

const CutRow kMessagesRows[] = {
    {"GzipHeaderOnly", ".nii.gz", [](const std::string& f, const std::string&) { return f.substr(0, 10); },
     "truncated: no NIfTI header (0 bytes after decompression)"},
    {"EmptyGzipStream", ".nii.gz", [](const std::string&, const std::string&) { return nii::gzip_bytes(""); },
     "empty: no NIfTI header (0 bytes after decompression)"},
    {"CutInGzipTrailer", ".nii.gz", [](const std::string& f, const std::string&) { return f.substr(0, f.size() - 4); },
     "gzip end (checksum) is missing"},
    {"CutInsideNiftiHeader", ".nii.gz",
     [](const std::string&, const std::string& n) { return nii::gzip_bytes(n.substr(0, 200)); },
     "truncated NIfTI header (200 of 348 bytes)"},
    {"CutInVoxels", ".nii", [](const std::string&, const std::string& n) { return n.substr(0, 400); },
     "truncated: holds 400 of the"},
    {"PlainCutInsideHeader", ".nii", [](const std::string&, const std::string& n) { return n.substr(0, 3); },
     "truncated NIfTI header (3 bytes)"},
};

}  // namespace

class TruncatedNifti : public ::testing::TestWithParam<CutRow> {};

TEST_P(TruncatedNifti, MessageSaysWhatIsMissing) {
  const CutRow& row = GetParam();
  test::TempDir d("cut");
  const std::string folder = d / "Dataset953_Cut", ending = row.ending;
  write_json(folder + "/dataset.json", json{{"channel_names", {{"0", "CT"}}},
                                            {"labels", {{"background", 0}, {"a", 1}}},
                                            {"numTraining", 1},
                                            {"file_ending", ending}});
  std::vector<double> v(6 * 7 * 8, 1.0);
  const std::string image = folder + "/imagesTr/c_0000" + ending;
  io::write_image(image, Volume::from_values(PixelType::Float32, {6, 7, 8}, Geometry{}, v));
  io::write_image(folder + "/labelsTr/c" + ending, Volume::from_values(PixelType::UInt8, {6, 7, 8}, Geometry{}, v));
  write_file_atomic(image, row.cut(test::read_text(image), nii::read_bytes(image)));

  const auto r = test::run_cli("medseg_verify_dataset", "-i " + folder + " --np 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = line_naming(r.output, image);
  EXPECT_NE(line.find(row.expect), std::string::npos) << "wanted '" << row.expect << "':\n" << r.output;
  std::smatch m;
  if (std::regex_search(line, m, std::regex("holds (\\d+) of the (\\d+) bytes"))) {
    EXPECT_NE(m[1].str(), m[2].str()) << "a truncated file that holds all its bytes: " << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, TruncatedNifti, ::testing::ValuesIn(kMessagesRows),
                         [](const ::testing::TestParamInfo<CutRow>& i) { return std::string(i.param.name); });
