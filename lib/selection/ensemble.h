#pragma once
// nnU-Net's ensembling (nnUNetv2_ensemble): the saved probabilities of several prediction folders
// (medseg_predict --save_probabilities, or a final validation with --npz) averaged case by case and
// turned into segmentations (argmax over labels; regions above 0.5 painted in regions_class_order).
#include <string>
#include <vector>

namespace medseg::selection {

struct EnsembleOptions {
  // Two or more folders of CASE_probabilities.npy/.json, or of nnU-Net's CASE.npz (key "probabilities") beside
  // the segmentation CASE<file_ending> (its geometry) and the folder's dataset.json (its classes).
  std::vector<std::string> inputs;
  std::string output;
  std::string file_ending = ".nii.gz";  // of the written segmentations
  bool save_probabilities = false;      // also write the averaged probabilities
  int threads = 1;
};

// Returns the number of cases written. Every folder must hold the same cases, and a case's
// probabilities must agree across folders (classes, shape, geometry): else FileError naming the
// file, before anything is written. The output folder is created (never one of the inputs);
// dataset.json and plans.json are copied from the first input when present.
int64_t ensemble_folders(const EnsembleOptions& o);

}  // namespace medseg::selection
