// medseg-app: itk
// medseg_determine_postprocessing: nnU-Net's postprocessing rule on cross-validation predictions
// (docs/postprocessing.md). Either a folder of predictions and its references, or a model folder,
// whose folds' validation predictions are gathered first and whose postprocessing.json then makes
// medseg_predict postprocess.
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "core/error.h"
#include "core/json_io.h"
#include "core/ordered_json_io.h"
#include "core/log.h"
#include "postprocessing/crossval.h"
#include "postprocessing/determine.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"Choose postprocessing (keep largest connected components) from cross-validation results",
               "medseg_determine_postprocessing"};
  std::string input, ref, djfile, pfile, model;
  std::vector<std::string> folds;
  bool remove_postprocessed = false;
  int threads = medseg::cli::default_threads();
  auto* in_opt = app.add_option("-i,--input", input, "Folder of predicted segmentations (cross-validation results)");
  app.add_option("--ref", ref,
                 "Folder of reference segmentations (default with --model_folder: the dataset's "
                 "gt_segmentations under MEDSEG_PREPROCESSED)");
  auto* m_opt = app.add_option("-m,--model_folder", model,
                               "Trained model folder: gathers fold_K/validation into crossval_results_folds_*, "
                               "determines there and copies postprocessing.json into the model folder");
  app.add_option("-f,--folds", folds, "Folds to gather with --model_folder (default: every fold_K present)");
  app.add_option("--dataset_json", djfile, "dataset.json (default: INPUT/dataset.json, or the model folder's)");
  app.add_option("--plans_json", pfile, "plans.json (accepted for nnU-Net compatibility; checked for readability)");
  app.add_option("--np", threads, "Threads")->capture_default_str();
  app.add_flag("--remove_postprocessed", remove_postprocessed,
               "Do not keep the postprocessed segmentations (INPUT/postprocessed/)");
  in_opt->excludes(m_opt);
  return medseg::cli::run(argc, argv, app, [&] {
    if (input.empty() && model.empty()) throw medseg::Error("give -i PREDICTIONS --ref REFERENCES, or -m MODEL_FOLDER");
    medseg::postprocessing::DetermineOptions o;
    if (djfile.empty()) djfile = (fs::path(model.empty() ? input : model) / "dataset.json").string();
    if (!pfile.empty()) medseg::read_json(pfile);
    medseg::evaluation::labels_from_dataset_json(medseg::read_ordered_json(djfile), o.evaluation, djfile);
    if (!model.empty()) {
      const auto cv = medseg::postprocessing::gather_crossval(model, folds, ref, o.evaluation.file_ending);
      std::printf("gathered %lld validation case(s) of %zu fold(s) -> %s\n", static_cast<long long>(cv.cases),
                  cv.folds.size(), cv.folder.c_str());
      o.predictions = cv.folder;
      o.references = cv.references;
    } else {
      if (ref.empty()) throw medseg::Error("--ref REFERENCES is required with -i");
      o.predictions = input;
      o.references = ref;
    }
    o.evaluation.threads = threads;
    o.keep_postprocessed = !remove_postprocessed;
    const auto pp = medseg::postprocessing::determine_postprocessing(o);
    const std::string written = (fs::path(o.predictions) / "postprocessing.json").string();
    if (!model.empty()) {
      const std::string target = (fs::path(model) / "postprocessing.json").string();
      medseg::postprocessing::write_postprocessing(target, pp);
      std::printf("%zu step(s) chosen -> %s (medseg_predict applies it; --disable_postprocessing skips it)\n",
                  pp.steps.size(), target.c_str());
    } else {
      std::printf("%zu step(s) chosen -> %s\n", pp.steps.size(), written.c_str());
    }
    std::printf("mean foreground Dice %s -> %s\n", pp.before.at("foreground_mean").at("Dice").dump().c_str(),
                pp.after.at("foreground_mean").at("Dice").dump().c_str());
    return 0;
  });
}
