// medseg_predict --overlays: one overlays/CASE.png per predicted case, sized from the input's
// spacing, and none without the flag; a file where the overlays folder should be stops the run
// with one line naming it, before anything is predicted.
#include <gtest/gtest.h>

#include <cairo.h>

#include <filesystem>

#include "core/json_io.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

// 17 x 18 x 16 voxels (z, y, x) of 1 mm: axial x by y 16 x 18 mm -> 228 x 256 px, coronal x by z
// 16 x 17 mm -> 241 x 256, sagittal y by z 18 x 17 mm -> 256 x 242. Width 8 + 228 + 8 + 241 + 8 + 256
// + 8 + 200 = 957, height 30 + 18 + 256 + 8 = 312 (a two-label model's legend is shorter).
Volume overlay_blob() {
  Volume v(PixelType::Float32, {17, 18, 16});
  float* p = v.data<float>();
  for (int64_t i = 0; i < v.numel(); ++i) p[i] = 1.0f + static_cast<float>((i * 7) % 11);
  return v;
}

std::string model_folder(const test::TempDir& d) {
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 11);
  const std::string folder = d / "model";
  test::write_model_folder(folder, s, net, {"0"});
  return folder;
}

std::vector<std::string> pngs_under(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.path().extension() == ".png") out.push_back(fs::relative(e.path(), folder).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(OverlaysCli, OnePicturePerCaseOnlyWithTheFlag) {
  test::TempDir d("ovcli");
  const std::string model = model_folder(d), in = d / "in";
  fs::create_directories(in);
  for (const char* id : {"a", "b"}) io::write_image(in + "/" + id + "_0000.nii.gz", overlay_blob());
  const std::string common = "-i " + in + " -m " + model + " -npp 0 -nps 0 --disable_tta --disable_progress_bar";

  auto r = test::run_cli("medseg_predict", common + " -o " + (d / "plain"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "plain/a.nii.gz"));
  EXPECT_TRUE(pngs_under(d / "plain").empty());
  EXPECT_FALSE(fs::exists(d / "plain/overlays"));

  r = test::run_cli("medseg_predict", common + " -o " + (d / "pics") + " --overlays");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(pngs_under(d / "pics"), (std::vector<std::string>{"overlays/a.png", "overlays/b.png"}));
  EXPECT_TRUE(fs::exists(d / "pics/a.nii.gz"));
  cairo_surface_t* png = cairo_image_surface_create_from_png((d / "pics/overlays/a.png").c_str());
  ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(png), 957);
  EXPECT_EQ(cairo_image_surface_get_height(png), 312);
  cairo_surface_destroy(png);

  // --continue_prediction counts the picture as an output: a case without one is predicted again.
  fs::remove(d / "pics/overlays/b.png");
  r = test::run_cli("medseg_predict", common + " -o " + (d / "pics") + " --overlays --continue_prediction");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 case(s) written, 1 skipped"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(d / "pics/overlays/b.png"));
}

TEST(OverlaysCli, FileInTheWayIsOneLineAndNothingIsPredicted) {
  test::TempDir d("ovcli");
  const std::string model = model_folder(d), in = d / "in", out = d / "out";
  fs::create_directories(in);
  io::write_image(in + "/a_0000.nii.gz", overlay_blob());
  fs::create_directories(out);
  write_file_atomic(out + "/overlays", "not a folder");
  const auto before = test::folder_snapshot(out);
  const auto r = test::run_cli("medseg_predict", "-i " + in + " -o " + out + " -m " + model +
                                                     " --overlays --disable_tta --disable_progress_bar");
  EXPECT_NE(r.exit_code, 0);
  const std::string line = "medseg_predict: error: " + out + "/overlays: cannot create the overlays folder";
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("error", r.output.find(line) + line.size()), std::string::npos) << "one error line\n"
                                                                                          << r.output;
  EXPECT_EQ(test::folder_snapshot(out), before);
}
