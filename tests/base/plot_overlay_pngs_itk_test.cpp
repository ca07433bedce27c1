// medseg_plot_overlay_pngs (nnUNetv2_plot_overlay_pngs) through the CLI. Raw: nibabel writes a case whose
// labels sit mostly in slice 2; the PNG, read back by Pillow, must equal what nnU-Net's generate_overlay
// formula gives in numpy (rewritten in the test from overlay_plots.py). Preprocessed (the default): one
// picture per case of medseg_plan_and_preprocess's 3d_fullres data, of the stored slice size. Needs
// python3-nibabel and python3-pil.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/json_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

bool python(const std::string& dir, const std::string& body) {
  write_file_atomic(
      dir + "/gen.py",
      "import sys, os, json, numpy as np, nibabel as nib\nfrom PIL import Image\nd = sys.argv[1]\n" + body + "\n");
  return std::system(("/usr/bin/python3 " + dir + "/gen.py " + dir + " 2>&1").c_str()) == 0;
}

}  // namespace

TEST(PlotOverlayPngs, RawCaseIsTheSliceAndTintsNnUNetsFormulaGives) {
  if (std::system("/usr/bin/python3 -c 'import nibabel, PIL' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no python3-nibabel / python3-pil";
  test::TempDir d("ovl");
  ASSERT_TRUE(python(d.path(), R"(
r = d + '/raw/Dataset961_Ovl'
for f in ('imagesTr', 'labelsTr'): os.makedirs(r + '/' + f)
z, y, x = np.mgrid[0:4, 0:5, 0:6]
img = (x + 6 * y + 100 * z).astype(np.float32)            # (z, y, x)
seg = np.zeros((4, 5, 6), np.uint8)
seg[2, 1:3, 1:4] = 1; seg[1, 0, 0] = 2; seg[2, 4, 5] = 2; seg[2, 4, 4] = 2; seg[3, 0, 5] = 1
aff = np.eye(4)
nib.save(nib.Nifti1Image(img.transpose(2, 1, 0), aff), r + '/imagesTr/c1_0000.nii.gz')
nib.save(nib.Nifti1Image(seg.transpose(2, 1, 0), aff), r + '/labelsTr/c1.nii.gz')
json.dump({'channel_names': {'0': 'MR'}, 'labels': {'background': 0, 'a': 1, 'b': 2}, 'numTraining': 1,
           'file_ending': '.nii.gz'}, open(r + '/dataset.json', 'w'))
)"));
  const auto r = test::run_cli("medseg_plot_overlay_pngs", "-d 961 -o " + d / "out" + " --use_raw -np 1",
                               "MEDSEG_RAW=" + d / "raw");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // nnU-Net: slice 2 (label 1: 6 of 7 voxels; label 2: 2 of 3), then generate_overlay on it.
  EXPECT_TRUE(python(d.path(), R"(
z, y, x = np.mgrid[0:4, 0:5, 0:6]
img = (x + 6 * y + 100 * z).astype(np.float64)[2]
seg = np.zeros((4, 5, 6), np.uint8)
seg[2, 1:3, 1:4] = 1; seg[1, 0, 0] = 2; seg[2, 4, 5] = 2; seg[2, 4, 4] = 2; seg[3, 0, 5] = 1
seg = seg[2]
colors = {0: (0, 0, 0), 1: (0x43, 0x63, 0xd8), 2: (0xf5, 0x82, 0x31)}
im = np.tile(img[:, :, None], (1, 1, 3))
im = im - im.min(); im = im / im.max() * 255
for lb, c in colors.items(): im[seg == lb] += 0.6 * np.array(c)
want = (im / im.max() * 255).astype(np.uint8)
got = np.asarray(Image.open(d + '/out/c1.png').convert('RGB'))
assert got.shape == want.shape, (got.shape, want.shape)
assert (got == want).all(), np.argwhere(got != want)[:5]
)"));
}

TEST(PlotOverlayPngs, PreprocessedDataGivesOnePicturePerCase) {
  test::TempDir d("ovlpre");
  const std::string env = "MEDSEG_RAW=" + d / "raw" + " MEDSEG_PREPROCESSED=" + d / "pre";
  fs::create_directories(d / "raw");
  auto r = test::run_cli("medseg_make_dataset",
                         "-d 962 -n OvlPre --cases 3 --min-shape 10 16 16 --max-shape 12 18 18 --seed 2", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 962 -c 3d_fullres --np 1 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plot_overlay_pngs", "-d 962 -o " + d / "out" + " -np 2", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plans = read_json(d / "pre/Dataset962_OvlPre/nnUNetPlans.json");
  const std::string data =
      d / ("pre/Dataset962_OvlPre/" + plans["configurations"]["3d_fullres"]["data_identifier"].get<std::string>());
  int n = 0;
  for (const auto& e : fs::directory_iterator(data)) {
    const std::string f = e.path().filename().string();
    // Cases are CASE.npy beside CASE_seg.npy and CASE.json (docs/preprocessing.md).
    if (f.size() < 5 || f.substr(f.size() - 4) != ".npy" || f.find("_seg.npy") != std::string::npos) continue;
    const std::string id = f.substr(0, f.size() - 4);
    EXPECT_TRUE(fs::exists(d / ("out/" + id + ".png"))) << id;
    ++n;
  }
  EXPECT_EQ(n, 3);
  // A channel the data does not have, and a configuration that was not preprocessed, are one line each.
  r = test::run_cli("medseg_plot_overlay_pngs", "-d 962 -o " + d / "out2" + " -channel_idx 3", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("-channel_idx 3"), std::string::npos) << r.output;
  r = test::run_cli("medseg_plot_overlay_pngs", "-d 962 -o " + d / "out3" + " -c 2d", env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("medseg_preprocess"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "out2"));
  EXPECT_FALSE(fs::exists(d / "out3"));
}

// Issue 42: the pictures are CASE.png; written into a PNG dataset's labelsTr they replaced its labels.
TEST(PlotOverlayPngs, AnOutputInsideTheDatasetIsRefused) {
  test::TempDir d("ovl_over");
  const std::string env = "MEDSEG_RAW=" + d / "raw";
  auto r = test::run_cli("medseg_make_dataset",
                         "-o " + d / "raw" + " -d 963 --2d --file-ending .png --cases 2 --test-cases 0", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string labels = d / "raw/Dataset963_Synthetic/labelsTr";
  const auto before = test::folder_snapshot(d.path());
  r = test::run_cli("medseg_plot_overlay_pngs", "-d 963 --use_raw -np 1 -o " + labels, env);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(labels + ": lies inside the dataset folder drawn"), std::string::npos) << r.output;
  EXPECT_EQ(test::folder_snapshot(d.path()), before);
}
