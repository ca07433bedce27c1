// The whole 2d pipeline through the CLIs, as a user runs it: synthetic raw dataset (thick slices,
// oblique directions) -> fingerprint + plans + preprocessed `2d` -> train fold 0 (1 epoch, 2
// iterations, CPU, --npz) -> medseg_predict on a test case with TTA. The prediction must sit on the
// input's exact grid with label values from dataset.json; --npz must leave, per validation case,
// probabilities on the original grid that sum to 1 and whose argmax is the exported segmentation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <cairo.h>

#include "core/json_io.h"
#include "io/image_io.h"
#include "visualization/overlay.h"
#include "preprocessing/npy.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

constexpr const char* kDataset = "Dataset951_Tiny2d";

// One scratch root for raw, preprocessed and results. Everything runs in one test: ctest starts
// each test in its own process, and the pipeline is the expensive part.
struct Roots {
  test::TempDir dir{"e2e2d"};
  std::string env() const {
    const std::string& d = dir.path();
    return "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  }
  std::string raw() const { return dir.path() + "/raw/" + kDataset; }
  std::string model() const { return dir.path() + "/results/" + kDataset + "/nnUNetTrainer__nnUNetPlans__2d"; }
  // Label values of the raw dataset.json, sorted: network output k is the k-th value (plain labels).
  std::vector<int> label_values() const {
    const json ds = read_json(raw() + "/dataset.json");
    std::vector<int> v;
    for (const auto& item : ds.at("labels").items()) v.push_back(item.value().get<int>());
    std::sort(v.begin(), v.end());
    return v;
  }
};

// Voxel values of any integer volume.
std::vector<int> int_values(const Volume& v) {
  std::vector<int> out(static_cast<std::size_t>(v.numel()));
  const auto f = v.to_float();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(std::lround(f[i]));
  return out;
}

// The NIfTI header stores geometry as float32: 1e-6 is below anything a real mismatch would give.
void expect_same_grid(const Volume& a, const Volume& b, const std::string& what) {
  EXPECT_EQ(a.shape(), b.shape()) << what;
  const Geometry &ga = a.geometry(), &gb = b.geometry();
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(ga.spacing[i], gb.spacing[i], 1e-6) << what << " spacing " << i;
    EXPECT_NEAR(ga.origin[i], gb.origin[i], 1e-6) << what << " origin " << i;
  }
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(ga.direction[i], gb.direction[i], 1e-6) << what << " direction " << i;
}

// medseg_predict with TTA (the default) on the one test case: the input's grid, dataset.json labels.
void check_prediction(const Roots& r) {
  std::vector<std::string> inputs;
  for (const auto& e : fs::directory_iterator(r.raw() + "/imagesTs")) inputs.push_back(e.path().filename().string());
  ASSERT_EQ(inputs.size(), 1u);
  const std::string file = inputs[0];
  ASSERT_EQ(file.substr(file.size() - 12), "_0000.nii.gz");
  const std::string id = file.substr(0, file.size() - 12);
  const std::string out = r.dir.path() + "/pred";
  const auto res = test::run_cli(
      "medseg_predict",
      "-i " + r.raw() + "/imagesTs -o " + out + " -d 951 -c 2d -f 0 --threads 2 -npp 0 -nps 0 --disable_progress_bar",
      r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const Volume image = io::read_image(r.raw() + "/imagesTs/" + file);
  const Volume seg = io::read_image(out + "/" + id + ".nii.gz");
  expect_same_grid(seg, image, "prediction vs input");
  EXPECT_EQ(seg.geometry().file_dimension, image.geometry().file_dimension) << "a 2D input gives a 2D prediction";
  const auto labels = r.label_values();
  const std::set<int> allowed(labels.begin(), labels.end());
  for (int v : int_values(seg)) ASSERT_TRUE(allowed.count(v)) << "label value " << v << " is not in dataset.json";
}

// The final validation's overlays/CASE.png of every validation case, with the reference row: as
// tall as the two-row layout of the case's grid, not the one-row one.
void check_overlays(const Roots& r, const std::vector<std::string>& val, const std::string& folder) {
  for (const auto& id : val) {
    SCOPED_TRACE(id);
    const Volume image = io::read_image(r.raw() + "/imagesTr/" + id + "_0000.nii.gz");
    cairo_surface_t* png = cairo_image_surface_create_from_png((folder + "/overlays/" + id + ".png").c_str());
    EXPECT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
    const int two_rows = visualization::overlay_layout(image.shape(), image.geometry(), true, 0).height;
    EXPECT_GT(two_rows, visualization::overlay_layout(image.shape(), image.geometry(), false, 0).height);
    EXPECT_EQ(cairo_image_surface_get_height(png), two_rows);
    cairo_surface_destroy(png);
  }
}

// CASE_probabilities.npy/.json of every validation case in `folder`: shape (K, Z, Y, X) of the
// original image, a distribution per voxel, argmax = the exported segmentation's label index.
void check_probabilities(const Roots& r, const std::vector<std::string>& val, const std::string& folder) {
  const auto labels = r.label_values();
  const auto K = static_cast<int64_t>(labels.size());
  for (const auto& id : val) {
    SCOPED_TRACE(id);
    const std::string base = folder + "/" + id;
    ASSERT_TRUE(fs::exists(base + "_probabilities.npy"));
    ASSERT_TRUE(fs::exists(base + "_probabilities.json"));
    const Volume image = io::read_image(r.raw() + "/imagesTr/" + id + "_0000.nii.gz");
    const Volume seg = io::read_image(base + ".nii.gz");
    expect_same_grid(seg, image, "validation segmentation vs image");
    EXPECT_EQ(seg.geometry().file_dimension, image.geometry().file_dimension);
    const std::string bytes = test::read_text(base + "_probabilities.npy");
    const auto h = preprocessing::parse_npy_header(bytes.data(), bytes.size(), base + "_probabilities.npy");
    const auto& s = image.shape();
    ASSERT_EQ(h.descr, "<f4");
    ASSERT_EQ(h.shape, (std::vector<int64_t>{K, s[0], s[1], s[2]}));
    ASSERT_EQ(bytes.size(), h.data_offset + static_cast<std::size_t>(h.numel()) * 4);
    const auto* p = reinterpret_cast<const float*>(bytes.data() + h.data_offset);
    const int64_t n = image.numel();
    const auto seg_values = int_values(seg);
    for (int64_t v = 0; v < n; ++v) {
      double sum = 0;
      int64_t best = 0;
      for (int64_t k = 0; k < K; ++k) {
        ASSERT_GE(p[k * n + v], 0.0f);
        sum += p[k * n + v];
        if (p[k * n + v] > p[best * n + v]) best = k;  // first maximum, as numpy's argmax
      }
      ASSERT_NEAR(sum, 1.0, 1e-5) << "voxel " << v;
      const int label = seg_values[static_cast<std::size_t>(v)];
      const auto it = std::find(labels.begin(), labels.end(), label);
      ASSERT_NE(it, labels.end()) << label;
      const int64_t k_seg = it - labels.begin();
      // The segmentation is the argmax of the logits; softmax keeps the order, but two logits a few
      // ulp apart can round to one probability: then both must be that maximum.
      if (k_seg != best) { ASSERT_EQ(p[k_seg * n + v], p[best * n + v]) << "voxel " << v; }
    }
    const json meta = read_json(base + "_probabilities.json");
    EXPECT_EQ(meta.at("shape"), json(h.shape));
    EXPECT_EQ(meta.at("class_values"), json(labels));
  }
}

// medseg_make_dataset (6 cases, 1 test case; `geometry` picks shapes and spacing) -> plan and
// preprocess 2d -> train fold 0 for 1 epoch of 2 iterations with --npz. Fold 0 of nnU-Net's 5-fold
// split of 6 cases validates on 2: returned in `val`.
void make_plan_train(const Roots& r, const std::string& geometry, const json& transpose_forward,
                     std::vector<std::string>* val, json* plans_out) {
  fs::create_directories(r.dir.path() + "/raw");
  auto res = test::run_cli(
      "medseg_make_dataset",
      "-d 951 -n Tiny2d --cases 6 --test-cases 1 " + geometry + " --spacing-jitter 0.05 --random-direction --seed 5",
      r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  res = test::run_cli("medseg_plan_and_preprocess", "-d 951 -c 2d --np 2 --no_pbar", r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  const json plans = read_json(r.dir.path() + "/pre/" + kDataset + "/nnUNetPlans.json");
  ASSERT_TRUE(plans.at("configurations").contains("2d"));
  EXPECT_EQ(plans["configurations"]["2d"].at("patch_size").size(), 2u);
  // nnU-Net puts the axis with the largest spacing first, the other two in order after it.
  EXPECT_EQ(plans.at("transpose_forward"), transpose_forward);
  *plans_out = plans;

  res = test::run_cli("medseg_train",
                      "951 2d 0 --epochs 1 --iters-per-epoch 2 --val-iters-per-epoch 1 "
                      "--num-workers 1 --threads 2 --npz --no_pbar",
                      r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  ASSERT_TRUE(fs::exists(r.model() + "/fold_0/checkpoint_final.ckpt")) << res.output;
  EXPECT_TRUE(fs::exists(r.model() + "/fold_0/validation/summary.json"));
  const json splits = read_json(r.dir.path() + "/pre/" + kDataset + "/splits_final.json");
  *val = splits.at(0).at("val").get<std::vector<std::string>>();
  ASSERT_EQ(val->size(), 2u);
}

}  // namespace

// Thick slices (0.8 x 0.8 x 4 mm, x y z): z, array axis 0, is the slice axis. Oblique directions
// and spacing jitter make the geometry checks meaningful.
TEST(EndToEnd2d, TrainWithNpzPredictWithTtaAndValidateAgain) {
  Roots r;
  std::vector<std::string> val;
  json plans;
  make_plan_train(r, "--min-shape 8 18 18 --max-shape 9 20 20 --spacing 0.8 0.8 4", json({0, 1, 2}), &val, &plans);
  if (HasFatalFailure()) return;
  const std::string vdir = r.model() + "/fold_0/validation";
  {
    SCOPED_TRACE("training with --npz");
    check_probabilities(r, val, vdir);
    check_overlays(r, val, vdir);
  }
  {
    SCOPED_TRACE("medseg_predict");
    check_prediction(r);
  }

  // --val on the finished fold: without --npz no probabilities, with --npz the same files again.
  fs::remove_all(vdir);
  auto res = test::run_cli("medseg_train", "951 2d 0 --val --threads 2 --no_pbar", r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  EXPECT_TRUE(fs::exists(vdir + "/" + val[0] + ".nii.gz"));
  EXPECT_FALSE(fs::exists(vdir + "/" + val[0] + "_probabilities.npy"));
  check_overlays(r, val, vdir);
  res = test::run_cli("medseg_train", "951 2d 0 --val --npz --threads 2 --no_pbar", r.env());
  ASSERT_EQ(res.exit_code, 0) << res.output;
  SCOPED_TRACE("--val --npz");
  check_probabilities(r, val, vdir);
  EXPECT_TRUE(fs::exists(vdir + "/summary.json"));
}

// Thick x (4 x 0.8 x 0.8 mm): transpose_forward [2, 0, 1] makes x the slice axis; prediction and
// probabilities must come back transposed onto the input grid.
TEST(EndToEnd2d, SliceAxisLastIsTransposedBack) {
  Roots r;
  std::vector<std::string> val;
  json plans;
  make_plan_train(r, "--min-shape 18 18 8 --max-shape 20 20 9 --spacing 4 0.8 0.8", json({2, 0, 1}), &val, &plans);
  if (HasFatalFailure()) return;
  {
    SCOPED_TRACE("training with --npz");
    check_probabilities(r, val, r.model() + "/fold_0/validation");
  }
  SCOPED_TRACE("medseg_predict");
  check_prediction(r);
}

// 2D NIfTI files (in-plane spacing 2 mm, so a z spacing of 1 would be the smallest): read as one
// slice with z spacing 999 x 2, the plans hold only `2d`, slicing along z; predictions and
// validation segmentations are 2D files on the input's grid.
TEST(EndToEnd2d, TwoDimensionalFilesGiveTwoDimensionalPredictions) {
  Roots r;
  std::vector<std::string> val;
  json plans;
  make_plan_train(r, "--2d --min-shape 1 20 20 --max-shape 1 24 24 --spacing 2 2 1", json({0, 1, 2}), &val, &plans);
  if (HasFatalFailure()) return;
  EXPECT_FALSE(plans.at("configurations").contains("3d_fullres")) << "a 2D dataset plans 2d only";
  const Volume image = io::read_image(r.raw() + "/imagesTr/" + val[0] + "_0000.nii.gz");
  EXPECT_EQ(image.geometry().file_dimension, 2);
  EXPECT_NEAR(image.geometry().spacing[2], 999 * image.geometry().spacing[0], 1e-2);
  {
    SCOPED_TRACE("training with --npz");
    check_probabilities(r, val, r.model() + "/fold_0/validation");
  }
  SCOPED_TRACE("medseg_predict");
  check_prediction(r);
}
