#include "sharing/model_files.h"

#include <algorithm>

#include "core/path_component.h"
#include "core/strings.h"

namespace medseg::sharing {

namespace {

constexpr uint64_t kMaxSideFileBytes = 64ull << 20;
constexpr char kNotAModelFile[] =
    "is not a file a model folder holds (plans, dataset.json, the folds' checkpoints, summaries, progress and "
    "postprocessing files)";

bool listed(const std::string& name, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <std::size_t N>
bool listed(const std::string& name, const char* const (&names)[N]) {
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
}

}  // namespace

std::string crossval_folder_name(const std::vector<std::string>& folds) {
  std::string name = "crossval_results_folds";
  for (const std::string& f : folds) name += "_" + f;
  return name;
}

std::string model_file_problem(const std::string& rel, const std::vector<std::string>& folds,
                               const std::vector<std::string>& checkpoints) {
  const auto slash = rel.find('/');
  if (slash == std::string::npos) {
    if (listed(rel, kRequiredModelFiles) || listed(rel, kOptionalModelFiles)) return "";
    return kNotAModelFile;
  }
  const std::string folder = rel.substr(0, slash), rest = rel.substr(slash + 1);
  if (folder == crossval_folder_name(folds)) {
    if (listed(rest, kCrossvalFiles)) return "";
    return kNotAModelFile;
  }
  if (folder.rfind("fold_", 0) != 0) return kNotAModelFile;
  if (!listed(folder.substr(5), folds)) return "is in " + folder + ", which the manifest's folds do not list";
  if (listed(rest, kOptionalFoldFiles)) return "";
  if (ends_with(rest, ".ckpt") && path_component_problem(rest).empty()) {
    if (listed(rest, checkpoints)) return "";
    return "is a checkpoint the manifest's checkpoints do not list";
  }
  return kNotAModelFile;
}

uint64_t max_model_file_bytes(const std::string& rel) {
  return ends_with(rel, ".ckpt") ? UINT64_MAX : kMaxSideFileBytes;
}

}  // namespace medseg::sharing
