#pragma once
// The one list of what a model folder may hold in a model zip, shared by the exporter (what it
// takes) and the installer (what it accepts): plans.json and dataset.json, the optional JSON files
// beside them, the cross-validation summary and postprocessing of exactly the exported folds, and per
// exported fold its exported checkpoints, debug.json, progress.png, network_architecture.pdf and
// validation/summary.json. Anything else (a pickle .pth, a run.sh, a file in another folder) is no
// part of a model and is never installed (docs/model_sharing.md).
#include <cstdint>
#include <string>
#include <vector>

namespace medseg::sharing {

inline constexpr const char* kRequiredModelFiles[] = {"plans.json", "dataset.json"};
inline constexpr const char* kOptionalModelFiles[] = {"dataset_fingerprint.json", "trainer_config.json",
                                                      "postprocessing.json"};
inline constexpr const char* kCrossvalFiles[] = {"summary.json", "postprocessing.json"};
inline constexpr const char* kOptionalFoldFiles[] = {"debug.json", "progress.png", "network_architecture.pdf",
                                                     "validation/summary.json"};

// "crossval_results_folds_0_1_2" for folds {"0", "1", "2"} (nnU-Net's name).
std::string crossval_folder_name(const std::vector<std::string>& folds);

// "" when `rel` (a path relative to the model folder) is a file an export of `folds` (e.g. "0",
// "all") and `checkpoints` (file names, "checkpoint_final.ckpt") holds, else why not.
std::string model_file_problem(const std::string& rel, const std::vector<std::string>& folds,
                               const std::vector<std::string>& checkpoints);

// The most bytes a file `rel` of a model folder may hold: checkpoints are as large as the network
// (bounded by the free space alone); the JSON, PNG and PDF files beside them are small, and a zip
// entry that claims more is refused before it is written.
uint64_t max_model_file_bytes(const std::string& rel);

// How much larger than its compressed data an entry may inflate: checkpoints (float weights, which
// the exporter stores uncompressed) barely deflate; a checkpoint entry that would inflate more is a
// zip bomb, not weights. Other files are bounded by max_model_file_bytes.
inline constexpr uint64_t kMaxCheckpointInflation = 20;

}  // namespace medseg::sharing
