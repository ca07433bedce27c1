#pragma once
// Trainer settings, read from JSON (configs/<name>.json). Defaults are nnU-Net's recipe; the CLI
// overrides a few of them (epochs, iterations, AMP, workers).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/amp.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/json_io.h"
#include "data/augment/config.h"
#include "training/optimizer.h"
#include "training/schedule.h"

namespace medseg::training {

// In-place LeakyReLU and residual additions (nnU-Net's nonlin_kwargs.inplace). auto: the plans'
// setting on one process, off under data parallelism (see resolve_inplace).
enum class InplaceMode { Auto, On, Off };
InplaceMode parse_inplace(const std::string& value, const std::string& where);
std::string to_string(InplaceMode m);
// What the network is built with: On/Off as given; Auto = off with several ranks, else `plans_inplace`.
bool resolve_inplace(InplaceMode mode, bool plans_inplace, bool data_parallel);

// The training loss (nnU-Net's loss variants, docs/trainer_variants.md): weight_ce * CE + weight_dice *
// soft Dice; the CE term optionally with label smoothing and as nnU-Net's TopKLoss (the mean of the
// largest topk_percent % of the per-voxel terms). Regions: the CE term is the BCE, and top-k and
// label smoothing are refused, as nnU-Net's trainers assert.
struct LossConfig {
  double weight_ce = 1.0;      // 0: Dice only (nnUNetTrainerDiceLoss)
  double weight_dice = 1.0;    // 0: CE / top-k only (nnUNetTrainerCELoss, nnUNetTrainerTopk10Loss)
  double dice_smooth = 1e-5;   // 0: nnUNetTrainerDiceCELoss_noSmooth
  double topk_percent = 100;   // < 100: TopKLoss with k = topk_percent (nnU-Net's k = 10)
  double label_smoothing = 0;  // of the CE term (nnUNetTrainerTopk10LossLS01: 0.1)
  bool topk() const { return topk_percent < 100; }
};

// Which samples of a batch must hold foreground (nnU-Net's DataLoader): the last
// round(batch * oversample) ones (BatchTail, the default), or each with probability `oversample`
// (Probabilistic; nnUNetTrainer_probabilisticOversampling_033/_010), or each with the share of the
// batch BatchTail would force (ProbabilisticBatchRate; nnUNetTrainer_probabilisticOversampling,
// 0.5 for batch 2 and 0.33).
enum class Oversampling { BatchTail, Probabilistic, ProbabilisticBatchRate };
std::string to_string(Oversampling o);  // "batch_tail", "probabilistic", "probabilistic_batch_rate"

// The U-Net's normalisation: the plans' norm_op (instance norm), or nnUNetTrainerBN's BatchNorm (eps 1e-5, affine
// weights in place of the plans' norm_op; one process only).
enum class NetworkNorm { Plans, Batch };
// The training augmentation: nnUNetTrainer's, or nnUNetTrainerDA5's stronger one.
enum class Augmentation { NnUNet, DA5 };
// How a pretrained nnssl encoder must fit the network's (training/pretrained_encoder.h): strictly (PretrainedTrainer)
// or dynamically, averaging kernels and leaving out what does not fit (DynamicPretrainedTrainer).
enum class EncoderFit { Strict, Dynamic };
// The spatial transform's interpolation: linear (nnU-Net's; BG2's one-hot vote for labels) or nearest (order 0: the
// *DASegOrd0 and DA5*ord0 trainers).
enum class Interpolation { Linear, Nearest };

// How trainer configs spell each setting's values ("poly", "batch", "da5", "nearest", "cpu_batched", ...): one table
// per type (core/enum_names.h), which the reader parses with and to_json writes from; the settings are compared as
// values, never as text.
const EnumNames<InplaceMode>& inplace_names();
const EnumNames<Oversampling>& oversampling_names();
const EnumNames<LrSchedule>& lr_schedule_names();
const EnumNames<NetworkNorm>& network_norm_names();
const EnumNames<Augmentation>& augmentation_names();
const EnumNames<Interpolation>& interpolation_names();
const EnumNames<EncoderFit>& encoder_fit_names();
const EnumNames<data::augment::AugmentDevice>& augment_device_names();

struct TrainerConfig {
  std::string name = "nnUNetTrainer";
  int64_t num_epochs = 1000;
  int64_t iterations_per_epoch = 250;
  int64_t val_iterations_per_epoch = 50;
  OptimizerConfig optimizer;  // SGD nesterov 0.99, lr 1e-2, wd 3e-5
  double poly_exponent = 0.9;
  // The learning-rate schedule: "poly" (nnU-Net's PolyLRScheduler with poly_exponent) or "cosine"
  // (nnUNetTrainerCosAnneal; training/schedule.h).
  LrSchedule lr_schedule = LrSchedule::Poly;
  // Linear warm-up over the first warmup_epochs epochs to the initial learning rate, then the schedule
  // over the remaining epochs (nnUNetTrainer_warmup: 50; training/schedule.h).
  int64_t warmup_epochs = 0;
  LossConfig loss;
  Oversampling oversampling = Oversampling::BatchTail;
  NetworkNorm norm = NetworkNorm::Plans;  // "plans" or "batch" (nnUNetTrainerBN)
  double grad_clip = 12.0;
  double oversample_foreground = 0.33;
  bool deep_supervision = true;
  bool augment = true;
  Augmentation augmentation = Augmentation::NnUNet;  // "nnunet" or "da5"
  // The spatial transform's interpolation of the image and of the labels: "linear" or "nearest".
  Interpolation augment_image_interpolation = Interpolation::Linear;
  Interpolation augment_seg_interpolation = Interpolation::Linear;
  // Dummy-2D augmentation of anisotropic 3D patches (false: nnUNetTrainer_noDummy2DDA).
  bool dummy_2d_augmentation = true;
  int64_t checkpoint_every = 5;  // epochs between checkpoint_latest writes
  double ema_momentum = 0.9;
  uint64_t seed = 12345;        // data pipeline + weight init
  AmpMode amp = AmpMode::Auto;  // auto (fp16 on CUDA, off on CPU), fp16, bf16, off
  int num_workers = 2;          // data pipeline threads
  // Where training augmentation runs: "cpu" (per sample in the loader workers), "cuda" (on the
  // collated batch on the training GPU; data/augment/device_augment.h) or "cpu_batched" (that
  // batched path on CPU tensors: CI and tests).
  data::augment::AugmentDevice augment_device = data::augment::AugmentDevice::Cpu;
  bool checkpoint_encoder = false;     // gradient checkpointing of encoder stages (U-Nets)
  std::optional<bool> use_checkpoint;  // SwinUNETR blocks: unset as planned (-1 in the file, 0 off, 1 on)
  InplaceMode inplace = InplaceMode::Auto;
  // Mirroring, in training and at test time, along these patch axes of a 2D / 3D configuration
  // (nnU-Net's mirror_axes and inference_allowed_mirroring_axes). Unset: every axis (nnU-Net's
  // default). Empty: no mirroring in training and none at inference (nnUNetTrainerNoMirroring,
  // which saves inference_allowed_mirroring_axes = None).
  std::optional<std::vector<int>> mirror_axes_2d, mirror_axes_3d;
  // The network this trainer builds in place of the plans' (nnU-Net's trainers that override
  // build_network_architecture, e.g. nnUNet_Primus_M_Trainer): a plans.json "architecture" block
  // ({"network_class_name", "arch_kwargs"}), null for the plans' own. It replaces the configuration's in the
  // run's plans (and so in the model folder's plans.json); training/run_folder.h use_trainer_architecture.
  json architecture;
  // The batch size this trainer sets in place of the plans' (nnU-Net's PretrainedTrainer: 2); unset: the plans'.
  std::optional<int64_t> batch_size;
  // A fine-tuning trainer's initial learning rate when the run starts from no pretrained weights
  // (nnU-Net's PretrainedTrainer family: 1e-2 where optimizer.lr is 1e-3; --from_scratch). Unset: not a
  // fine-tuning trainer. Such a trainer takes its weights from the plans' pretrain_info (docs/finetuning.md).
  std::optional<double> lr_from_scratch;
  EncoderFit encoder_fit = EncoderFit::Strict;  // "strict" or "dynamic"
  std::string source;                           // where it was read from

  // The mirroring axes of a `dim`-dimensional configuration (0..dim-1 when unset).
  std::vector<int> mirror_axes(int dim) const;

  json to_json() const;
};

// Throws Error("<where> is <value> (must be in [lo, hi])") when `value` is outside the range of the
// setting `key` ("num_epochs", "optimizer.lr", ..., and "threads"). The CLI's overrides use it
// with `where` naming the flag, the config reader with the file and key.
void check_trainer_setting(const std::string& key, double value, const std::string& where);

// Reads a trainer config; unknown keys are an error (typos must not silently train a default).
TrainerConfig load_trainer_config(const std::string& path);
TrainerConfig trainer_config_from_json(const json& j, const std::string& source);

// Looks up `name` as a file path, then configs/<name>.json next to the executable's source tree
// ($MEDSEG_CONFIG_DIR, then the shipped configs/: core/data_files.h), then nnU-Net's trainer variants in
// configs/trainer_variants.json (trainer_variants.h). "nnUNetTrainer" without a file = defaults.
// A variant medseg cannot honour throws Error("<name>: <why>").
TrainerConfig find_trainer_config(const std::string& name);
// The folders find_trainer_config searches, in order.
std::vector<std::string> trainer_config_dirs();

}  // namespace medseg::training
