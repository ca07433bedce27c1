// medseg_predict must never write over an input image. Inputs without the _0000 suffix are named
// exactly like their case's output, so an output folder that is the input folder (however it is
// spelled: trailing slash, "./", "..", a symbolic link) would replace the images with
// segmentations. Each such run is refused with one line before anything is written; -o equal to -i
// without a collision stays allowed, as in nnU-Net.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <ostream>

#include "core/json_io.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

Volume overwrite_blob(float base) {
  Volume v(PixelType::Float32, {12, 13, 11}, Geometry{});
  float* p = v.data<float>();
  for (int64_t i = 0; i < v.numel(); ++i) p[i] = base + static_cast<float>((i * 5) % 7);
  return v;
}

// "<size> bytes, hash <h>": byte-identical files give the same text, and failures print short.
std::string digest(const std::string& path) {
  const std::string bytes = test::read_text(path);
  return std::to_string(bytes.size()) + " bytes, hash " + std::to_string(std::hash<std::string>{}(bytes));
}

// name -> size and hash of the bytes of every file under `folder` (recursively).
std::map<std::string, std::string> snapshot(const std::string& folder) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.is_regular_file()) files[fs::relative(e.path(), folder).string()] = digest(e.path().string());
  return files;
}

struct OverwriteRow {
  std::string name;
  std::string inputs;  // -i, relative to the scratch folder
  std::string output;  // -o, relative to the scratch folder
  std::string extra;   // more flags
};
// gtest prints a row by its name.
void PrintTo(const OverwriteRow& row, std::ostream* os) { *os << row.name; }

class PredictOverwrite : public ::testing::TestWithParam<OverwriteRow> {
 protected:
  void SetUp() override {
    test::TinyModelSpec s;
    auto net = test::tiny_network(s, 5);
    test::write_model_folder(dir_ / "model", s, net, {"0"});
    fs::create_directories(dir_ / "in");
    io::write_image(dir_ / "in/a.nii.gz", overwrite_blob(1.0f));  // no _0000: named like the output
    io::write_image(dir_ / "in/b.nii.gz", overwrite_blob(2.0f));
    fs::create_directory_symlink(dir_ / "in", dir_ / "link");
    // Case "a" (channel 1 only: an error for a 1-channel model) and case "a_0001" (channel 0), whose
    // output a_0001.nii.gz is case a's input file.
    fs::create_directories(dir_ / "in2");
    io::write_image(dir_ / "in2/a_0001.nii.gz", overwrite_blob(3.0f));
    io::write_image(dir_ / "in2/a_0001_0000.nii.gz", overwrite_blob(4.0f));
  }
  std::map<std::string, std::string> inputs() const {
    auto files = snapshot(dir_ / "in");
    for (const auto& [name, bytes] : snapshot(dir_ / "in2")) files["in2/" + name] = bytes;
    return files;
  }
  test::TempDir dir_{"povw"};
};

}  // namespace

TEST_P(PredictOverwrite, IsRefusedBeforeAnythingIsWritten) {
  const OverwriteRow& row = GetParam();
  const auto before = inputs();
  const auto r = test::run_cli("medseg_predict",
                               "-i " + (dir_ / row.inputs) + " -o " + (dir_ / row.output) + " -m " + (dir_ / "model") +
                                   " -npp 0 -nps 0 --disable_tta --disable_progress_bar " + row.extra);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("would be overwritten"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("error:"), r.output.rfind("error:")) << "one error line\n" << r.output;
  EXPECT_EQ(inputs(), before) << "the input folder changed (images overwritten or files added)";
}

INSTANTIATE_TEST_SUITE_P(
    Collisions, PredictOverwrite,
    ::testing::Values(OverwriteRow{"same_folder", "in", "in", ""}, OverwriteRow{"trailing_slash", "in/", "in/", ""},
                      OverwriteRow{"dot", "in", "in/.", ""}, OverwriteRow{"dot_slash", "in", "in/./", ""},
                      OverwriteRow{"dotdot", "in", "in/../in", ""}, OverwriteRow{"symlinked_output", "in", "link", ""},
                      OverwriteRow{"symlinked_input", "link", "in", ""},
                      OverwriteRow{"explicit_file", "in/a.nii.gz", "in", ""},
                      OverwriteRow{"with_probabilities", "in", "in", "--save_probabilities"},
                      OverwriteRow{"continue_prediction", "in", "in", "--continue_prediction"},
                      OverwriteRow{"other_part", "in", "in", "--num_parts 2 --part_id 1"},
                      OverwriteRow{"input_of_another_case", "in2", "in2", ""}),
    [](const ::testing::TestParamInfo<OverwriteRow>& row) { return row.param.name; });

TEST(PredictOverwrite, OutputIntoTheInputFolderWithoutCollisionStillWorks) {
  test::TempDir d("povw2");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 5);
  test::write_model_folder(d / "model", s, net, {"0"});
  fs::create_directories(d / "in");
  io::write_image(d / "in/a_0000.nii.gz", overwrite_blob(1.0f));
  const std::string input = test::read_text(d / "in/a_0000.nii.gz");
  const auto r = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "in/.") + " -m " + (d / "model") +
                                                     " -npp 0 -nps 0 --disable_tta --disable_progress_bar");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "in/a.nii.gz")) << r.output;
  EXPECT_EQ(test::read_text(d / "in/a_0000.nii.gz"), input);
}
