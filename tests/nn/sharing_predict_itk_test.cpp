// A model installed from a zip predicts exactly what the original folder predicts: the installed
// folder is found by -d/-c under the new results root, and its segmentation equals, voxel for voxel,
// the one from the model folder the zip was exported from.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "inference_test_util.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

TEST(ModelZipPredict, InstalledModelPredictsLikeTheOriginal) {
  test::TempDir d("zipp");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 21);
  const std::string model = d / "results/Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
  test::write_model_folder(model, s, net, {"0"});

  Geometry g;
  Volume img(PixelType::Float32, {17, 18, 16}, g);
  float* p = img.data<float>();
  for (int64_t i = 0; i < img.numel(); ++i) p[i] = static_cast<float>((i * 13) % 17) - 5.0f;
  fs::create_directories(d / "in");
  io::write_image(d / "in/case_0000.nii.gz", img);

  const std::string zip = d / "m.zip";
  ASSERT_EQ(test::run_cli("medseg_export_model_zip", "-m " + model + " -o " + zip).exit_code, 0);
  const auto inst = test::run_cli("medseg_install_model_zip", zip + " -o " + d / "root2");
  ASSERT_EQ(inst.exit_code, 0) << inst.output;

  const std::string flags = " -npp 0 -nps 0 --disable_tta --disable_progress_bar --threads 1";
  const auto a = test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out_a" + " -m " + model + flags);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto b =
      test::run_cli("medseg_predict", "-i " + d / "in" + " -o " + d / "out_b" + " -d 999 -c 3d_fullres" + flags,
                    "MEDSEG_RESULTS=" + d / "root2");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const Volume va = io::read_image(d / "out_a/case.nii.gz");
  const Volume vb = io::read_image(d / "out_b/case.nii.gz");
  ASSERT_EQ(va.nbytes(), vb.nbytes());
  EXPECT_EQ(std::memcmp(va.raw(), vb.raw(), va.nbytes()), 0);
  // Not a constant segmentation, which other weights would reproduce as well.
  const std::size_t px = pixel_size(va.pixel_type());
  const auto* bytes = static_cast<const char*>(va.raw());
  bool varies = false;
  for (std::size_t i = px; i < va.nbytes() && !varies; i += px) varies = std::memcmp(bytes, bytes + i, px) != 0;
  EXPECT_TRUE(varies);
}
