#pragma once
// nnUNetv2_install_pretrained_model_from_zip, made safe: the whole zip is checked (entry names, the
// manifest's sizes and CRC32s, every checkpoint's container checks) in a staging folder next to the
// destination, which then moves into place in one rename. An existing model folder is replaced only
// when asked (nnU-Net overwrites silently). On any failure nothing is left behind.
#include <string>

#include "sharing/manifest.h"

namespace medseg::sharing {

struct InstallResult {
  std::string model_folder;  // RESULTS/DatasetXXX_Name/Trainer__Plans__Config
  Manifest manifest;
};

// Throws FileError naming the zip and the entry (or the destination) and the problem; also when the
// results root holds another DatasetXXX_* folder with the zip's dataset id (refuse_taken_dataset_id).
InstallResult install_model_zip(const std::string& zip_path, const std::string& results_root, bool overwrite);

}  // namespace medseg::sharing
