#pragma once
// nnU-Net's accumulate_cv_results: the validation predictions of a model folder's folds
// (fold_K/validation/, written by the final validation) gathered into one folder,
// MODEL/crossval_results_folds_0_1_2_3_4, the input of postprocessing and model selection.
#include <string>
#include <vector>

namespace medseg::postprocessing {

struct CrossvalResults {
  std::string folder;      // MODEL/crossval_results_folds_<folds joined by _>
  std::string references;  // the reference segmentations to score it against
  std::vector<std::string> folds;
  int64_t cases = 0;
};

// Copies every fold's validation segmentations (and saved probabilities, when present) plus the
// model's dataset.json and plans.json. `folds` {} = every fold_K with a validation folder; a fold
// that is no fold name, or one given twice, is an Error naming -f (parse_folds).
// `references` "" = MEDSEG_PREPROCESSED/<the model's dataset folder>/gt_segmentations. Throws
// FileError naming the folder for a fold without validation results, a case validated in two
// folds, or missing references. The folder is built aside and moved into place when complete.
// `output_folder` "" = MODEL/crossval_results_folds_...; another folder must be empty or absent
// (nnU-Net's -o: nothing of the user's is replaced).
CrossvalResults gather_crossval(const std::string& model_folder, std::vector<std::string> folds,
                                const std::string& references, const std::string& file_ending,
                                const std::string& output_folder = "");

}  // namespace medseg::postprocessing
