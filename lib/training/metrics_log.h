#pragma once
// Per-epoch training metrics as JSON lines (one object per epoch, appended as training goes),
// plus nnU-Net's EMA of the pseudo Dice. Torch-free.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace medseg::training {

struct EpochMetrics {
  int64_t epoch = 0;
  double train_loss = 0, val_loss = 0;
  std::vector<double> pseudo_dice;  // per foreground class; NaN where undefined
  double mean_fg_dice = 0;          // nanmean of pseudo_dice
  double ema_pseudo_dice = 0;
  double lr = 0;
  double epoch_time = 0;  // seconds
};

nlohmann::json to_json(const EpochMetrics& m);            // NaN is written as null
EpochMetrics metrics_from_json(const nlohmann::json& j);  // null reads back as NaN
nlohmann::json to_json(const std::vector<EpochMetrics>& log);
std::vector<EpochMetrics> metrics_from_json_array(const nlohmann::json& j);

// Mean of the non-NaN values; NaN if there are none (numpy.nanmean).
double nanmean(const std::vector<double>& v);

// nnU-Net's EMA of the pseudo Dice: the first value as is, then
// momentum * previous + (1 - momentum) * value (nnU-Net's momentum: 0.9, the config's ema_momentum).
double update_ema(std::optional<double> previous, double value, double momentum = 0.9);

// Appends one line per epoch to `path` (created with its folder when missing).
void append_metrics(const std::string& path, const EpochMetrics& m);

// All entries in the file. Throws FileError naming the file and the line for a malformed line.
std::vector<EpochMetrics> read_metrics(const std::string& path);

// Keeps only entries with epoch < `epochs` (atomic rewrite): used when resuming from a checkpoint
// older than the log.
void truncate_metrics(const std::string& path, int64_t epochs);

}  // namespace medseg::training
