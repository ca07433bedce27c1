#pragma once
// medseg_evaluate's core: compares every prediction in a folder with its reference segmentation.
#include <optional>
#include <string>
#include <vector>

#include "core/ordered_json_io.h"
#include "core/volume.h"
#include "evaluation/metrics.h"

namespace medseg::evaluation {

struct EvaluateOptions {
  std::string file_ending = ".nii.gz";
  std::vector<std::vector<int>> labels;  // foreground labels or regions to score
  std::vector<std::string> label_keys;   // their keys in summary.json ("1", "2", or "(1, 2)")
  std::optional<int> ignore_label;
  std::vector<int> declared;  // every value a segmentation may hold; when set, others are an error
  bool hd95 = false;
  int threads = 1;
  bool chill = false;  // tolerate references without prediction (nnU-Net's --chill)
};

// Labels/regions and keys from a dataset.json (background excluded), as nnU-Net's label manager;
// the ignore label ("ignore" in labels, as nnU-Net puts it); every declared value. Parsed by
// io::labels_from_json: FileError naming `source` for labels nnU-Net would refuse.
void labels_from_dataset_json(const ordered_json& dataset_json, EvaluateOptions& o,
                              const std::string& source = "dataset.json");

// Scores one prediction against its reference held in memory (the checks of evaluate_folder, the
// files named only in errors and in the result).
CaseResult evaluate_volumes(const Volume& reference, const Volume& prediction, const EvaluateOptions& o,
                            const std::string& reference_file, const std::string& prediction_file);

// Evaluates every reference file that has a prediction of the same name; throws FileError for a
// missing prediction (unless chill), an unreadable file, a prediction on another grid than its
// reference (shape, spacing, origin, direction: io::grid_mismatch) or a label value outside
// `declared` in either file: scores of such a pair would mean nothing.
// Where a summary may be written: never over a segmentation or inside the reference folder (issue 42:
// `-o GT/case_001.nii.gz` replaced a reference label with JSON). nnU-Net's default, PRED/summary.json,
// stays allowed: a file of another ending beside the predictions. Throws FileError naming `summary`.
void check_summary_path(const std::string& summary, const std::string& reference_folder,
                        const std::string& prediction_folder, const std::string& file_ending);

json evaluate_folder(const std::string& reference_folder, const std::string& prediction_folder,
                     const EvaluateOptions& o);

}  // namespace medseg::evaluation
