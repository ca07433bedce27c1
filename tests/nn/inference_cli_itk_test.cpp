// medseg_predict as a user runs it: bad cases (missing or surplus channel file, unreadable volume,
// channels on different grids) are reported by name while the good case is still written and the
// exit code is non-zero; --continue_prediction leaves existing outputs alone; -d/-c finds the model
// under MEDSEG_RESULTS.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "core/json_io.h"
#include "inference_test_util.h"
#include "io/image_io.h"
#include "postprocessing/components.h"
#include "postprocessing/postprocessing.h"
#include "support/test_support.h"

using namespace medseg;
namespace fs = std::filesystem;

namespace {

Volume cli_blob(const Geometry& g, float base = 1.0f) {
  Volume v(PixelType::Float32, {17, 18, 16}, g);
  float* p = v.data<float>();
  for (int64_t i = 0; i < v.numel(); ++i) p[i] = base + static_cast<float>((i * 7) % 11);
  return v;
}

// A 2-channel model under RESULTS/Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres.
std::string two_channel_model(const test::TempDir& d) {
  test::TinyModelSpec s;
  s.channels = 2;
  auto net = test::tiny_network(s, 11);
  const std::string folder = d / "results/Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
  test::write_model_folder(folder, s, net, {"0"});
  return folder;
}

}  // namespace

TEST(InferenceCli, BadCasesAreNamedAndTheOthersStillRun) {
  test::TempDir d("pcli");
  const std::string model = two_channel_model(d);
  const std::string in = d / "in";
  fs::create_directories(in);
  Geometry g, other;
  other.spacing = {2.0, 1.0, 1.0};
  io::write_image(in + "/good_0000.nii.gz", cli_blob(g));
  io::write_image(in + "/good_0001.nii.gz", cli_blob(g, 3.0f));
  io::write_image(in + "/missing_0000.nii.gz", cli_blob(g));  // no _0001
  write_file_atomic(in + "/broken_0000.nii.gz", "this is not a NIfTI file");
  io::write_image(in + "/broken_0001.nii.gz", cli_blob(g));
  io::write_image(in + "/grid_0000.nii.gz", cli_blob(g));
  io::write_image(in + "/grid_0001.nii.gz", cli_blob(other));  // other spacing
  io::write_image(in + "/extra_0000.nii.gz", cli_blob(g));
  io::write_image(in + "/extra_0001.nii.gz", cli_blob(g));
  io::write_image(in + "/extra_0002.nii.gz", cli_blob(g));  // the model takes 2
  const std::string out = d / "out";
  const auto r = test::run_cli("medseg_predict", "-i " + in + " -o " + out + " -m " + model +
                                                     " -npp 1 -nps 1 --disable_tta --disable_progress_bar");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/good.nii.gz")) << r.output;
  for (const char* bad : {"missing", "broken", "grid", "extra"}) {
    EXPECT_FALSE(fs::exists(out + "/" + bad + ".nii.gz")) << bad;
    EXPECT_NE(r.output.find(std::string("  ") + bad + ": "), std::string::npos) << bad << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("missing_0001.nii.gz"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 case(s) failed"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/dataset.json"));
}

TEST(InferenceCli, ContinuePredictionSkipsExistingOutputs) {
  test::TempDir d("pcli");
  two_channel_model(d);
  const std::string in = d / "in", out = d / "out";
  fs::create_directories(in);
  Geometry g;
  for (const char* id : {"a", "b"}) {
    io::write_image(in + "/" + id + "_0000.nii.gz", cli_blob(g));
    io::write_image(in + "/" + id + "_0001.nii.gz", cli_blob(g, 2.0f));
  }
  const std::string env = "MEDSEG_RESULTS=" + (d / "results");
  const std::string args =
      "-i " + in + " -o " + out + " -d 999 -c 3d_fullres -f 0 --disable_tta --disable_progress_bar";
  auto r = test::run_cli("medseg_predict", args, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(out + "/a.nii.gz"));
  // Replace a's output with a marker; --continue_prediction must keep it, a plain run replaces it.
  Volume marker(PixelType::UInt8, {1, 1, 1});
  marker.data<uint8_t>()[0] = 7;
  io::write_image(out + "/a.nii.gz", marker);
  fs::remove(out + "/b.nii.gz");
  r = test::run_cli("medseg_predict", args + " --continue_prediction", env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 case(s) written, 1 skipped"), std::string::npos) << r.output;
  EXPECT_EQ(io::read_image(out + "/a.nii.gz").numel(), 1);
  EXPECT_TRUE(fs::exists(out + "/b.nii.gz"));
  r = test::run_cli("medseg_predict", args, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(io::read_image(out + "/a.nii.gz").shape(), (std::array<int64_t, 3>{17, 18, 16}));
}

TEST(InferenceCli, UsageErrorsAreOneLine) {
  test::TempDir d("pcli");
  auto r = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("-m MODEL_FOLDER"), std::string::npos) << r.output;
  const std::string model = two_channel_model(d);
  r = test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + (d / "out") + " -m " + model + " -f 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("fold_3"), std::string::npos) << r.output;
}

TEST(InferenceCli, ModelFolderPostprocessingIsAppliedUnlessDisabled) {
  test::TempDir d("pcli");
  // Seg-layer weights scaled up and no bias: the two logits swap order from voxel to voxel, so the
  // segmentation is speckled with many components.
  test::TinyModelSpec s;
  s.channels = 2;
  auto net = test::tiny_network(s, 11);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : net->named_parameters()) {
      if (p.key().find("seg_layers") == std::string::npos) continue;
      if (p.key().find("weight") != std::string::npos) p.value().mul_(50);
      if (p.key().find("bias") != std::string::npos) p.value().zero_();
    }
  }
  const std::string model = d / "results/Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
  test::write_model_folder(model, s, net, {"0"});
  const std::string in = d / "in";
  fs::create_directories(in);
  Geometry g;
  io::write_image(in + "/a_0000.nii.gz", cli_blob(g));
  io::write_image(in + "/a_0001.nii.gz", cli_blob(g, 3.0f));
  const std::string args = "-i " + in + " -m " + model + " --disable_tta --disable_progress_bar -o ";
  auto r = test::run_cli("medseg_predict", args + (d / "plain"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Volume plain = io::read_image(d / "plain/a.nii.gz");
  // The random network's segmentation has several foreground components (else this test shows nothing).
  std::vector<uint8_t> fg(static_cast<size_t>(plain.numel()));
  for (size_t i = 0; i < fg.size(); ++i) fg[i] = plain.data<uint8_t>()[i] != 0;
  ASSERT_GT(postprocessing::connected_components(fg, plain.shape()).sizes.size(), 2u);

  postprocessing::Postprocessing pp;
  pp.steps = {{{1}}};
  postprocessing::write_postprocessing(model + "/postprocessing.json", pp);
  r = test::run_cli("medseg_predict", args + (d / "pp"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("postprocessing from " + model + "/postprocessing.json: 1 step(s)"), std::string::npos)
      << r.output;
  const Volume post = io::read_image(d / "pp/a.nii.gz");
  EXPECT_EQ(post.to_double(), postprocessing::apply_postprocessing(plain, pp.steps).to_double());
  EXPECT_NE(post.to_double(), plain.to_double());
  EXPECT_EQ(geometry_mismatch(post.geometry(), post.shape(), plain.geometry(), plain.shape()), "");

  r = test::run_cli("medseg_predict", args + (d / "off") + " --disable_postprocessing");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(io::read_image(d / "off/a.nii.gz").to_double(), plain.to_double());

  // A broken postprocessing.json stops the run before anything is written, naming the file.
  write_file_atomic(model + "/postprocessing.json", "{\"postprocessing_fns\": [");
  r = test::run_cli("medseg_predict", args + (d / "broken"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(model + "/postprocessing.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "broken"));
}

// --amp auto (the default) is bf16 exactly where the processor has bf16 units, and says so; elsewhere it is fp32.
// Checked on this machine, whichever it is: the default's probabilities are byte for byte those of the explicit
// choice the flags call for, and the log names bf16 only then (tests/nn/inference_amp_choice_test.cpp has the rows).
TEST(InferenceCli, AmpAutoIsBf16ExactlyWhereTheCpuHasBf16Units) {
  test::TempDir d("pamp");
  const std::string model = two_channel_model(d);
  const std::string in = d / "in";
  fs::create_directories(in);
  io::write_image(in + "/c_0000.nii.gz", cli_blob(Geometry{}));
  io::write_image(in + "/c_0001.nii.gz", cli_blob(Geometry{}, 2.0f));
  std::map<std::string, std::string> probabilities, logs;
  for (const std::string amp : {"auto", "off", "bf16"}) {
    const std::string out = d / ("out_" + amp);
    const auto r = test::run_cli("medseg_predict", "-i " + in + " -o " + out + " -m " + model + " -f 0 --amp " + amp +
                                                       " --save_probabilities --disable_tta --disable_progress_bar");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    probabilities[amp] = test::read_text(out + "/c_probabilities.npy");
    ASSERT_FALSE(probabilities[amp].empty()) << amp;
    logs[amp] = r.output;
  }
  // The kernel's word, not medseg's CPUID: the same reading of the flags as CpuFeatures.AgreeWithTheKernelsFlags.
  const std::set<std::string> flags = test::kernel_cpu_flags();
  const bool units = flags.count("avx512_bf16") == 1 || (flags.count("amx_bf16") == 1 && flags.count("amx_tile") == 1);
  EXPECT_NE(probabilities["off"], probabilities["bf16"]);  // so the comparison below can tell them apart
  EXPECT_EQ(probabilities["auto"], probabilities[units ? "bf16" : "off"]) << "bf16 units: " << units;
  EXPECT_EQ(logs["auto"].find("--amp auto: the network runs in bf16") != std::string::npos, units) << logs["auto"];
  EXPECT_EQ(logs["off"].find("runs in bf16"), std::string::npos) << logs["off"];
}
