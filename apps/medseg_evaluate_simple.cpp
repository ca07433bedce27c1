// medseg-app: itk
// medseg_evaluate_simple: nnUNetv2_evaluate_simple - Dice/IoU of a folder of predictions against
// references for labels given on the command line, without dataset.json or plans; written as
// nnU-Net's summary.json (labels as keys "1", "2", ...).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "evaluation/evaluate_folder.h"

namespace fs = std::filesystem;

namespace {

// The references' file ending, from the first file of the folder (by name), as nnU-Net takes it,
// except that the two-part ".nii.gz" is kept whole (nnU-Net's os.path.splitext gives ".gz").
std::string file_ending_of(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw medseg::FileError(folder, "not a folder of reference segmentations");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  if (names.empty()) throw medseg::FileError(folder, "holds no reference segmentation");
  const std::string first = *std::min_element(names.begin(), names.end());
  for (const char* two_part : {".nii.gz", ".seg.nrrd"})
    if (first.size() > std::char_traits<char>::length(two_part) &&
        first.compare(first.size() - std::char_traits<char>::length(two_part), std::string::npos, two_part) == 0)
      return two_part;
  const std::string ext = fs::path(first).extension().string();
  if (ext.empty()) throw medseg::FileError(folder + "/" + first, "has no file ending to tell its format by");
  return ext;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Evaluate predicted segmentations against references for the given labels (nnU-Net summary.json)",
               "medseg_evaluate_simple"};
  std::string gt, pred, out;
  std::vector<int> labels;
  int ignore_label = -1;
  medseg::evaluation::EvaluateOptions o;
  o.threads = medseg::cli::default_threads();
  app.add_option("gt_folder", gt, "Folder with reference segmentations")->required();
  app.add_option("pred_folder", pred, "Folder with predicted segmentations")->required();
  app.add_option("-l", labels, "Labels to score (e.g. -l 1 2 3)")->required()->expected(1, 1 << 16);
  auto* il = app.add_option("--il", ignore_label, "Ignore label: its voxels count nowhere");
  app.add_option("-o,--output", out, "Output summary.json (default: PRED_FOLDER/summary.json)");
  app.add_option("--np", o.threads, "Threads")->capture_default_str();
  app.add_flag("--chill", o.chill, "Do not fail when references have no prediction");
  return medseg::cli::run(argc, argv, app, [&] {
    for (int l : labels) {
      MEDSEG_CHECK(l > 0, "-l: label ", l, " is not a foreground label (1 or more)");
      o.labels.push_back({l});
      o.label_keys.push_back(std::to_string(l));
    }
    if (il->count() > 0) o.ignore_label = ignore_label;
    o.file_ending = file_ending_of(gt);
    if (out.empty()) out = (fs::path(pred) / "summary.json").string();
    medseg::evaluation::check_summary_path(out, gt, pred, o.file_ending);
    const auto summary = medseg::evaluation::evaluate_folder(gt, pred, o);
    medseg::write_json(out, summary);
    const auto& fg = summary.at("foreground_mean");
    std::printf("%zu case(s): mean foreground Dice %s, IoU %s -> %s\n", summary.at("metric_per_case").size(),
                fg.at("Dice").dump().c_str(), fg.at("IoU").dump().c_str(), out.c_str());
    return 0;
  });
}
