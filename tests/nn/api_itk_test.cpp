// The embedding API (docs/api.md): api::Segmenter on an in-memory image writes the segmentation and
// probabilities medseg_predict writes for the same image file, byte for byte, in the file's geometry;
// its progress callback rises to 1 and cancels with medseg::Cancelled (the Segmenter stays usable);
// a wrong channel count or grid is one Error. api::train_fold reports every epoch, stops when the
// callback says so (checkpoint_latest, no final checkpoint), and resumes to the end.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "api/segmenter.h"
#include "api/train.h"
#include "core/json_io.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

std::string tiny_model(const test::TempDir& d, int channels = 1) {
  test::TinyModelSpec s;
  s.channels = channels;
  s.labels = {"background", "a", "b"};
  auto net = test::tiny_network(s, 31);
  const std::string folder = d / ("model" + std::to_string(channels));
  test::write_model_folder(folder, s, net, {"0"});
  return folder;
}

Volume image_with_geometry() {
  const Volume w = test::wavy_image({30, 26, 21}, 5);
  Geometry g;
  g.spacing = {0.9, 1.1, 1.3};
  g.origin = {-12.5, 4.0, 30.25};
  return Volume::from_float(w.shape(), g, std::vector<float>(w.data<float>(), w.data<float>() + w.numel()));
}

}  // namespace

TEST(Api, SegmenterWritesWhatMedsegPredictWrites) {
  test::TempDir d("api_seg");
  const std::string model = tiny_model(d);
  fs::create_directories(d / "in");
  io::write_image(d / "in/img_0000.nii.gz", image_with_geometry());
  const auto r = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "out") + " -m " + model +
                                                     " -npp 0 -nps 0 --disable_progress_bar --save_probabilities");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume expected = io::read_image(d / "out/img.nii.gz");
  std::vector<int64_t> shape;
  const std::vector<float> expected_probs = preprocessing::read_npy_float32(d / "out/img_probabilities.npy", shape);

  api::Segmenter seg(model);
  EXPECT_EQ(seg.channels(), 1);
  EXPECT_EQ(seg.configuration(), "3d_fullres");
  // The image as the file holds it (the NIfTI round trip decides the geometry's last bits).
  const api::Segmentation s = seg.segment({io::read_image(d / "in/img_0000.nii.gz")}, {true, {}});
  ASSERT_EQ(s.labels.shape(), expected.shape());
  ASSERT_EQ(s.labels.pixel_type(), PixelType::UInt8);
  EXPECT_TRUE(
      std::equal(s.labels.data<uint8_t>(), s.labels.data<uint8_t>() + s.labels.numel(), expected.data<uint8_t>()));
  EXPECT_EQ(s.labels.geometry().spacing, expected.geometry().spacing);
  EXPECT_EQ(s.labels.geometry().origin, expected.geometry().origin);
  EXPECT_EQ(s.probabilities, expected_probs);
  EXPECT_EQ(s.classes, (std::vector<int>{0, 1, 2}));
  int64_t labelled = 0;
  for (int64_t i = 0; i < s.labels.numel(); ++i) labelled += s.labels.data<uint8_t>()[i] != 0;
  EXPECT_GT(labelled, 0);
}

TEST(Api, ProgressRisesToOneAndCancelStopsAndBadImagesAreOneError) {
  test::TempDir d("api_progress");
  api::SegmenterOptions o;
  o.mirroring = false;
  api::Segmenter seg(tiny_model(d), o);
  const Volume img = image_with_geometry();
  std::vector<double> seen;
  const api::Segmentation first = seg.segment({img}, {false, [&](double f) {
                                                        seen.push_back(f);
                                                        return true;
                                                      }});
  ASSERT_GE(seen.size(), 2u);  // 30 x 26 x 21 at 16^3, step 8: 3 x 3 x 2 tiles
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  EXPECT_GT(seen.front(), 0.0);

  int calls = 0;
  EXPECT_THROW(seg.segment({img}, {false, [&](double) { return ++calls < 2; }}), Cancelled);
  EXPECT_EQ(calls, 2);
  const api::Segmentation again = seg.segment({img});  // still usable, no callback left behind
  EXPECT_TRUE(std::equal(again.labels.data<uint8_t>(), again.labels.data<uint8_t>() + again.labels.numel(),
                         first.labels.data<uint8_t>()));

  try {
    seg.segment({img, img});
    FAIL() << "two channels for a one-channel model";
  } catch (const Error& e) { EXPECT_STREQ(e.what(), "the image has 2 channel(s), the model expects 1"); }
  api::Segmenter two(tiny_model(d, 2), o);
  Geometry other = img.geometry();
  other.spacing = {2.0, 1.1, 1.3};
  const Volume shifted = Volume::from_float(img.shape(), other, img.to_float());
  try {
    two.segment({img, shifted});
    FAIL() << "channels on two grids";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channel 1 does not share the grid of channel 0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(api::Segmenter(d / "no_such_model"), Error);
}

TEST(Api, TrainFoldReportsEveryEpochStopsWhenAskedAndResumes) {
  test::TempDir dir("api_train");
  const std::string d = dir.path();
  const std::string env = "MEDSEG_RAW=" + d + "/raw MEDSEG_PREPROCESSED=" + d + "/pre MEDSEG_RESULTS=" + d + "/results";
  auto r = test::run_cli("medseg_make_dataset",
                         "-d 961 -n Api --cases 5 --min-shape 12 20 20 --max-shape 14 22 22 --seed 3", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_cli("medseg_plan_and_preprocess", "-d 961 -c 3d_fullres --np 2 --no_pbar", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  api::TrainFoldOptions o;
  o.preprocessed = d + "/pre";
  o.results = d + "/results";
  o.epochs = 3;
  o.iterations_per_epoch = 2;
  o.val_iterations_per_epoch = 1;
  o.threads = 2;
  std::vector<api::EpochReport> reports;
  o.on_epoch = [&](const api::EpochReport& e) {
    reports.push_back(e);
    return false;  // stop after the first epoch
  };
  EXPECT_EQ(api::train_fold("961", "3d_fullres", "0", o), api::TrainResult::Stopped);
  const std::string fold = d + "/results/Dataset961_Api/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0";
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].epoch, 0);
  EXPECT_EQ(reports[0].epochs, 3);
  EXPECT_DOUBLE_EQ(reports[0].learning_rate, 0.01);  // poly: 0.01 * (1 - 0/3)^0.9
  EXPECT_TRUE(std::isfinite(reports[0].train_loss));
  EXPECT_TRUE(fs::exists(fold + "/checkpoint_latest.ckpt"));
  EXPECT_FALSE(fs::exists(fold + "/checkpoint_final.ckpt"));

  o.resume = true;
  o.on_epoch = [&](const api::EpochReport& e) {
    reports.push_back(e);
    return true;
  };
  EXPECT_EQ(api::train_fold("961", "3d_fullres", "0", o), api::TrainResult::Finished);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[1].epoch, 1);
  EXPECT_EQ(reports[2].epoch, 2);
  EXPECT_TRUE(fs::exists(fold + "/checkpoint_final.ckpt"));
  std::ifstream metrics(fold + "/metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) lines += line.empty() ? 0 : 1;
  EXPECT_EQ(lines, 3);

  o.epochs = 0;
  try {
    api::train_fold("961", "3d_fullres", "1", o);
    FAIL() << "zero epochs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TrainFoldOptions::epochs"), std::string::npos) << e.what();
  }
}
