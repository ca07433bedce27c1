#include "postprocessing/crossval.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/output_folder.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/strings.h"
#include "io/image_folder.h"

namespace fs = std::filesystem;

namespace medseg::postprocessing {
namespace {

// The files of one case in a validation folder: the segmentation and its saved probabilities.
bool belongs_to_case(const std::string& name, const std::string& file_ending) {
  return (name.size() > file_ending.size() && ends_with(name, file_ending)) || ends_with(name, "_probabilities.npy") ||
         ends_with(name, "_probabilities.json");
}

}  // namespace

CrossvalResults gather_crossval(const std::string& model_folder, std::vector<std::string> folds,
                                const std::string& references, const std::string& file_ending,
                                const std::string& output_folder) {
  const fs::path model(model_folder);
  MEDSEG_CHECK_FILE(fs::is_directory(model), model_folder, "model folder not found");
  folds = parse_folds(folds, "-f");  // they name folders: numbers or "all", each once
  if (folds.empty()) folds = numbered_folds(model.string(), "validation");
  MEDSEG_CHECK_FILE(!folds.empty(), model_folder,
                    "no fold_K/validation folder: run the final validation (medseg_train ... --val) first");
  CrossvalResults r;
  r.folds = folds;
  r.folder = (model / ("crossval_results_folds_" + join(folds, "_"))).string();
  if (!output_folder.empty()) {
    std::error_code ec;
    MEDSEG_CHECK_FILE(
        !fs::exists(output_folder, ec) || (fs::is_directory(output_folder, ec) && fs::is_empty(output_folder, ec)),
        output_folder, "exists and is not empty: give an empty or new output folder (-o)");
    r.folder = output_folder;
  }
  r.references = references;
  if (r.references.empty()) {
    const std::string dataset = fs::absolute(model).lexically_normal().parent_path().filename().string();
    r.references = (fs::path(root_folder(Root::Preprocessed)) / dataset / "gt_segmentations").string();
  }
  MEDSEG_CHECK_FILE(fs::is_directory(r.references), r.references, "reference folder not found");

  std::map<std::string, std::string> origin;  // case file -> the fold it came from
  StagedFolder staged(r.folder);
  for (const auto& f : folds) {
    const fs::path val = model / ("fold_" + f) / "validation";
    MEDSEG_CHECK_FILE(fs::is_directory(val), val.string(), "not found: fold ", f,
                      " has no validation results (medseg_train ... --val)");
    for (const auto& e : fs::directory_iterator(val)) {
      const std::string n = e.path().filename().string();
      if (!e.is_regular_file() || !belongs_to_case(n, file_ending)) continue;
      const auto [it, fresh] = origin.emplace(n, f);
      MEDSEG_CHECK_FILE(fresh, e.path().string(), "also in fold ", it->second, "'s validation: the folds overlap");
      fs::copy_file(e.path(), fs::path(staged.path()) / n);
      r.cases += ends_with(n, file_ending);
    }
  }
  MEDSEG_CHECK_FILE(r.cases != 0, model_folder, "the folds' validation folders hold no ", file_ending, " file");
  io::copy_dataset_jsons(model_folder, staged.path());
  staged.commit(output_folder.empty());  // -o: never over something that appeared meanwhile
  return r;
}

}  // namespace medseg::postprocessing
