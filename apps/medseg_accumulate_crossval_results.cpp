// medseg-app: itk
// medseg_accumulate_crossval_results: nnUNetv2_accumulate_crossval_results - the validation
// predictions of a model's folds gathered into one folder (postprocessing/crossval.h) and scored
// against the references there (summary.json), as nnU-Net does before choosing a configuration.
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/path_component.h"
#include "core/paths.h"
#include "core/strings.h"
#include "evaluation/evaluate_folder.h"
#include "postprocessing/crossval.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{
      "Gather a model's cross-validation predictions into one folder and evaluate them "
      "(nnUNetv2_accumulate_crossval_results)",
      "medseg_accumulate_crossval_results"};
  std::string dataset, configuration, output, plans = "nnUNetPlans", trainer = "nnUNetTrainer";
  std::vector<std::string> folds;
  medseg::evaluation::EvaluateOptions eval;
  eval.threads = medseg::cli::default_threads();
  app.add_option("dataset", dataset, "Dataset name or id")->required();
  app.add_option("-c", configuration, "Configuration")->required();
  app.add_option("-o", output, "Output folder, empty or new (default: MODEL/crossval_results_folds_...)");
  app.add_option("-f", folds, "Folds (default: every fold with validation results)");
  app.add_option("-p", plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr", trainer, "Trainer name")->capture_default_str();
  app.add_option("--np", eval.threads, "Threads")->capture_default_str();
  return medseg::cli::run(argc, argv, app, [&] {
    medseg::check_path_component(configuration, "-c");
    medseg::check_path_component(plans, "-p");
    medseg::check_path_component(trainer, "-tr");
    const std::string results = medseg::root_folder(medseg::Root::Results);
    const fs::path model = fs::path(results) / medseg::find_dataset_name(results, dataset) /
                           (trainer + "__" + plans + "__" + configuration);
    const std::string dj = (model / "dataset.json").string();
    if (!fs::exists(dj)) throw medseg::FileError(model.string(), "no trained model here (dataset.json missing)");
    medseg::evaluation::labels_from_dataset_json(medseg::read_ordered_json(dj), eval, dj);
    const auto cv = medseg::postprocessing::gather_crossval(model.string(), folds, "", eval.file_ending, output);
    eval.chill = true;  // the folds' cases are scored; references of cases no given fold validated are not
    const auto summary = medseg::evaluation::evaluate_folder(cv.references, cv.folder, eval);
    const std::string out = (fs::path(cv.folder) / "summary.json").string();
    medseg::write_json(out, summary);
    std::printf("%lld case(s) of fold(s) %s: mean foreground Dice %s -> %s\n", static_cast<long long>(cv.cases),
                medseg::join(cv.folds, " ").c_str(), summary.at("foreground_mean").at("Dice").dump().c_str(),
                out.c_str());
    return 0;
  });
}
