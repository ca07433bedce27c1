// medseg_model_info on a small plans.json (with an inherits_from configuration) and on SwinUNETR.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/json_io.h"
#include "io/dataset.h"
#include "models/plans_architecture.h"
#include "nn/inference_test_util.h"
#include "nn/models_test_util.h"
#include "support/test_support.h"

using namespace medseg;

namespace {

const std::vector<int64_t> kF{8, 16, 32, 32};
const test::Shapes kK{{1, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}};
const test::Shapes kS{{1, 1, 1}, {1, 2, 2}, {2, 2, 2}, {2, 2, 2}};

// A complete plans file (the CLI checks every key as training would), with a small ResEnc network
// and a configuration that inherits from it.
nlohmann::json small_plans() {
  test::TinyModelSpec spec;
  spec.channels = 2;
  spec.patch = {16, 32, 24};
  nlohmann::json plans = test::tiny_plans_json(spec);
  nlohmann::json cfg = plans.at("configurations").at("3d_fullres");
  cfg["architecture"] = test::unet_arch("ResidualEncoderUNet", 3, kF, kK, kS, {1, 2, 2, 2}, {1, 1, 1});
  cfg["batch_size"] = 2;
  plans["plans_name"] = "nnUNetResEncUNetMPlans";
  plans["configurations"] = {{"3d_fullres", cfg},
                             {"3d_fullres_bs4", {{"inherits_from", "3d_fullres"}, {"batch_size", 4}}}};
  return plans;
}

nlohmann::json run_json(const std::string& args) {
  auto r = test::run_cli("medseg_model_info", args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto start = r.output.find('{');
  return nlohmann::json::parse(r.output.substr(start == std::string::npos ? 0 : start));
}

}  // namespace

TEST(ModelsInfo, PlansHelpers) {
  auto spec = models::plan_network_spec(small_plans(), "3d_fullres_bs4");
  EXPECT_EQ(spec.patch_size, (std::vector<int64_t>{16, 32, 24}));
  EXPECT_EQ(spec.architecture.at("arch_kwargs").at("n_stages"), 4);
  EXPECT_THROW(models::plan_network_spec(small_plans(), "2d"), Error);
  const nlohmann::ordered_json ds = {{"channel_names", {{"0", "T2"}, {"1", "ADC"}}},
                                     {"labels", {{"background", 0}, {"PZ", 1}, {"TZ", 2}}}};
  EXPECT_EQ(io::channel_names_from_json(ds, "dataset.json").size(), 2u);
  EXPECT_EQ(io::network_outputs(io::labels_from_json(ds, "dataset.json")), 3);
  const nlohmann::ordered_json regions = {
      {"channel_names", {{"0", "FLAIR"}}},
      {"labels", {{"background", 0}, {"whole", {1, 2, 3}}, {"core", {2, 3}}, {"ignore", 4}}}};
  EXPECT_EQ(io::network_outputs(io::labels_from_json(regions, "dataset.json")), 2);
}

TEST(ModelsInfo, CliOnPlans) {
  test::TempDir dir("model_info");
  write_json(dir / "plans.json", small_plans());
  write_json(dir / "dataset.json",
             {{"channel_names", {{"0", "T2"}, {"1", "ADC"}}}, {"labels", {{"background", 0}, {"PZ", 1}, {"TZ", 2}}}});
  auto j = run_json("--plans " + dir / "plans.json" + " --dataset-json " + dir / "dataset.json" + " -c 3d_fullres_bs4");
  EXPECT_EQ(j.at("class"), "ResidualEncoderUNet");
  EXPECT_EQ(j.at("parameter_count").get<int64_t>(),
            test::resenc_unet_params(2, kF, kK, kS, {1, 2, 2, 2}, {1, 1, 1}, 3));
  const std::vector<std::vector<int64_t>> shapes{{1, 3, 16, 32, 24}, {1, 3, 16, 16, 12}, {1, 3, 8, 8, 6}};
  EXPECT_EQ(j.at("output_shapes").get<std::vector<std::vector<int64_t>>>(), shapes);
  // The byte model's estimate for the plan's batch (4, inherited config) with AMP on by default.
  ASSERT_TRUE(j.at("estimated_peak_bytes").is_number_integer());
  EXPECT_GT(j.at("estimated_peak_bytes").get<int64_t>(), 0);
  EXPECT_EQ(j.at("memory").at("batch_size"), 4);
  EXPECT_EQ(j.at("memory").at("amp"), true);
  EXPECT_EQ(j.at("memory").at("estimated_peak_bytes"), j.at("estimated_peak_bytes"));
  const std::string base =
      "--plans " + dir / "plans.json" + " --dataset-json " + dir / "dataset.json" + " -c 3d_fullres --no-forward";
  const auto b1 = run_json(base + " --batch 1").at("estimated_peak_bytes").get<int64_t>();
  const auto b2 = run_json(base + " --batch 2").at("estimated_peak_bytes").get<int64_t>();
  const auto b2_fp32 = run_json(base + " --batch 2 --amp off").at("estimated_peak_bytes").get<int64_t>();
  EXPECT_GT(b2, b1);
  EXPECT_GT(b2_fp32, b2);                                      // fp32 activations take twice the bytes
  EXPECT_EQ(run_json(base).at("memory").at("batch_size"), 2);  // the parent's batch
}

TEST(ModelsInfo, CliSwinUNETR) {
  auto j = run_json("--swinunetr --in-channels 1 --out-channels 14 --feature-size 48 --no-forward");
  EXPECT_EQ(j.at("parameter_count").get<int64_t>(), 62187296);
  // Estimate for batch 1 at 96^3; its parameter count is the network's.
  EXPECT_GT(j.at("estimated_peak_bytes").get<int64_t>(), 0);
  EXPECT_EQ(j.at("memory").at("batch_size"), 1);
  EXPECT_EQ(j.at("memory").at("parameters"), 62187296);
  const auto s2 = run_json("--swinunetr --in-channels 1 --out-channels 14 --feature-size 48 --no-forward --batch 2");
  EXPECT_GT(s2.at("estimated_peak_bytes").get<int64_t>(), j.at("estimated_peak_bytes").get<int64_t>());
  auto k = run_json("--swinunetr --in-channels 1 --out-channels 3 --feature-size 12 --use-v2 --patch 32 32 64");
  EXPECT_EQ(k.at("output_shapes").get<std::vector<std::vector<int64_t>>>(),
            (std::vector<std::vector<int64_t>>{{1, 3, 32, 32, 64}}));
  auto bad = test::run_cli("medseg_model_info", "--swinunetr --feature-size 12 --patch 40 32 32");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("divisible by 32"), std::string::npos) << bad.output;
}
