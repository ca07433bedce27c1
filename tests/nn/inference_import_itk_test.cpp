// scripts/import_nnunet_model.py on a fake nnU-Net results folder: its checkpoint_final.pth carries
// medseg-exported weights under nnU-Net's key names with nnU-Net's aliases (decoder.encoder.*,
// .all_modules.*). The imported medseg folder must predict the same logits as the original one.
// Skipped when /usr/bin/python3 cannot import torch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "core/json_io.h"
#include "inference/model_folder.h"
#include "inference/predictor.h"
#include "inference_test_util.h"
#include "io/case_loader.h"
#include "io/image_io.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::inference;
namespace fs = std::filesystem;

namespace {

bool python_has_torch() { return std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") == 0; }

int run(const std::string& cmd) { return std::system((cmd + " > /dev/null 2>&1").c_str()); }

}  // namespace

TEST(InferenceImport, ImportedNnUNetFolderReproducesTheLogits) {
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch and numpy";
  test::TempDir d("imp");
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto net = test::tiny_network(s, 21);
  const std::string original = d / "medseg_original";
  test::write_model_folder(original, s, net, {"0"});

  // The fake nnU-Net folder: plans.json, dataset.json, fold_0/checkpoint_final.pth.
  const std::string nnunet = d / "nnunet/Dataset999_Tiny/nnUNetTrainer__nnUNetPlans__3d_fullres";
  fs::create_directories(nnunet + "/fold_0");
  fs::copy_file(original + "/plans.json", nnunet + "/plans.json");
  fs::copy_file(original + "/dataset.json", nnunet + "/dataset.json");
  ASSERT_EQ(run("/usr/bin/python3 " + test::source_path("tests/nn/fake_nnunet_checkpoint.py") + " " + original +
                "/fold_0/checkpoint_final.ckpt " + nnunet + "/fold_0/checkpoint_final.pth 3d_fullres"),
            0);

  const std::string imported = d / "medseg_imported";
  ASSERT_EQ(
      run("/usr/bin/python3 " + test::source_path("scripts/import_nnunet_model.py") + " " + nnunet + " " + imported),
      0);

  // The aliases are gone, names are medseg's, the source is recorded.
  const checkpoint::Checkpoint ck = checkpoint::load_checkpoint(imported + "/fold_0/checkpoint_final.ckpt");
  const auto own = checkpoint::module_weights(*net);
  EXPECT_EQ(ck.weights.size(), own.size());
  for (const auto& [name, t] : ck.weights) {
    EXPECT_EQ(name.find("all_modules"), std::string::npos) << name;
    EXPECT_NE(name.rfind("decoder.encoder.", 0), 0u) << name;
  }
  EXPECT_EQ(ck.extra.at("imported_from").at("checkpoint"), "fold_0/checkpoint_final.pth");
  EXPECT_GT(ck.extra.at("imported_from").at("aliases_dropped").get<int>(), 0);
  EXPECT_EQ(ck.extra.at("num_classes"), 3);
  EXPECT_EQ(ck.extra.at("configuration"), "3d_fullres");

  // Same logits on a case, through the whole predictor.
  Geometry g;
  g.spacing = {1.1, 0.9, 1.3};
  Volume img(PixelType::Float32, {19, 21, 18}, g);
  float* p = img.data<float>();
  for (int64_t i = 0; i < img.numel(); ++i) p[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) + 2.0);
  io::write_image(d / "case_0000.nii.gz", img);
  PredictorOptions po;
  po.torch_threads = 2;
  Predictor a(load_model_folder(original, {}), po);
  Predictor b(load_model_folder(imported, {}), po);
  EXPECT_FALSE(b.model().imported_from.is_null());
  auto c = a.preprocess(io::load_case({"case", {d / "case_0000.nii.gz"}, ""}));
  const at::Tensor la = a.predict_logits(c.arrays), lb = b.predict_logits(c.arrays);
  EXPECT_LE((la - lb).abs().max().item<float>(), 1e-4);

  // And the CLI on the imported folder writes the same segmentation.
  fs::create_directories(d / "in");
  fs::copy_file(d / "case_0000.nii.gz", d / "in/case_0000.nii.gz");
  for (const auto& [model, out] : {std::make_pair(original, d / "out_a"), std::make_pair(imported, d / "out_b")}) {
    const auto r =
        test::run_cli("medseg_predict", "-i " + (d / "in") + " -o " + out + " -m " + model + " --disable_progress_bar");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const Volume sa = io::read_image(d / "out_a/case.nii.gz"), sb = io::read_image(d / "out_b/case.nii.gz");
  ASSERT_EQ(sa.nbytes(), sb.nbytes());
  EXPECT_EQ(std::memcmp(sa.raw(), sb.raw(), sa.nbytes()), 0);
}
