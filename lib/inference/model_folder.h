#pragma once
// A trained model folder, as the trainer writes it (docs/predict.md):
//   RESULTS/DatasetXXX_Name/<Trainer>__<Plans>__<Configuration>/
//     plans.json dataset.json [dataset_fingerprint.json trainer_config.json]
//     fold_K/checkpoint_final.ckpt [checkpoint_best.ckpt checkpoint_latest.ckpt]   (K = 0..4 or "all")
// The JSON files of the folder win; the copies inside the checkpoint are the fallback, so a folder
// holding only fold_K/<checkpoint> is enough to predict.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/container.h"
#include "io/dataset.h"
#include "plans/plans.h"

namespace medseg::inference {

// RESULTS/<dataset folder>/<trainer>__<plans>__<configuration>; `dataset` is resolved like -d.
std::string model_folder_path(const std::string& results_root, const std::string& dataset, const std::string& trainer,
                              const std::string& plans, const std::string& configuration);

// Folds present in `folder` (fold_K subfolders), numerically sorted, "all" left out as nnU-Net does.
std::vector<std::string> available_folds(const std::string& folder);

// "checkpoint_final" / "checkpoint_final.ckpt" / "checkpoint_final.pth" -> "checkpoint_final.ckpt".
std::string checkpoint_file_name(const std::string& chk);

struct FoldWeights {
  std::string fold;  // "0".."4" or "all"
  std::string path;  // the checkpoint file
  checkpoint::NamedTensors weights;
};

struct ModelFolder {
  std::string folder;
  std::string configuration;
  std::string trainer_name;
  nlohmann::json plans_json;
  nlohmann::ordered_json dataset_json;  // keys in the file's order (region outputs follow "labels")
  planning::Plans plans;
  io::DatasetInfo dataset;
  int64_t in_channels = 0;
  int64_t num_classes = 0;           // network outputs (labels without "ignore", or regions)
  std::vector<int64_t> mirror_axes;  // inference_allowed_mirroring_axes (patch axes)
  std::vector<FoldWeights> folds;
  nlohmann::json imported_from;  // set for models converted from nnU-Net
};

// Loads `folds` ({} = every available fold; {"all"} = fold_all) with checkpoint `chk`. Throws Error
// naming -f for a fold given twice (parse_folds), FileError naming the folder or checkpoint for a
// missing fold, a missing/corrupt checkpoint, or folds that disagree on configuration, channels or classes.
ModelFolder load_model_folder(const std::string& folder, const std::vector<std::string>& folds,
                              const std::string& chk = "checkpoint_final");

}  // namespace medseg::inference
