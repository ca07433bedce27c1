// nnU-Net's trainer variants by name (--tr NAME) from configs/trainer_variants.json, and the mirroring
// setting the NoMirroring / onlyMirror01 variants need, in training and in the saved model.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/json_io.h"
#include "inference/model_folder.h"
#include "inference_test_util.h"
#include "models/primus.h"
#include "plans/plans.h"
#include "support/test_support.h"
#include "training/trainer_config.h"
#include "training/trainer_variants.h"

using namespace medseg;
using training::Augmentation;
using training::find_trainer_config;
using training::Interpolation;
using training::LrSchedule;
using training::TrainerConfig;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& name) {
  try {
    find_trainer_config(name);
  } catch (const std::exception& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(TrainerVariants, EpochVariantsChangeOnlyTheEpochs) {
  const TrainerConfig c = find_trainer_config("nnUNetTrainer_250epochs");
  EXPECT_EQ(c.name, "nnUNetTrainer_250epochs");  // names the model folder, as nnU-Net's class name does
  EXPECT_EQ(c.num_epochs, 250);
  EXPECT_EQ(c.iterations_per_epoch, 250);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
  EXPECT_TRUE(c.deep_supervision);
  EXPECT_EQ(c.mirror_axes(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c.mirror_axes(2), (std::vector<int>{0, 1}));
  EXPECT_EQ(find_trainer_config("nnUNetTrainer_1epoch").num_epochs, 1);
  EXPECT_EQ(find_trainer_config("nnUNetTrainer_8000epochs").num_epochs, 8000);
}

// nnUNetTrainerNoMirroring: mirror_axes = None in training and inference_allowed_mirroring_axes = None.
TEST(TrainerVariants, NoMirroringMirrorsNothing) {
  const TrainerConfig c = find_trainer_config("nnUNetTrainerNoMirroring");
  EXPECT_EQ(c.num_epochs, 1000);
  EXPECT_TRUE(c.mirror_axes(3).empty());
  EXPECT_TRUE(c.mirror_axes(2).empty());
  const TrainerConfig e = find_trainer_config("nnUNetTrainer_250epochs_NoMirroring");
  EXPECT_EQ(e.num_epochs, 250);
  EXPECT_TRUE(e.mirror_axes(3).empty());
  // The checkpoint's trainer_config (and a resumed run) keeps the setting.
  const TrainerConfig back = training::trainer_config_from_json(e.to_json(), "trainer_config.json");
  EXPECT_TRUE(back.mirror_axes_3d.has_value());
  EXPECT_TRUE(back.mirror_axes(3).empty());
  EXPECT_EQ(e.to_json().at("mirror_axes"), json::parse(R"({"2d": [], "3d": []})"));
}

// nnUNetTrainer_onlyMirror01: axes (0, 1) of a 3D patch, (0,) of a 2D one.
TEST(TrainerVariants, OnlyMirror01) {
  const TrainerConfig c = find_trainer_config("nnUNetTrainer_onlyMirror01");
  EXPECT_EQ(c.mirror_axes(3), (std::vector<int>{0, 1}));
  EXPECT_EQ(c.mirror_axes(2), (std::vector<int>{0}));
}

// nnUNetTrainerCosAnneal: the cosine schedule, the rest of nnUNetTrainer's recipe; it travels in checkpoints.
TEST(TrainerVariants, CosAnneal) {
  const TrainerConfig c = find_trainer_config("nnUNetTrainerCosAnneal");
  EXPECT_EQ(c.lr_schedule, LrSchedule::Cosine);
  EXPECT_EQ(c.num_epochs, 1000);
  EXPECT_EQ(c.to_json().at("lr_schedule"), "cosine");  // the file's spelling
  EXPECT_EQ(medseg::training::trainer_config_from_json(c.to_json(), "copy").lr_schedule, LrSchedule::Cosine);
  EXPECT_EQ(find_trainer_config("nnUNetTrainer").lr_schedule, LrSchedule::Poly);
  EXPECT_THROW(medseg::training::trainer_config_from_json({{"lr_schedule", "step"}}, "t.json"), Error);
}

TEST(TrainerVariants, NoDeepSupervision) {
  EXPECT_FALSE(find_trainer_config("nnUNetTrainerNoDeepSupervision").deep_supervision);
}

TEST(TrainerVariants, AugmentationVariantsSelectTheirPipelines) {
  const TrainerConfig da5 = find_trainer_config("nnUNetTrainerDA5");
  EXPECT_EQ(da5.augmentation, Augmentation::DA5);
  EXPECT_EQ(da5.augment_seg_interpolation, Interpolation::Linear);
  EXPECT_EQ(find_trainer_config("nnUNetTrainerDA5_10epochs").num_epochs, 10);
  const TrainerConfig ord0 = find_trainer_config("nnUNetTrainerDA5ord0");
  EXPECT_EQ(ord0.augment_image_interpolation, Interpolation::Nearest);
  EXPECT_EQ(ord0.augment_seg_interpolation, Interpolation::Nearest);
  EXPECT_EQ(ord0.to_json().at("augment_seg_interpolation"), "nearest");
  const TrainerConfig seg0 = find_trainer_config("nnUNetTrainer_DASegOrd0");
  EXPECT_EQ(seg0.augmentation, Augmentation::NnUNet);
  EXPECT_EQ(seg0.augment_image_interpolation, Interpolation::Linear);
  EXPECT_EQ(seg0.augment_seg_interpolation, Interpolation::Nearest);
  EXPECT_EQ(find_trainer_config("nnUNetTrainer_onlyMirror01_DA5").mirror_axes(3), (std::vector<int>{0, 1}));
  EXPECT_FALSE(find_trainer_config("nnUNetTrainer_noDummy2DDA").dummy_2d_augmentation);
  EXPECT_TRUE(find_trainer_config("nnUNetTrainer").dummy_2d_augmentation);
}

TEST(TrainerVariants, RefusedNamesSayWhy) {
  EXPECT_EQ(error_of("nnUNetTrainer_HRNet"),
            "nnUNetTrainer_HRNet: the HRNet architecture is not implemented in medseg");
  EXPECT_EQ(error_of("nnUNetTrainerAdan"), "nnUNetTrainerAdan: the Adan optimizer is not implemented in medseg");
  const std::string unknown = error_of("nnUNetTrainer_NoSuchVariant");
  EXPECT_NE(unknown.find("trainer config 'nnUNetTrainer_NoSuchVariant' not found"), std::string::npos) << unknown;
}

// Every name of the table loads or is refused with its reason: no typo in the table trains a default.
TEST(TrainerVariants, EveryNameOfTheTableResolves) {
  const json table = read_json(std::string(MEDSEG_TEST_SOURCE_DIR) + "/configs/trainer_variants.json");
  ASSERT_GE(table.at("variants").size(), 61u);
  for (const auto& [name, v] : table.at("variants").items()) EXPECT_EQ(find_trainer_config(name).name, name);
  for (const auto& [name, why] : table.at("refused").items())
    EXPECT_EQ(error_of(name), name + ": " + why.get<std::string>());
}

TEST(TrainerVariants, ABadTableEntryIsNamed) {
  test::TempDir dir("variants");
  const std::string table = dir / "trainer_variants.json";
  std::ofstream(table) << R"({"format": "medseg-trainer-variants", "variants": {
      "typo": {"base": "nnUNetTrainer", "settings": {"num_epoch": 5}},
      "range": {"base": "nnUNetTrainer", "settings": {"mirror_axes": {"3d": [0, 3]}}},
      "loop": {"base": "typo", "settings": {}}}})";
  const auto load = [](const std::string& n) { return find_trainer_config(n); };
  for (const char* name : {"typo", "range", "loop"}) {
    SCOPED_TRACE(name);
    try {
      training::trainer_variant(name, table, load);
      FAIL();
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find(table + " (" + name + ")"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(training::trainer_variant("absent", table, load).has_value());
}

// A saved model's inference_allowed_mirroring_axes: null is nnU-Net's None (no test-time mirroring),
// absent is every axis.
TEST(TrainerVariants, SavedModelWithoutMirroringPredictsWithoutIt) {
  test::TempDir dir("variants_model");
  test::TinyModelSpec s;
  auto net = test::tiny_network(s, 1);
  const std::string folder = dir / "model";
  test::write_model_folder(folder, s, net, {"0"});
  const std::string ck_path = folder + "/fold_0/checkpoint_final.ckpt";
  checkpoint::Checkpoint ck = checkpoint::load_checkpoint(ck_path);
  ck.extra["inference_allowed_mirroring_axes"] = nullptr;
  checkpoint::save_checkpoint(ck_path, ck);
  EXPECT_TRUE(inference::load_model_folder(folder, {"0"}).mirror_axes.empty());
  ck.extra.erase("inference_allowed_mirroring_axes");
  checkpoint::save_checkpoint(ck_path, ck);
  EXPECT_EQ(inference::load_model_folder(folder, {"0"}).mirror_axes, (std::vector<int64_t>{0, 1, 2}));
}

// nnU-Net's AbstractPrimus recipe (primus_trainers.py): AdamW lr 3e-4, weight decay 5e-2, betas (0.9, 0.98),
// nnUNetTrainer_warmup's 50 epochs, no deep supervision, gradients clipped to norm 1, and the trainer's own
// Primus in place of the plans' network: Primus for nnUNet_Primus_<size>_Trainer, PrimusV2 / PrimusV3 (the
// residual patch embeddings) for nnUNet_PrimusV2<size>_Trainer / nnUNet_PrimusV3<size>_Trainer.
TEST(TrainerVariants, PrimusTrainersCarryNnUNetsRecipeAndTheirNetwork) {
  const std::pair<const char*, std::array<int, 3>> sizes[] = {
      {"S", {396, 12, 6}}, {"B", {792, 12, 12}}, {"M", {864, 16, 12}}, {"L", {1056, 24, 16}}};
  for (const std::string version : {"", "V2", "V3"})
    for (const auto& [size, dims] : sizes) {
      const std::string name = "nnUNet_Primus" + (version.empty() ? std::string("_") : version) + size + "_Trainer";
      SCOPED_TRACE(name);
      const TrainerConfig c = find_trainer_config(name);
      EXPECT_EQ(c.optimizer.type, training::OptimizerType::AdamW);
      EXPECT_DOUBLE_EQ(c.optimizer.lr, 3e-4);
      EXPECT_DOUBLE_EQ(c.optimizer.weight_decay, 5e-2);
      EXPECT_DOUBLE_EQ(c.optimizer.beta1, 0.9);
      EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.98);
      EXPECT_FALSE(c.optimizer.amsgrad);
      EXPECT_EQ(c.warmup_epochs, 50);
      EXPECT_FALSE(c.deep_supervision);
      EXPECT_DOUBLE_EQ(c.grad_clip, 1.0);
      const json& k = c.architecture.at("arch_kwargs");
      EXPECT_EQ(c.architecture.at("network_class_name"),
                "dynamic_network_architectures.architectures.primus.Primus" + version);
      EXPECT_EQ(k.at("embed_dim"), dims[0]);
      EXPECT_EQ(k.at("eva_depth"), dims[1]);
      EXPECT_EQ(k.at("eva_numheads"), dims[2]);
      EXPECT_EQ(k.at("init_values"), 0.1);
      EXPECT_EQ(k.at("drop_path_rate"), 0.2);
      EXPECT_EQ(k.at("scale_attn_inner"), true);
    }
  EXPECT_NE(error_of("nnUNet_PrimusV4M_Trainer").find("nnUNet_PrimusV4M_Trainer"), std::string::npos);
}

// The architecture a Primus trainer writes into its model folder builds the network nnU-Net's trainer builds: the
// S size of each version, 1 -> 2 channels on 64^3, holds as many parameters as dynamic-network-architectures 0.4.4
// counts for nnUNet_Primus_S_Trainer, nnUNet_PrimusV2S_Trainer and nnUNet_PrimusV3S_Trainer.
TEST(TrainerVariants, PrimusTrainersArchitecturesBuildTheTrainersNetworks) {
  const std::pair<const char*, int64_t> rows[] = {{"nnUNet_Primus_S_Trainer", 23386526},
                                                  {"nnUNet_PrimusV2S_Trainer", 24159518},
                                                  {"nnUNet_PrimusV3S_Trainer", 70596165}};
  for (const auto& [name, parameters] : rows) {
    SCOPED_TRACE(name);
    planning::ArchitecturePlan a = planning::architecture_from_json(find_trainer_config(name).architecture, name);
    ASSERT_TRUE(a.primus);
    a.primus->input_shape = {64, 64, 64};  // a configuration's patch size
    EXPECT_EQ(models::primus_parameter_count(models::primus_options(*a.primus, 1, 2)), parameters);
  }
}

// nnU-Net master's fine-tuning trainers (pretraining/pretrainedTrainer.py, thrp_primusx_finetuning.py): batch size 2,
// no deep supervision, the warm-up, and two initial rates, with and without pretrained weights. PretrainedTrainer:
// SGD (nesterov, momentum 0.99) 1e-3 / 1e-2, 50 warm-up epochs; the *_150ep ones 15 of 150; the Primus ones AdamW
// (weight decay 5e-2, betas 0.9 / 0.98) 1e-4 / 3e-4 with gradients clipped at 1. The batch-size trainers of
// primus_trainers.py set 8. DynamicPretrainedTrainer fits the encoder dynamically; its _adam_150ep keeps
// nnUNetTrainer's weight decay and gradient clip.
TEST(TrainerVariants, FineTuningTrainersCarryNnUNetsRecipe) {
  const TrainerConfig sgd = find_trainer_config("PretrainedTrainer");
  EXPECT_EQ(sgd.optimizer.type, training::OptimizerType::SGD);
  EXPECT_TRUE(sgd.optimizer.nesterov);
  EXPECT_DOUBLE_EQ(sgd.optimizer.momentum, 0.99);
  EXPECT_DOUBLE_EQ(sgd.optimizer.lr, 1e-3);
  ASSERT_TRUE(sgd.lr_from_scratch);
  EXPECT_DOUBLE_EQ(*sgd.lr_from_scratch, 1e-2);
  EXPECT_EQ(sgd.warmup_epochs, 50);
  EXPECT_EQ(sgd.num_epochs, 1000);
  ASSERT_TRUE(sgd.batch_size);
  EXPECT_EQ(*sgd.batch_size, 2);
  EXPECT_FALSE(sgd.deep_supervision);
  EXPECT_DOUBLE_EQ(sgd.grad_clip, 12);
  const TrainerConfig short_run = find_trainer_config("PretrainedTrainer_150ep_nomirroring");
  EXPECT_EQ(short_run.num_epochs, 150);
  EXPECT_EQ(short_run.warmup_epochs, 15);
  EXPECT_TRUE(short_run.mirror_axes(3).empty());
  const TrainerConfig smaller = find_trainer_config("PretrainedTrainer_smallerlr");
  EXPECT_DOUBLE_EQ(smaller.optimizer.lr, 3e-5);
  EXPECT_DOUBLE_EQ(*smaller.lr_from_scratch, 1e-4);
  EXPECT_DOUBLE_EQ(smaller.optimizer.weight_decay, 5e-2);
  for (const char* name : {"PretrainedTrainer_Primus", "PretrainedTrainer_Primusx", "PretrainedTrainer_adam_150ep"}) {
    const TrainerConfig p = find_trainer_config(name);
    EXPECT_EQ(p.optimizer.type, training::OptimizerType::AdamW) << name;
    EXPECT_DOUBLE_EQ(p.optimizer.lr, 1e-4) << name;
    EXPECT_DOUBLE_EQ(*p.lr_from_scratch, 3e-4) << name;
    EXPECT_DOUBLE_EQ(p.optimizer.weight_decay, 5e-2) << name;
    EXPECT_DOUBLE_EQ(p.optimizer.beta2, 0.98) << name;
    EXPECT_DOUBLE_EQ(p.grad_clip, 1) << name;
    EXPECT_EQ(*p.batch_size, 2) << name;
  }
  EXPECT_EQ(find_trainer_config("PretrainedTrainer_Primusx_30ep").warmup_epochs, 3);
  EXPECT_EQ(*find_trainer_config("nnUNet_Trainer_BS8").batch_size, 8);
  const TrainerConfig bs8 = find_trainer_config("nnUNet_Primus_M_Trainer_BS8_2e4");
  EXPECT_EQ(*bs8.batch_size, 8);
  EXPECT_DOUBLE_EQ(bs8.optimizer.lr, 2e-4);
  EXPECT_FALSE(find_trainer_config("nnUNetTrainer").batch_size);
  EXPECT_EQ(sgd.encoder_fit, training::EncoderFit::Strict);
  EXPECT_EQ(find_trainer_config("DynamicPretrainedTrainer").encoder_fit, training::EncoderFit::Dynamic);
  const TrainerConfig dyn_adam = find_trainer_config("DynamicPretrainedTrainer_adam_150ep");
  EXPECT_EQ(dyn_adam.encoder_fit, training::EncoderFit::Dynamic);
  EXPECT_EQ(dyn_adam.optimizer.type, training::OptimizerType::AdamW);
  EXPECT_DOUBLE_EQ(dyn_adam.optimizer.weight_decay, 3e-5);
  EXPECT_DOUBLE_EQ(dyn_adam.grad_clip, 12);
  EXPECT_NE(error_of("PretrainedTrainer_Primusx_150ep_small_debug").find("patch size"), std::string::npos);
}
