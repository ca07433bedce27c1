#pragma once
// The training loop, composed of the trainer's parts: data pipeline (lib/data), loss, optimizer and
// poly schedule, grad scaler, checkpoint store, metrics log and progress plot. It owns none of their
// logic; it sequences them, nnU-Net style (epochs of N training and M validation iterations).
//
// Exact resume: every input of an iteration is restored from a checkpoint — weights, optimizer
// state, scaler, RNG, loader position (batches are a pure function of seed/epoch/index), epoch
// loss accumulators, logs and EMA — so a resumed run continues bit-identically (CPU, --deterministic).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "training/metrics_log.h"
#include "training/run_folder.h"
#include "training/trainer_config.h"

namespace medseg::distributed {
class ProcessGroup;
}

namespace medseg::training {

struct PretrainedEncoder;  // training/pretrained_encoder.h

struct TrainOptions {
  std::string device = "cpu";          // cpu | cuda | cuda:N
  std::optional<AmpMode> amp;          // overrides the config's when set
  std::string cudnn_benchmark = "on";  // on | off (CUDA only)
  bool deterministic = false;
  bool resume = false;  // --c
  int threads = 0;      // torch intra-op threads (0: all cores)
  bool progress_bar = true;
  bool save_probabilities = false;     // --npz: final validation also writes CASE_probabilities.npy/.json
  std::optional<InplaceMode> inplace;  // --inplace; overrides the config's when set
  std::string pretrained_weights;      // -pretrained_weights: a checkpoint to start a new run from
  // Fine-tuning from nnssl: a pretrained stem and encoder to start a new run from (training/pretrained_encoder.h).
  std::shared_ptr<const PretrainedEncoder> pretrained_encoder;
  // The ranks of a data-parallel run (null: one process). Every rank constructs a Trainer with the
  // same inputs; rank 0 alone writes (training/data_parallel.h).
  std::shared_ptr<distributed::ProcessGroup> group;
  // --spatial_parallel: the group's ranks share every patch in slabs (docs/spatial_parallel.md)
  // instead of sharing the batch. Must equal the group's size.
  int spatial_parallel = 1;
  // Called on every rank after each epoch with its metrics (api/train.h). Returning false stops the
  // run as an interruption does: checkpoint_latest is written, run() returns Interrupted, and a
  // resume (`resume = true`) goes on from there. With a group, every rank must answer alike.
  std::function<bool(const EpochMetrics&)> on_epoch;
};

enum class TrainOutcome { Finished, Interrupted };

class Trainer {
 public:
  Trainer(RunInputs inputs, TrainerConfig config, TrainOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains to the last epoch (or until interrupted) and writes checkpoint_final.
  TrainOutcome run();
  // --val / --val_best: loads fold_k/<checkpoint> and only runs the final validation.
  double validate(const std::string& checkpoint_name);
  const std::string& fold_folder() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Checkpoint file names, nnU-Net's names with medseg's extension.

}  // namespace medseg::training
