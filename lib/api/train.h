#pragma once
// medseg's embedding API for training (docs/api.md): train one fold of a preprocessed dataset, as
// medseg_train DATASET CONFIGURATION FOLD does in one process, with a callback after every epoch that
// sees the epoch's figures and may stop the run (it then resumes from checkpoint_latest with
// `resume = true`). Errors are medseg::Error with the CLI's messages. No torch header is included.
//
// The example below compiles (ApiDocExamples in tests/base/stage_include_test.cpp):
//   medseg::api::TrainFoldOptions o;
//   o.epochs = 50;
//   o.on_epoch = [](const medseg::api::EpochReport& e) {
//     std::printf("%lld %.3f\n", static_cast<long long>(e.epoch), e.ema_dice);
//     return true;
//   };
//   medseg::api::train_fold("Dataset003_Liver", "3d_fullres", "0", o);
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace medseg::api {

struct EpochReport {
  int64_t epoch = 0, epochs = 0;  // the epoch just finished (from 0) and the run's total
  double train_loss = 0, val_loss = 0;
  std::vector<double> pseudo_dice;  // per foreground class (NaN where undefined)
  double ema_dice = 0;              // nnU-Net's EMA of the mean pseudo Dice
  double learning_rate = 0, seconds = 0;
};

struct TrainFoldOptions {
  std::string trainer = "nnUNetTrainer";  // a configs/ trainer or an nnU-Net variant name (docs/trainer_variants.md)
  std::string plans = "nnUNetPlans";
  std::string preprocessed, results;  // roots; empty: MEDSEG_PREPROCESSED / MEDSEG_RESULTS (nnU-Net's names too)
  std::string device = "cpu";         // "cpu", "cuda" or "cuda:N"
  int threads = 0;                    // torch intra-op threads; 0: all cores
  bool resume = false;                // continue from the fold's newest checkpoint (medseg_train --c)
  std::optional<int64_t> epochs, iterations_per_epoch, val_iterations_per_epoch;  // the trainer's otherwise
  bool progress_bar = false;
  // After every epoch; returning false stops the run after writing checkpoint_latest.
  std::function<bool(const EpochReport&)> on_epoch;
};

enum class TrainResult { Finished, Stopped };

// Trains `fold` ("0".."4" or "all") of `dataset` (id or name) into the results folder, then runs the
// final validation, as medseg_train does. Stopped: on_epoch returned false, or SIGINT/SIGTERM.
TrainResult train_fold(const std::string& dataset, const std::string& configuration, const std::string& fold,
                       const TrainFoldOptions& options = {});

}  // namespace medseg::api
