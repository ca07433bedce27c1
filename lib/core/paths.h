#pragma once
// Where datasets, preprocessed data and results live, following nnU-Net's conventions:
// MEDSEG_RAW / MEDSEG_PREPROCESSED / MEDSEG_RESULTS (nnUNet_raw & co. are accepted as fallbacks).
#include <string>
#include <vector>

namespace medseg {

enum class Root { Raw, Preprocessed, Results };

// Returns the root folder for `which`: `flag` if non-empty, else the environment variable.
// Throws Error with a hint naming the variable when neither is set.
std::string root_folder(Root which, const std::string& flag = "");

// Resolves "4", "004", "Dataset004_Hippocampus" or "Hippocampus" to a folder name
// "DatasetXXX_Name" found under `root`. Throws Error listing candidates when not found/ambiguous.
std::string find_dataset_name(const std::string& root, const std::string& id_or_name);

// "DatasetXXX_Name" -> XXX; -1 if the name does not follow the convention.
int dataset_id_of(const std::string& folder_name);

// Lists DatasetXXX_* folders under root (sorted).
std::vector<std::string> list_datasets(const std::string& root);

// A second DatasetXXX_* folder with the id of another under `root` would make every `-d XXX`
// ambiguous: throws FileError naming that other folder and `folder_name` ("<root>/Dataset901_A: dataset
// id 901 is taken by this folder; Dataset901_B beside it would make -d 901 ambiguous (<hint>)").
// No-op when `folder_name` itself is the one there, or has no id.
void refuse_taken_dataset_id(const std::string& root, const std::string& folder_name, const std::string& hint);

// The K of the fold_K folders of a model folder, numerically sorted ("all" left out, as nnU-Net
// does); with `containing`, only folds holding that subfolder (e.g. "validation"). {} when `folder`
// does not exist.
std::vector<std::string> numbered_folds(const std::string& folder, const std::string& containing = "");

}  // namespace medseg
