// A 2D dataset of RGB .png files through the CLIs, as nnU-Net's road segmentation example (Dataset120) is
// laid out: one file per case holding the channels R, G, B, gray .png labels, file_ending ".png". Pillow
// writes every input and reads every output (independent of medseg's ITK reader): plan and preprocess 2d,
// train fold 0 briefly (the final validation writes .png), then medseg_predict writes .png predictions
// of the input's size with dataset.json's label values. Needs Debian's python3-pil.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/json_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

// Runs Python with `d` the scratch folder; true when it exits 0.
bool png_python(const std::string& dir, const std::string& body) {
  const std::string py = dir + "/check.py";
  write_file_atomic(py, "import sys, os, json, numpy as np\nfrom PIL import Image\nd = sys.argv[1]\n" + body + "\n");
  return std::system(("/usr/bin/python3 " + py + " " + dir + " 2>&1").c_str()) == 0;
}

// 6 training cases and 1 test case, 24 x 28 pixels: a bright square (label 1) on a dark noisy field,
// drawn in red and green, at a position that varies per case.
const char* kWriteDataset = R"(
root = d + '/raw/Dataset952_Roads'
for f in ('imagesTr', 'labelsTr', 'imagesTs'): os.makedirs(root + '/' + f)
rng = np.random.default_rng(3)
def case(i):
    img = rng.integers(0, 40, (24, 28, 3)).astype(np.uint8)
    lab = np.zeros((24, 28), np.uint8)
    y, x = 3 + (i * 5) % 12, 2 + (i * 7) % 16
    lab[y:y + 8, x:x + 9] = 1
    img[lab == 1, 0] = 220; img[lab == 1, 1] = 180
    return img, lab
for i in range(6):
    img, lab = case(i)
    Image.fromarray(img).save(root + '/imagesTr/road_%02d_0000.png' % i)
    Image.fromarray(lab).save(root + '/labelsTr/road_%02d.png' % i)
Image.fromarray(case(6)[0]).save(root + '/imagesTs/test_00_0000.png')
json.dump({'channel_names': {'0': 'R', '1': 'G', '2': 'B'}, 'labels': {'background': 0, 'road': 1},
           'numTraining': 6, 'file_ending': '.png'}, open(root + '/dataset.json', 'w'))
)";

}  // namespace

TEST(EndToEndPng, RgbPngCasesPlanTrainAndPredictAsPng) {
  if (std::system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3-pil";
  test::TempDir dir("e2epng");
  const std::string& d = dir.path();
  const std::string env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  ASSERT_TRUE(png_python(d, kWriteDataset));

  auto res = test::run_cli("medseg_plan_and_preprocess", "-d 952 -c 2d --np 2 --no_pbar", env);
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const json plans = read_json(d + "/pre/Dataset952_Roads/nnUNetPlans.json");
  // nnU-Net's NaturalImage2DIO: spacing (999, 1, 1), so the 2d configuration works at spacing 1.
  EXPECT_EQ(plans.at("image_reader_writer"), "NaturalImage2DIO");
  EXPECT_EQ(plans["configurations"]["2d"].at("spacing"), json({1.0, 1.0}));
  EXPECT_EQ(plans.at("original_median_spacing_after_transp"), json({999.0, 1.0, 1.0}));

  res = test::run_cli("medseg_train",
                      "952 2d 0 --epochs 1 --iters-per-epoch 2 --val-iters-per-epoch 1 "
                      "--num-workers 1 --threads 2 --no_pbar",
                      env);
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const std::string model = d + "/results/Dataset952_Roads/nnUNetTrainer__nnUNetPlans__2d";
  const json splits = read_json(d + "/pre/Dataset952_Roads/splits_final.json");
  for (const auto& id : splits.at(0).at("val"))
    EXPECT_TRUE(fs::exists(model + "/fold_0/validation/" + id.get<std::string>() + ".png")) << id;
  EXPECT_TRUE(fs::exists(model + "/fold_0/validation/summary.json"));

  res = test::run_cli("medseg_predict",
                      "-i " + d + "/raw/Dataset952_Roads/imagesTs -o " + d +
                          "/pred -d 952 -c 2d -f 0 --threads 2 -npp 0 -nps 0 --disable_progress_bar",
                      env);
  ASSERT_EQ(res.exit_code, 0) << res.output;
  EXPECT_TRUE(png_python(d, R"(
im = Image.open(d + '/pred/test_00.png')
a = np.asarray(im)
assert im.mode == 'L', im.mode
assert a.shape == (24, 28), a.shape
assert set(np.unique(a)) <= {0, 1}, np.unique(a)
)"));

  // Inputs that do not hold the model's three channels are named, case by case: a gray file alone, and an
  // RGB file followed by a file beyond the three channels.
  ASSERT_TRUE(png_python(d, R"(
os.makedirs(d + '/bad')
Image.fromarray(np.zeros((24, 28), np.uint8)).save(d + '/bad/gray_0000.png')
Image.fromarray(np.zeros((24, 28, 3), np.uint8)).save(d + '/bad/extra_0000.png')
Image.fromarray(np.zeros((24, 28), np.uint8)).save(d + '/bad/extra_0001.png')
)"));
  res = test::run_cli("medseg_predict",
                      "-i " + d + "/bad -o " + d +
                          "/pred_bad -d 952 -c 2d -f 0 --threads 2 -npp 0 -nps 0 "
                          "--disable_progress_bar",
                      env);
  EXPECT_NE(res.exit_code, 0);
  EXPECT_NE(res.output.find("gray_0001.png: missing: case 'gray' has 1 of the 3 channels the model takes"),
            std::string::npos)
      << res.output;
  EXPECT_NE(
      res.output.find("extra_0001.png: case 'extra' has 2 files; its first 1 hold the 3 channel(s) the model takes"),
      std::string::npos)
      << res.output;
}
