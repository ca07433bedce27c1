// medseg-app: itk
// medseg_find_best_configuration: picks the best configuration or pairwise ensemble from the
// cross-validation results, determines its postprocessing and writes how to run it
// (docs/model_selection.md), as nnUNetv2_find_best_configuration.
#include <cstdio>

#include "cli_common.h"
#include "selection/find_best.h"

int main(int argc, char** argv) {
  CLI::App app{"Find the best configuration (or ensemble) from cross-validation results",
               "medseg_find_best_configuration"};
  medseg::selection::FindBestOptions o;
  o.threads = medseg::cli::default_threads();
  bool no_ensembling = false;
  app.add_option("dataset", o.dataset, "Dataset id or name")->required();
  app.add_option(
      "-c,--configurations", o.configurations,
      "Configurations to compare (default: those of 2d 3d_fullres 3d_lowres 3d_cascade_fullres that the plans define)");
  app.add_option("-p,--plans", o.plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr,--trainer", o.trainer, "Trainer name")->capture_default_str();
  app.add_option("-f,--folds", o.folds, "Folds (default: every fold with validation results)");
  app.add_option("--np", o.threads, "Threads")->capture_default_str();
  app.add_flag("--disable_ensembling", no_ensembling, "Do not try pairwise ensembles");
  return medseg::cli::run(argc, argv, app, [&] {
    o.ensembling = !no_ensembling;
    const auto info = medseg::selection::find_best_configuration(o);
    const auto& b = info.at("best_model_or_ensemble");
    std::printf("best: %s (see inference_instructions.txt in the results folder of %s)\n",
                b.at("name").get<std::string>().c_str(), info.at("dataset").get<std::string>().c_str());
    return 0;
  });
}
