// End-to-end prediction on NIfTI files with tiny hand-built model folders: the written segmentation
// has exactly the input's grid (RAS, LAS, LPS, oblique; read back from disk), a network with
// constant logits labels exactly the nonzero box of the input, a fold ensemble averages the folds'
// logits, pipelined and inline runs agree, and a plain .nii.gz feeds a 1-channel model.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/json_io.h"
#include "inference/case_inputs.h"
#include "inference/model_folder.h"
#include "inference/predict_cases.h"
#include "inference/predictor.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::inference;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

// Zeros with a box [lo, hi) of values 1 + (z*7 + y*3 + x) % 5 (nonzero, so the crop box is the box).
Volume boxed_image(const std::array<int64_t, 3>& shape, const Geometry& g, const std::array<int64_t, 3>& lo,
                   const std::array<int64_t, 3>& hi) {
  Volume v(PixelType::Float32, shape, g);
  float* p = v.data<float>();
  for (int64_t z = lo[0]; z < hi[0]; ++z)
    for (int64_t y = lo[1]; y < hi[1]; ++y)
      for (int64_t x = lo[2]; x < hi[2]; ++x)
        p[(z * shape[1] + y) * shape[2] + x] = static_cast<float>(1 + (z * 7 + y * 3 + x) % 5);
  return v;
}

Geometry geometry_with(const std::array<double, 9>& direction) {
  Geometry g;
  g.spacing = {1.5, 1.2, 2.0};
  g.origin = {-12.5, 40.25, 7.0};
  g.direction = direction;
  return g;
}

std::array<double, 9> oblique() {
  // rotation of 30 degrees about z, then 20 degrees about x: orthonormal, no axis aligned.
  const double a = 30 * kPi / 180, b = 20 * kPi / 180;
  const double rz[9] = {std::cos(a), -std::sin(a), 0, std::sin(a), std::cos(a), 0, 0, 0, 1};
  const double rx[9] = {1, 0, 0, 0, std::cos(b), -std::sin(b), 0, std::sin(b), std::cos(b)};
  std::array<double, 9> m{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) m[i * 3 + j] += rx[i * 3 + k] * rz[k * 3 + j];
  return m;
}

PredictorOptions cpu_options() {
  PredictorOptions o;
  o.torch_threads = 2;
  return o;
}

RunOptions run_options(const std::string& out, int npp = 0, int nps = 0) {
  RunOptions r;
  r.output_folder = out;
  r.npp = npp;
  r.nps = nps;
  r.progress = false;
  return r;
}

RunSummary predict_folder(const std::string& model, const std::string& in, const std::string& out,
                          const std::vector<std::string>& folds = {}, RunOptions ro = {}, bool probs = false,
                          const PredictorOptions& po = cpu_options()) {
  Predictor p(load_model_folder(model, folds), po);
  if (ro.output_folder.empty()) ro = run_options(out);
  ro.save_probabilities = probs;
  return predict_cases(p, collect_case_inputs({in}, ".nii.gz", static_cast<int>(p.model().in_channels)), ro);
}

}  // namespace

TEST(InferencePredict, OutputHasTheInputGeometryAndLabelsTheNonzeroBox) {
  test::TempDir d("pred");
  const std::vector<std::pair<std::string, std::array<double, 9>>> dirs = {{"lps", {1, 0, 0, 0, 1, 0, 0, 0, 1}},
                                                                           {"ras", {-1, 0, 0, 0, -1, 0, 0, 0, 1}},
                                                                           {"las", {1, 0, 0, 0, -1, 0, 0, 0, 1}},
                                                                           {"obl", oblique()}};
  const std::array<int64_t, 3> shape{18, 21, 23}, lo{2, 3, 4}, hi{15, 19, 20};
  fs::create_directories(d / "in");
  for (const auto& [name, dir] : dirs)
    io::write_image(d / ("in/" + name + "_0000.nii.gz"), boxed_image(shape, geometry_with(dir), lo, hi));

  // Configuration spacing differs from the images' (z, y, x) = (2, 1.2, 1.5) so the logits are
  // resampled both ways; the transpose puts x first. Constant logits (0, 5): label 1 wherever the
  // crop box is, i.e. exactly the nonzero box.
  test::TinyModelSpec s;
  s.spacing = {1.3, 1.7, 1.1};
  s.transpose_forward = {2, 0, 1};
  auto net = test::tiny_network(s, 3);
  test::make_constant(net, {0.0f, 5.0f});
  test::write_model_folder(d / "model", s, net, {"0"});
  const RunSummary r = predict_folder(d / "model", d / "in", d / "out");
  ASSERT_TRUE(r.failed.empty()) << r.failed[0].second;
  ASSERT_EQ(r.written, 4);

  for (const auto& [name, dir] : dirs) {
    SCOPED_TRACE(name);
    const Volume in = io::read_image(d / ("in/" + name + "_0000.nii.gz"));
    const Volume out = io::read_image(d / ("out/" + name + ".nii.gz"));
    ASSERT_EQ(out.shape(), in.shape());
    EXPECT_EQ(out.pixel_type(), PixelType::UInt8);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(out.geometry().spacing[i], in.geometry().spacing[i], 1e-6);
      EXPECT_NEAR(out.geometry().origin[i], in.geometry().origin[i], 1e-5);
    }
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(out.geometry().direction[i], dir[i], 1e-6);
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(out.geometry().direction[i], in.geometry().direction[i], 1e-7);
    int64_t wrong = 0;
    for (int64_t z = 0; z < shape[0]; ++z)
      for (int64_t y = 0; y < shape[1]; ++y)
        for (int64_t x = 0; x < shape[2]; ++x) {
          const bool inside = z >= lo[0] && z < hi[0] && y >= lo[1] && y < hi[1] && x >= lo[2] && x < hi[2];
          wrong += out.at(z, y, x) != (inside ? 1 : 0);
        }
    EXPECT_EQ(wrong, 0);
  }
}

// Two folds with different weights. nnU-Net ensembles folds by averaging their logits
// (nnUNetPredictor.predict_logits_from_preprocessed_data: sum over the folds' parameters, divided by
// their count), then applies softmax. So: (1) the ensemble's logits are the mean of the folds'
// logits, each fold predicted alone; (2) in the files, softmax of the mean logits is the normalized
// geometric mean of the folds' probabilities, p = sqrt(p0 * p1) / sum_k sqrt(p0_k * p1_k), checked
// on each single-fold run's _probabilities.npy; (3) the segmentation is that p's argmax.
TEST(InferencePredict, TwoFoldEnsembleAveragesTheFoldsLogits) {
  test::TempDir d("pred");
  fs::create_directories(d / "in");
  Geometry g;
  g.spacing = {1.0, 1.0, 1.0};
  const std::array<int64_t, 3> shape{20, 22, 19};
  io::write_image(d / "in/a_0000.nii.gz", boxed_image(shape, g, {1, 1, 1}, {19, 21, 18}));
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto net0 = test::tiny_network(s, 5), net1 = test::tiny_network(s, 6);
  test::write_model_folder(d / "model", s, net0, {"0"});
  test::write_model_folder(d / "model", s, net1, {"1"});

  PredictorOptions po = cpu_options();
  po.mirroring = false;  // averaging is linear either way; eight times fewer forward passes
  {
    // nnU-Net's fp16 ensemble (the default): each fold's fp16 logits, summed and halved in fp16.
    Predictor h0(load_model_folder(d / "model", {"0"}), po), h1(load_model_folder(d / "model", {"1"}), po);
    Predictor h01(load_model_folder(d / "model", {"0", "1"}), po);
    const auto c = h0.preprocess(io::load_case({"a", {d / "in/a_0000.nii.gz"}, ""}));
    const at::Tensor a = h0.predict_logits(c.arrays), b = h1.predict_logits(c.arrays);
    EXPECT_TRUE(at::equal(h01.predict_logits(c.arrays), ((a.to(at::kHalf) + b.to(at::kHalf)) / 2).to(at::kFloat)));
  }
  po.half_accumulators = false;  // below: exact sums, so that the averages hold to float precision
  Predictor p0(load_model_folder(d / "model", {"0"}), po);
  Predictor p1(load_model_folder(d / "model", {"1"}), po);
  Predictor both(load_model_folder(d / "model", {"0", "1"}), po);
  auto c = p0.preprocess(io::load_case({"a", {d / "in/a_0000.nii.gz"}, ""}));
  const at::Tensor l0 = p0.predict_logits(c.arrays), l1 = p1.predict_logits(c.arrays),
                   l01 = both.predict_logits(c.arrays);
  ASSERT_EQ(l01.sizes(), l0.sizes());
  const auto max_abs = [](const at::Tensor& t) { return t.abs().max().item<float>(); };
  // The folds differ (else any of them, or their sum halved, would pass), and neither is the mean.
  ASSERT_GT(max_abs(l0 - l1), 0.05f);
  EXPECT_LT(max_abs(l01 - (l0 + l1) / 2), 1e-5f * std::max(1.0f, max_abs(l0) + max_abs(l1)));
  EXPECT_GT(max_abs(l01 - l0), 0.02f);
  EXPECT_GT(max_abs(l01 - l1), 0.02f);

  for (const char* f : {"0", "1"})
    ASSERT_TRUE(predict_folder(d / "model", d / "in", d / (std::string("o") + f), {f}, {}, true, po).failed.empty());
  ASSERT_TRUE(predict_folder(d / "model", d / "in", d / "o01", {"0", "1"}, {}, true, po).failed.empty());
  const auto probabilities = [&](const std::string& run) {
    const std::string path = d / (run + "/a_probabilities.npy");
    const std::string bytes = test::read_text(path);
    const auto h = preprocessing::parse_npy_header(bytes.data(), bytes.size(), path);
    EXPECT_EQ(h.descr, "<f4");
    EXPECT_EQ(h.shape, (std::vector<int64_t>{3, shape[0], shape[1], shape[2]}));
    EXPECT_EQ(bytes.size(), h.data_offset + static_cast<std::size_t>(h.numel()) * 4);
    return at::from_blob(const_cast<char*>(bytes.data() + h.data_offset), {h.numel()}, at::kFloat)
        .clone()
        .view(h.shape);
  };
  const at::Tensor q0 = probabilities("o0").to(at::kDouble), q1 = probabilities("o1").to(at::kDouble);
  const at::Tensor q01 = probabilities("o01").to(at::kDouble);
  const at::Tensor geometric = (q0 * q1).sqrt();
  const at::Tensor expected = geometric / geometric.sum(0, /*keepdim=*/true);
  EXPECT_LT((q01 - expected).abs().max().item<double>(), 2e-5);
  EXPECT_GT((q01 - q0).abs().max().item<double>(), 1e-3);  // not vacuous
  EXPECT_GT((q01 - q1).abs().max().item<double>(), 1e-3);
  const Volume seg = io::read_image(d / "o01/a.nii.gz");
  ASSERT_EQ(seg.pixel_type(), PixelType::UInt8);
  ASSERT_EQ(seg.nbytes(), static_cast<std::size_t>(expected[0].numel()));
  const at::Tensor labels = at::from_blob(const_cast<void*>(seg.raw()), expected[0].sizes(), at::kByte).to(at::kLong);
  // Voxels whose two best classes are within rounding of each other could go either way.
  const auto top2 = expected.topk(2, 0);
  const at::Tensor clear = (std::get<0>(top2)[0] - std::get<0>(top2)[1]).gt(1e-4);
  EXPECT_EQ(labels.ne(expected.argmax(0)).logical_and(clear).sum().item<int64_t>(), 0);
}

TEST(InferencePredict, PipelinedRunEqualsInlineRun) {
  test::TempDir d("pred");
  fs::create_directories(d / "in");
  Geometry g;
  for (int k = 0; k < 3; ++k)
    io::write_image(d / ("in/c" + std::to_string(k) + "_0000.nii.gz"),
                    boxed_image({16 + k, 18, 17}, g, {1, 2, 1}, {15 + k, 17, 16}));
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 7);
  test::write_model_folder(d / "model", s, net, {"0"});
  ASSERT_EQ(predict_folder(d / "model", d / "in", d / "inline", {}, run_options(d / "inline", 0, 0), true).written, 3);
  ASSERT_EQ(predict_folder(d / "model", d / "in", d / "piped", {}, run_options(d / "piped", 2, 2), true).written, 3);
  for (int k = 0; k < 3; ++k) {
    const std::string id = "c" + std::to_string(k);
    const Volume a = io::read_image(d / ("inline/" + id + ".nii.gz")),
                 b = io::read_image(d / ("piped/" + id + ".nii.gz"));
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << id;
    EXPECT_EQ(read_file(d / ("inline/" + id + "_probabilities.npy")),
              read_file(d / ("piped/" + id + "_probabilities.npy")));
    EXPECT_TRUE(fs::exists(d / ("piped/" + id + "_probabilities.json")));
  }
}

TEST(InferencePredict, PlainFileFeedsASingleChannelModel) {
  test::TempDir d("pred");
  fs::create_directories(d / "in");
  Geometry g;
  io::write_image(d / "in/plain.nii.gz", boxed_image({17, 17, 17}, g, {2, 2, 2}, {15, 15, 15}));
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 9);
  test::write_model_folder(d / "model", s, net, {"0"});
  EXPECT_EQ(predict_folder(d / "model", d / "in", d / "out").written, 1);
  EXPECT_TRUE(fs::exists(d / "out/plain.nii.gz"));
  // The file itself as input, too.
  EXPECT_EQ(predict_folder(d / "model", d / "in/plain.nii.gz", d / "out2").written, 1);
  EXPECT_TRUE(fs::exists(d / "out2/plain.nii.gz"));
}
