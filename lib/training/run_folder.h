#pragma once
// Where a training run lives and what it reads, resolved once from the CLI's arguments, nnU-Net
// style: MEDSEG_RESULTS/DatasetXXX_Name/<Trainer>__<Plans>__<Configuration>/fold_<k>/.
#include <optional>
#include <string>
#include <vector>

#include "core/ordered_json_io.h"
#include "plans/plans.h"

namespace medseg::training {

struct RunFolders {
  std::string dataset_name;          // DatasetXXX_Name
  std::string preprocessed_dataset;  // MEDSEG_PREPROCESSED/DatasetXXX_Name
  std::string data_folder;           // .../<data_identifier>
  std::string model_folder;          // MEDSEG_RESULTS/DatasetXXX_Name/Trainer__Plans__Config
  std::string fold_folder;           // model_folder/fold_k
  std::string plans_file, dataset_json_file, fingerprint_file, splits_file;
};

struct RunInputs {
  RunFolders folders;
  std::string configuration, plans_name, trainer_name, fold;
  planning::Plans plans;
  json plans_json, fingerprint_json;  // fingerprint may be null when absent
  ordered_json dataset_json;          // keys in the file's order (label order = output order)
  std::vector<std::string> train_ids, val_ids;
  int64_t in_channels = 0, num_classes = 0;  // num_classes: network outputs (io::network_outputs)
  std::optional<int> ignore_label;           // dataset.json's "ignore" label value, if any
  std::vector<std::vector<int>> regions;     // region-based training: one per output; empty: labels
  // Cascade stage (a configuration with previous_stage): the previous stage's predictions of every
  // case on this configuration's grid, and the labels whose one-hot channels they add to the image
  // (in_channels counts them). Empty otherwise.
  std::string previous_stage_folder;
  std::vector<int> previous_stage_labels;
  // Stages after this one (next_stage) whose preprocessed data exist: the final validation writes
  // their inputs (model_folder/predicted_next_stage/<name>/), as nnU-Net's does.
  struct NextStage {
    std::string configuration, data_folder, output_folder;
  };
  std::vector<NextStage> next_stages;
};

// Resolves folders, loads plans/dataset.json/fingerprint, lists preprocessed cases and selects the
// fold's split (splits_final.json written once and reused). Throws Error/FileError naming files,
// also when a cascade stage's previous-stage predictions are missing (docs/cascade.md).
RunInputs resolve_run(const std::string& dataset, const std::string& configuration, const std::string& fold,
                      const std::string& plans_name, const std::string& trainer_name,
                      const std::string& preprocessed_root = "", const std::string& results_root = "");

// The configuration's plan alone, read as resolve_run reads it (same errors) but writing nothing:
// what the launcher checks (rank_fit.h) before it starts any rank.
planning::ConfigurationPlan read_run_plan(const std::string& dataset, const std::string& configuration,
                                          const std::string& plans_name, const std::string& preprocessed_root = "");

// nnUNetTrainerBN: the configuration's U-Net with BatchNorm (eps 1e-5, affine) in place of the plans'
// norm_op, written into in.plans_json (so the model folder's plans.json and the checkpoints build the
// same network at prediction and in nnU-Net) and in.plans. Throws Error for an architecture without
// norm_op (SwinUNETR), as nnU-Net's trainer does.
void use_batch_norm(RunInputs& in);

// A trainer that builds its own network (TrainerConfig::architecture, e.g. nnUNet_Primus_M_Trainer): the
// configuration's architecture replaced by `architecture`, in in.plans_json and in.plans, so the model folder's
// plans.json builds the same network at prediction. Throws Error naming the trainer when the configuration's
// patch size does not fit it (Primus: a multiple of its patch embedding on every axis).
void use_trainer_architecture(RunInputs& in, const json& architecture);

// A trainer that sets its own batch size (TrainerConfig::batch_size, nnU-Net's PretrainedTrainer: 2), written
// into in.plans_json and in.plans as nnU-Net writes it into the plans it trains with.
void use_trainer_batch_size(RunInputs& in, int64_t batch_size);

// How to write a cascade stage's previous-stage segmentations again, for error messages.
std::string previous_stage_hint(const RunInputs& in);

// A fresh training refuses a fold folder that holds a run (any checkpoint_*.ckpt, or metrics.jsonl):
// mixing two runs would leave e.g. the old checkpoint_final next to the new checkpoint_best, and
// prediction would use the stale one. Throws FileError naming the folder and the files found.
void refuse_used_fold_folder(const std::string& fold_folder);

}  // namespace medseg::training
