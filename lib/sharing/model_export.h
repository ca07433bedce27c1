#pragma once
// nnUNetv2_export_model_to_zip for one model folder: the files another machine needs to predict (and
// to see how the model was trained), with a manifest of sizes and checksums (docs/model_sharing.md).
#include <cstdint>
#include <string>
#include <vector>

#include "sharing/manifest.h"

namespace medseg::sharing {

struct ExportOptions {
  std::string model_folder;              // RESULTS/DatasetXXX_Name/Trainer__Plans__Config
  std::vector<std::string> folds;        // {} = every fold_K present (and fold_all)
  std::vector<std::string> checkpoints;  // {} = checkpoint_final; "checkpoint_best", "checkpoint_final.pth" ...
  std::string output;                    // the .zip file
  bool overwrite = false;  // replace an existing zip (never a folder, another file, or a file of the model folder)
};

// The files of `model_folder` an export takes, relative to it: plans.json and dataset.json, the
// optional JSON files beside them, the cross-validation summary and postprocessing of exactly these
// folds, and per fold the checkpoints plus debug.json, progress.png, network_architecture.pdf and
// validation/summary.json where present. Throws FileError naming what is missing.
std::vector<std::string> export_file_list(const std::string& model_folder, const std::vector<std::string>& folds,
                                          const std::vector<std::string>& checkpoint_files);

// Checks the output (outside the model folder; an existing one only with overwrite, and only a zip),
// the folder, the folds, every checkpoint (MEDSEGCK container checks) and every JSON file (its
// syntax, as the installer checks it) before it writes the zip in one atomic step. Returns the
// manifest written. Throws FileError naming the file; on any failure no output file is left.
Manifest export_model_zip(const ExportOptions& o);

}  // namespace medseg::sharing
