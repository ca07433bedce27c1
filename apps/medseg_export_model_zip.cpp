// medseg_export_model_zip: nnUNetv2_export_model_to_zip for one trained model folder, with a manifest
// of sizes and checksums that medseg_install_model_zip checks (docs/model_sharing.md).
#include <cstdio>

#include "cli_common.h"
#include "core/error.h"
#include "core/paths.h"
#include "inference/model_folder.h"
#include "sharing/model_export.h"

using namespace medseg;

int main(int argc, char** argv) {
  CLI::App app{"Export a trained model folder to a zip file (nnUNetv2_export_model_to_zip)", "medseg_export_model_zip"};
  std::string dataset, configuration, plans = "nnUNetPlans", trainer = "nnUNetTrainer";
  sharing::ExportOptions o;
  app.add_option("-d,--dataset", dataset, "Dataset id or name (with -c; the model is under MEDSEG_RESULTS)");
  app.add_option("-c,--configuration", configuration, "Configuration, e.g. 3d_fullres");
  app.add_option("-p,--plans", plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr", trainer, "Trainer class name")->capture_default_str();
  app.add_option("-m,--model", o.model_folder, "Model folder (instead of -d/-c/-p/-tr)");
  app.add_option("-f,--folds", o.folds, "Folds to export: 0 1 2 3 4 or all (default: every fold_K present)");
  app.add_option("--chk", o.checkpoints, "Checkpoint name(s) to export per fold (default: checkpoint_final)");
  app.add_option("-o,--output", o.output, "Output zip file")->required();
  app.add_flag("--overwrite", o.overwrite, "Replace an existing output file");
  return cli::run(argc, argv, app, [&] {
    if (!o.model_folder.empty() && !dataset.empty())
      throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER, not both");
    if (o.model_folder.empty()) {
      if (dataset.empty() || configuration.empty()) throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER");
      o.model_folder = inference::model_folder_path(root_folder(Root::Results), dataset, trainer, plans, configuration);
    }
    const sharing::Manifest m = sharing::export_model_zip(o);
    std::string folds;
    for (const std::string& f : m.folds) folds += (folds.empty() ? "" : " ") + f;
    std::printf("wrote %s: %s, fold(s) %s, %zu file(s)\n", o.output.c_str(), m.model_folder.c_str(), folds.c_str(),
                m.files.size());
    return 0;
  });
}
