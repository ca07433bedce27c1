// medseg-app: itk
// medseg_evaluate: Dice/IoU (and optionally HD95) of a folder of predictions against references,
// written as nnU-Net's summary.json.
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/log.h"
#include "evaluation/evaluate_folder.h"

int main(int argc, char** argv) {
  CLI::App app{"Evaluate predicted segmentations against references (nnU-Net summary.json)", "medseg_evaluate"};
  std::string gt, pred, djfile, pfile, out;
  medseg::evaluation::EvaluateOptions o;
  o.threads = medseg::cli::default_threads();
  app.add_option("gt_folder", gt, "Folder with reference segmentations")->required();
  app.add_option("pred_folder", pred, "Folder with predicted segmentations")->required();
  app.add_option("--djfile", djfile, "dataset.json (labels, file_ending)")->required();
  app.add_option("--pfile", pfile, "plans.json (accepted for nnU-Net compatibility; checked for readability)");
  app.add_option("-o,--output", out, "Output summary.json (default: PRED_FOLDER/summary.json)");
  app.add_option("--np", o.threads, "Threads")->capture_default_str();
  app.add_flag("--hd95", o.hd95, "Also compute the 95th-percentile Hausdorff distance (mm)");
  app.add_flag("--chill", o.chill, "Do not fail when references have no prediction");
  return medseg::cli::run(argc, argv, app, [&] {
    medseg::evaluation::labels_from_dataset_json(medseg::read_ordered_json(djfile), o, djfile);
    if (!pfile.empty()) medseg::read_json(pfile);
    if (out.empty()) out = (std::filesystem::path(pred) / "summary.json").string();
    medseg::evaluation::check_summary_path(out, gt, pred, o.file_ending);
    const auto summary = medseg::evaluation::evaluate_folder(gt, pred, o);
    medseg::write_json(out, summary);
    const auto& fg = summary.at("foreground_mean");
    std::printf("%zu case(s): mean foreground Dice %s, IoU %s -> %s\n", summary.at("metric_per_case").size(),
                fg.at("Dice").dump().c_str(), fg.at("IoU").dump().c_str(), out.c_str());
    for (auto it = summary.at("mean").begin(); it != summary.at("mean").end(); ++it)
      std::printf("  label %s: Dice %s\n", it.key().c_str(), it.value().at("Dice").dump().c_str());
    return 0;
  });
}
