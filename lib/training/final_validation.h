#pragma once
// End-of-training validation on the fold's validation cases (nnU-Net's perform_actual_validation):
// sliding-window prediction of each preprocessed validation case with mirroring, exported to the
// original grid as fold_k/validation/CASE.nii.gz and scored against gt_segmentations/ into
// fold_k/validation/summary.json (nnU-Net's summary shape). With `save_probabilities` (medseg_train
// --npz) each case also gets CASE_probabilities.npy + .json, exactly as medseg_predict
// --save_probabilities writes them (docs/predict.md), so ensembles can be chosen later.
#include <torch/nn/module.h>

#include <vector>

#include "models/network.h"
#include "training/run_folder.h"

namespace medseg::training {

class DataParallel;

// Returns the mean foreground Dice. Under data parallelism (`dp` given) each rank predicts every
// R-th case, and rank 0 scores the folder once all have written theirs (the others return NaN).
double run_final_validation(models::SegmentationNetworkImpl& net, const RunInputs& in, const torch::Device& device,
                            const std::vector<int64_t>& mirror_axes, bool save_probabilities = false,
                            const DataParallel* dp = nullptr);

}  // namespace medseg::training
