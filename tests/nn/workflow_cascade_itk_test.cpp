// nnU-Net's cascade end to end through the CLIs: a dataset the planner gives 3d_lowres and
// 3d_cascade_fullres (a small memory target), the low-resolution stage trained on two folds that
// cover every case, its final validation writing the next stage's inputs, the cascade trained on
// them, and medseg_predict chaining both stages (or taking the first stage's predictions).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/json_io.h"
#include "core/volume.h"
#include "io/image_io.h"
#include "preprocessing/case_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace medseg;

namespace {

class Cascade {
 public:
  Cascade() : dir_("wf_cascade_e2e") {
    auto r = test::run_cli("medseg_make_dataset",
                           "-d 955 -n Casc --cases 4 --test-cases 2 --min-shape 40 48 48 "
                           "--max-shape 40 48 48 --labels 2 --seed 3",
                           env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = test::run_cli("medseg_plan_and_preprocess",
                      "-d 955 -c 3d_lowres 3d_fullres --gpu_memory_target 0.02 --np 2 --no_pbar", env());
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  std::string env() const {
    return "MEDSEG_RAW=" + dir_ / "raw" + " MEDSEG_PREPROCESSED=" + dir_ / "pre" +
           " MEDSEG_RESULTS=" + dir_ / "results";
  }
  std::string raw() const { return dir_ / "raw/Dataset955_Casc"; }
  std::string pre() const { return dir_ / "pre/Dataset955_Casc"; }
  std::string model(const std::string& config) const {
    return dir_ / ("results/Dataset955_Casc/nnUNetTrainer__nnUNetPlans__" + config);
  }
  test::CmdResult train(const std::string& config, int fold) const {
    return test::run_cli("medseg_train",
                         "955 " + config + " " + std::to_string(fold) +
                             " --epochs 1 --iters-per-epoch 2 --val-iters-per-epoch 0 --num-workers 1 "
                             "--threads 1 --no_pbar",
                         env());
  }
  const test::TempDir& dir() const { return dir_; }

 private:
  test::TempDir dir_;
};

std::vector<int64_t> voxels(const Volume& v) {
  const std::vector<double> d = v.to_double();
  return std::vector<int64_t>(d.begin(), d.end());
}

}  // namespace

TEST(WorkflowCascade, LowresThenCascadeTrainAndPredictChained) {
  Cascade w;
  const json plans = read_json(w.pre() + "/nnUNetPlans.json");
  ASSERT_TRUE(plans["configurations"].contains("3d_cascade_fullres")) << plans["configurations"].dump(1);
  const auto ids = preprocessing::list_preprocessed_cases(w.pre() + "/nnUNetPlans_3d_fullres");
  ASSERT_EQ(ids.size(), 4u);
  // Two folds that hold out every case once.
  write_json(w.pre() + "/splits_final.json", json::array({{{"train", {ids[0], ids[1]}}, {"val", {ids[2], ids[3]}}},
                                                          {{"train", {ids[2], ids[3]}}, {"val", {ids[0], ids[1]}}}}));

  // The cascade cannot start before the low-resolution stage has predicted every case.
  auto r = w.train("3d_cascade_fullres", 0);
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("configuration '3d_cascade_fullres' is a cascade stage"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 missing"), std::string::npos) << r.output;

  for (int fold : {0, 1}) {
    r = w.train("3d_lowres", fold);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // Each case's next-stage input is its low-resolution prediction on the full-resolution grid. With
  // the full-resolution spacing equal to the original one, that grid is the original image's crop
  // box, so it holds exactly that box of the exported validation segmentation.
  for (const auto& id : ids) {
    const auto next = preprocessing::open_segmentation_file(w.model("3d_lowres") +
                                                            "/predicted_next_stage/3d_cascade_fullres/" + id + ".npy");
    const auto fullres = preprocessing::open_preprocessed_case(w.pre() + "/nnUNetPlans_3d_fullres", id);
    ASSERT_EQ(next.shape(), fullres.shape()) << id;
    const auto& props = fullres.properties();
    ASSERT_EQ(props.transpose_forward, (preprocessing::Perm3{0, 1, 2}));
    ASSERT_EQ(props.shape_after_cropping_and_before_resampling, next.shape()) << "spacing 1: no resampling";
    const int fold = (id == ids[2] || id == ids[3]) ? 0 : 1;
    const Volume exported =
        io::read_image(w.model("3d_lowres") + "/fold_" + std::to_string(fold) + "/validation/" + id + ".nii.gz");
    std::vector<int16_t> seg(static_cast<size_t>(next.shape()[0] * next.shape()[1] * next.shape()[2]));
    preprocessing::read_seg_patch(next, {{0, 0, 0}, next.shape()}, seg.data(), -1);
    const Shape3 lo = props.bbox_used_for_cropping.lo, s = next.shape();
    int64_t mismatches = 0, foreground = 0;
    for (int64_t z = 0; z < s[0]; ++z)
      for (int64_t y = 0; y < s[1]; ++y)
        for (int64_t x = 0; x < s[2]; ++x) {
          const int16_t v = seg[static_cast<size_t>((z * s[1] + y) * s[2] + x)];
          foreground += v != 0;
          mismatches += v != static_cast<int16_t>(exported.at(z + lo[0], y + lo[1], x + lo[2]));
        }
    EXPECT_EQ(mismatches, 0) << id;
    EXPECT_GT(foreground, 0) << id << ": the comparison needs some foreground";
  }

  r = w.train("3d_cascade_fullres", 0);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(w.model("3d_cascade_fullres") + "/fold_0/validation/summary.json"));

  // Chained: 3d_lowres predicts into OUT/3d_lowres/, then the cascade reads those predictions.
  const std::string out = w.dir() / "pred", out2 = w.dir() / "pred2";
  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTs -o " + out +
                        " -d 955 -c 3d_cascade_fullres --disable_tta --npp 0 --nps 0 --threads 1 "
                        "--disable_progress_bar",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_evaluate", w.raw() + "/labelsTs " + out + " --djfile " + w.raw() + "/dataset.json",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json summary = read_json(out + "/summary.json");
  EXPECT_EQ(summary.at("metric_per_case").size(), 2u);
  std::set<std::string> first_stage;
  for (const auto& e : fs::directory_iterator(out + "/3d_lowres"))
    if (e.path().filename().string().find(".nii.gz") != std::string::npos) first_stage.insert(e.path().filename());
  EXPECT_EQ(first_stage.size(), 2u);

  // The same cascade given the first stage's predictions explicitly writes the same segmentations.
  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTs -o " + out2 + " -m " + w.model("3d_cascade_fullres") +
                        " -prev_stage_predictions " + out +
                        "/3d_lowres --disable_tta --npp 0 "
                        "--nps 0 --threads 1 --disable_progress_bar",
                    w.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& f : first_stage)
    EXPECT_EQ(voxels(io::read_image(out2 + "/" + f)), voxels(io::read_image(out + "/" + f))) << f;

  // Previous-stage predictions for one of the two test cases only: that case fails with the missing
  // file named, the other is predicted.
  const std::string prev = w.dir() / "prev";
  fs::create_directories(prev);
  std::vector<std::string> tests;
  for (const auto& e : fs::directory_iterator(w.raw() + "/labelsTs")) tests.push_back(e.path().filename());
  std::sort(tests.begin(), tests.end());
  ASSERT_EQ(tests.size(), 2u);
  fs::copy_file(w.raw() + "/labelsTs/" + tests[0], prev + "/" + tests[0]);
  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTs -o " + w.dir() / "out3" + " -m " + w.model("3d_cascade_fullres") +
                        " -f 0 -prev_stage_predictions " + prev +
                        " --disable_tta --npp 0 --nps 0 --threads 1 --disable_progress_bar",
                    w.env());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(prev + "/" + tests[1] + " not found"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(w.dir() / ("out3/" + tests[0]))) << "the case with its input is predicted";
  // A previous-stage file with a value that is no label of the dataset: that case fails naming the file.
  Volume bad = io::read_image(w.raw() + "/labelsTs/" + tests[1]);
  bad.data<uint8_t>()[0] = 7;
  io::write_image(prev + "/" + tests[1], bad);
  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTs -o " + w.dir() / "out5" + " -m " + w.model("3d_cascade_fullres") +
                        " -f 0 -prev_stage_predictions " + prev +
                        " --disable_tta --npp 0 --nps 0 --threads 1 --disable_progress_bar",
                    w.env());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(prev + "/" + tests[1]), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("label value(s) 7"), std::string::npos) << r.output;
  // A plain model refuses the flag.
  r = test::run_cli("medseg_predict",
                    "-i " + w.raw() + "/imagesTs -o " + w.dir() / "out4" + " -m " + w.model("3d_lowres") +
                        " -prev_stage_predictions " + prev,
                    w.env());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("not a cascade stage"), std::string::npos) << r.output;
}
