// medseg_predict on a case predicted in slabs (docs/predict.md, "Large volumes"): forced with --slabs
// always, or chosen by itself when the memory free (MEDSEG_MEMORY_LIMIT_GIB) cannot hold the whole
// logits, it writes the same segmentation and probabilities as a whole-image prediction, byte for
// byte, and says so in the log. A bad --slabs value is one line naming the flag.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "inference_test_util.h"
#include "io/image_io.h"
#include "preprocessing/npy.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

struct Outputs {
  std::vector<uint8_t> seg;
  std::vector<float> probabilities;
  std::string log;
};

Outputs predict(const std::string& model, const std::string& in, const std::string& out, const std::string& flags,
                const std::string& env = "") {
  const auto r = test::run_cli("medseg_predict",
                               "-i " + in + " -o " + out + " -m " + model +
                                   " -npp 0 -nps 0 --disable_tta --disable_progress_bar --save_probabilities " + flags,
                               env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Outputs o;
  o.log = r.output;
  if (r.exit_code != 0) return o;
  const Volume seg = io::read_image(out + "/long.nii.gz");
  o.seg.assign(seg.data<uint8_t>(), seg.data<uint8_t>() + seg.numel());
  std::vector<int64_t> shape;
  o.probabilities = preprocessing::read_npy_float32(out + "/long_probabilities.npy", shape);
  return o;
}

}  // namespace

TEST(PredictSlabs, SlabsWriteTheWholePredictionsBytesAndSayWhy) {
  test::TempDir d("pslabs");
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto net = test::tiny_network(s, 21);
  const std::string model = d / "model";
  test::write_model_folder(model, s, net, {"0"});
  const std::string in = d / "in";
  fs::create_directories(in);
  Volume image = test::wavy_image({120, 30, 26}, 3);  // long along z: 15 tile positions
  Geometry g;
  g.spacing = {0.9, 1.1, 1.2};  // resampled to the plans' 1 mm and back
  image = Volume::from_float(image.shape(), g,
                             std::vector<float>(image.data<float>(), image.data<float>() + image.numel()));
  io::write_image(in + "/long_0000.nii.gz", image);

  const Outputs whole = predict(model, in, d / "whole", "--slabs never");
  const Outputs slabs = predict(model, in, d / "slabs", "--slabs always --not_on_device");
  EXPECT_NE(slabs.log.find("--slabs always; in slabs in host memory"), std::string::npos) << slabs.log;
  ASSERT_FALSE(whole.seg.empty());
  EXPECT_EQ(slabs.seg, whole.seg);
  EXPECT_EQ(slabs.probabilities, whole.probabilities);
  int64_t labelled = 0;
  for (uint8_t v : whole.seg) labelled += v != 0;
  EXPECT_GT(labelled, 0) << "a segmentation of background only would prove little";

  // 4 MiB "free": the whole logits (about 5 MiB with the export) do not fit, one slab does.
  const Outputs chosen = predict(model, in, d / "auto", "", "MEDSEG_MEMORY_LIMIT_GIB=0.004");
  EXPECT_NE(chosen.log.find("whole logits would need"), std::string::npos) << chosen.log;
  EXPECT_NE(chosen.log.find("in slabs in host memory"), std::string::npos) << chosen.log;
  EXPECT_EQ(chosen.seg, whole.seg);

  const auto bad =
      test::run_cli("medseg_predict", "-i " + in + " -o " + (d / "bad") + " -m " + model + " --slabs sometimes");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--slabs: 'sometimes' is not auto, always or never"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(d / "bad/long.nii.gz"));
  const auto acc =
      test::run_cli("medseg_predict", "-i " + in + " -o " + (d / "bad") + " -m " + model + " --accumulators fp8");
  EXPECT_NE(acc.exit_code, 0);
  EXPECT_NE(acc.output.find("--accumulators"), std::string::npos) << acc.output;
  EXPECT_NE(acc.output.find("fp8"), std::string::npos) << acc.output;
  EXPECT_FALSE(fs::exists(d / "bad/long.nii.gz"));
}
