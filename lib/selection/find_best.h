#pragma once
// nnU-Net's find_best_configuration: the cross-validation results of several trained
// configurations, and of every pair of them ensembled, scored against the references; the best by
// mean foreground Dice, its postprocessing, and the commands that reproduce it on new images
// (RESULTS/DatasetXXX/inference_instructions.txt and inference_information.json).
#include <string>
#include <vector>

#include "core/json_io.h"

namespace medseg::selection {

struct FindBestOptions {
  std::string dataset;  // id or name
  // e.g. 2d 3d_fullres; {} = those of 2d, 3d_fullres, 3d_lowres and 3d_cascade_fullres that the plans
  // (MEDSEG_PREPROCESSED/DatasetXXX/<plans>.json) define, as nnU-Net's default list
  std::vector<std::string> configurations;
  std::string plans = "nnUNetPlans";
  std::string trainer = "nnUNetTrainer";
  std::vector<std::string> folds;  // {} = every fold with validation results (the same in all models)
  bool ensembling = true;
  int threads = 1;
};

// Returns inference_information.json's content (also written). Throws Error naming the flag for a
// configuration, trainer or plans name that is not a single folder name (check_path_component) or a
// configuration or fold given twice, before anything is read; FileError naming the folder for a
// configuration that was not trained or validated, before anything is written. A failure at a later
// step removes the crossval_results_folds_* and ensemble folders this call made.
json find_best_configuration(const FindBestOptions& o);

}  // namespace medseg::selection
