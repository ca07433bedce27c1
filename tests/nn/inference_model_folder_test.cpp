// Model folder discovery and loading: fold selection like nnU-Net (fold_all left out by default),
// checkpoint names with or without extension, the JSON fallback to the checkpoint's copies, and
// clear errors naming the missing fold or checkpoint.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/error.h"
#include "inference/model_folder.h"
#include "inference_test_util.h"
#include "support/test_support.h"

using namespace medseg;
using namespace medseg::inference;
namespace fs = std::filesystem;

TEST(ModelFolder, FoldsAreNumericallySortedWithoutAll) {
  test::TempDir d("mf");
  for (const char* f : {"fold_10", "fold_2", "fold_0", "fold_all", "fold_x", "notes"}) fs::create_directories(d / f);
  EXPECT_EQ(available_folds(d.path()), (std::vector<std::string>{"0", "2", "10"}));
  EXPECT_EQ(checkpoint_file_name("checkpoint_final"), "checkpoint_final.ckpt");
  EXPECT_EQ(checkpoint_file_name("checkpoint_best.ckpt"), "checkpoint_best.ckpt");
  EXPECT_EQ(checkpoint_file_name("checkpoint_best.pth"), "checkpoint_best.ckpt");
}

TEST(ModelFolder, LoadsFoldsAndFallsBackToCheckpointCopies) {
  test::TempDir d("mf");
  test::TinyModelSpec s;
  s.labels = {"background", "a", "b"};
  auto net = test::tiny_network(s, 1);
  const std::string folder = d / "nnUNetTrainer__nnUNetPlans__3d_fullres";
  test::write_model_folder(folder, s, net, {"0", "1", "all"}, /*with_json=*/false, {1, 2});
  const ModelFolder m = load_model_folder(folder, {});
  ASSERT_EQ(m.folds.size(), 2u);  // 0 and 1; "all" only on request
  EXPECT_EQ(m.folds[0].fold, "0");
  EXPECT_EQ(m.configuration, "3d_fullres");
  EXPECT_EQ(m.in_channels, 1);
  EXPECT_EQ(m.num_classes, 3);
  EXPECT_EQ(m.mirror_axes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.dataset.num_channels(), 1);
  EXPECT_EQ(m.plans.configuration("3d_fullres").patch_size, (std::vector<int>{16, 16, 16}));
  EXPECT_FALSE(m.folds[0].weights.empty());

  const ModelFolder all = load_model_folder(folder, {"all"}, "checkpoint_final.ckpt");
  ASSERT_EQ(all.folds.size(), 1u);
  EXPECT_EQ(all.folds[0].fold, "all");
}

TEST(ModelFolder, ErrorsNameTheMissingPiece) {
  test::TempDir d("mf");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 1);
  const std::string folder = d / "m";
  test::write_model_folder(folder, s, net, {"0"});
  try {
    load_model_folder(folder, {"3"});
    FAIL();
  } catch (const FileError& e) { EXPECT_NE(std::string(e.what()).find("fold_3"), std::string::npos) << e.what(); }
  try {
    load_model_folder(folder, {"0"}, "checkpoint_best");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint_best.ckpt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_model_folder(d / "nowhere", {}), FileError);
  // A checkpoint of a different configuration cannot join the ensemble.
  test::TinyModelSpec other = s;
  other.configuration = "3d_lowres";
  auto net2 = test::tiny_network(other, 2);
  test::write_model_folder(d / "tmp", other, net2, {"1"});
  fs::create_directories(folder + "/fold_1");
  fs::copy_file(d / "tmp/fold_1/checkpoint_final.ckpt", folder + "/fold_1/checkpoint_final.ckpt");
  EXPECT_THROW(load_model_folder(folder, {}), FileError);
}
