// One case's sliding-window tiles shared among ranks (medseg_predict --nproc_per_node): against the
// single-process prediction of the same model, with mirroring TTA and a two-fold ensemble. The
// shards' slabs overlap, so the only difference allowed is the order of additions there (1e-6).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "inference/case_inputs.h"
#include "inference/model_folder.h"
#include "inference/predictor.h"
#include "inference/sliding_window.h"
#include "inference_test_util.h"
#include "io/case_loader.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "rank_threads.h"
#include "support/test_support.h"

using namespace medseg;
using test::wavy_image;
using namespace medseg::inference;
namespace fs = std::filesystem;

namespace {

// Two folds with different weights, two labels + background, 16^3 patch, mirroring on every axis.
std::string two_fold_model(const std::string& dir) {
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto n0 = test::tiny_network(s, 11), n1 = test::tiny_network(s, 12);
  test::write_model_folder(dir, s, n0, {"0"});
  test::write_model_folder(dir, s, n1, {"1"});
  return dir;
}

at::Tensor read_probabilities(const std::string& path) {
  const std::string bytes = test::read_text(path);
  const auto h = preprocessing::parse_npy_header(bytes.data(), bytes.size(), path);
  return at::from_blob(const_cast<char*>(bytes.data() + h.data_offset), {h.numel()}, at::kFloat).clone().view(h.shape);
}

}  // namespace

TEST(InferenceSharded, SlabsCoverTheTilePositionsOfTheLongestAxisOnce) {
  SlidingWindowOptions o;
  o.patch_size = {16, 16, 16};
  o.split_most_positions = true;  // as predict_sliding_window_sharded sets it
  const at::Tensor img = at::zeros({1, 20, 44, 19});
  const SlidingWindow w(img, 2, o);
  // y: 44 -> n = ceil(28/8)+1 = 5 positions {0,7,14,21,28}; z: 2, x: 2. Two shards: 2 + 3 positions.
  const auto a = w.slab(0, 2), b = w.slab(1, 2);
  EXPECT_EQ(a.axis, 1);
  EXPECT_EQ(a.begin, 0);
  EXPECT_EQ(a.end, 7 + 16);
  EXPECT_EQ(b.begin, 14);
  EXPECT_EQ(b.end, 44);
  // More shards than positions: some are empty, and the others still cover everything.
  int64_t covered_to = 0;
  for (int i = 0; i < 7; ++i) {
    const auto s = w.slab(i, 7);
    if (s.empty()) continue;
    EXPECT_LE(s.begin, covered_to);
    covered_to = std::max(covered_to, s.end);
  }
  EXPECT_EQ(covered_to, 44);
}

TEST(InferenceSharded, TwoRanksEqualOneProcessWithTtaAndTwoFolds) {
  test::TempDir d("sharded");
  const std::string model = two_fold_model(d / "model");
  io::write_image(d / "a_0000.nii.gz", wavy_image({44, 22, 19}, 0));
  PredictorOptions po;           // mirroring on (8 copies), torch threads left alone (two predictors at once)
  po.half_accumulators = false;  // the ranks' sums are fp32: compare with fp32 sums
  Predictor single(load_model_folder(model, {"0", "1"}), po);
  const auto c = single.preprocess(io::load_case({"a", {d / "a_0000.nii.gz"}, ""}));
  const at::Tensor expected = single.predict_logits(c.arrays);

  at::Tensor got;
  run_ranks(2, [&](distributed::ProcessGroup& g) {
    PredictorOptions rank_po = po;
    rank_po.group = std::shared_ptr<distributed::ProcessGroup>(&g, [](distributed::ProcessGroup*) {});
    Predictor p(load_model_folder(model, {"0", "1"}), rank_po);
    const at::Tensor l = p.predict_logits(c.arrays);
    EXPECT_EQ(l.defined(), g.rank() == 0);
    if (g.rank() == 0) got = l;
  });
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes(), expected.sizes());
  const double scale = expected.abs().max().item<double>();
  EXPECT_LT((got - expected).abs().max().item<double>(), 1e-6 * std::max(1.0, scale));
  EXPECT_TRUE(at::equal(got.argmax(0), expected.argmax(0)));
  EXPECT_LT((got.softmax(0) - expected.softmax(0)).abs().max().item<double>(), 1e-6);
}

TEST(InferenceSharded, NprocPerNodeWritesTheSingleProcessOutputs) {
  test::TempDir d("sharded_cli");
  const std::string model = two_fold_model(d / "model");
  fs::create_directories(d / "in");
  io::write_image(d / "in/a_0000.nii.gz", wavy_image({44, 22, 19}, 0));
  io::write_image(d / "in/c_0000.nii.gz", wavy_image({18, 17, 40}, 1));
  // A truncated file sorted first: every rank must skip it together and stay in step.
  {
    std::ofstream bad(d / "in/0broken_0000.nii.gz", std::ios::binary);
    bad << "\x1f\x8b\x08\x00";
  }
  // The ranks accumulate in fp32 (docs/predict.md): the single process too, to compare.
  const std::string common =
      " -m " + model + " -f 0 1 --save_probabilities --threads 1 --disable_progress_bar --accumulators fp32";
  auto one = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "one") + common + " -npp 0 -nps 0");
  ASSERT_EQ(one.exit_code, 1) << one.output;
  auto two = test::run_cli("medseg_predict",
                           "-i " + (d / "in") + " -o " + (d / "two") + common + " --nproc_per_node 2 -npp 1 -nps 1");
  ASSERT_EQ(two.exit_code, 1) << two.output;
  EXPECT_NE(two.output.find("2 case(s) written, 0 skipped, 1 failed"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("0broken"), std::string::npos) << two.output;
  for (const char* id : {"a", "c"}) {
    const Volume s1 = io::read_image(d / (std::string("one/") + id + ".nii.gz"));
    const Volume s2 = io::read_image(d / (std::string("two/") + id + ".nii.gz"));
    ASSERT_EQ(s1.shape(), s2.shape()) << id;
    EXPECT_EQ(s1.to_float(), s2.to_float()) << id;
    const at::Tensor p1 = read_probabilities(d / (std::string("one/") + id + "_probabilities.npy"));
    const at::Tensor p2 = read_probabilities(d / (std::string("two/") + id + "_probabilities.npy"));
    ASSERT_EQ(p1.sizes(), p2.sizes()) << id;
    EXPECT_LT((p1 - p2).abs().max().item<double>(), 1e-6) << id;
    EXPECT_GT((p1 - p1.mean(0, true)).abs().max().item<double>(), 1e-2) << id;  // not a constant network
  }
}
