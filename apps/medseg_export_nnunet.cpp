// medseg_export_nnunet: a medseg model folder as nnU-Net v2's results folder, which nnUNetv2_predict and
// nnUNetPredictor load (docs/model_sharing.md, "To nnU-Net").
#include <cstdio>

#include "cli_common.h"
#include "core/error.h"
#include "core/paths.h"
#include "inference/model_folder.h"
#include "sharing/nnunet_export.h"

using namespace medseg;

int main(int argc, char** argv) {
  CLI::App app{
      "Write a medseg model folder as an nnU-Net v2 model folder (plans.json, dataset.json, "
      "fold_K/checkpoint_final.pth)",
      "medseg_export_nnunet"};
  std::string dataset, configuration, plans = "nnUNetPlans", trainer = "nnUNetTrainer";
  sharing::NnunetExportOptions o;
  app.add_option("-d,--dataset", dataset, "Dataset id or name (with -c; the model is under MEDSEG_RESULTS)");
  app.add_option("-c,--configuration", configuration, "Configuration, e.g. 3d_fullres");
  app.add_option("-p,--plans", plans, "Plans identifier")->capture_default_str();
  app.add_option("--tr", trainer, "Trainer name of the medseg model folder")->capture_default_str();
  app.add_option("-m,--model", o.model_folder, "Model folder (instead of -d/-c/-p/-tr)");
  app.add_option("-f,--folds", o.folds, "Folds to export (default: every fold_K present)");
  app.add_option("--chk", o.checkpoint, "Checkpoint to export per fold")->capture_default_str();
  app.add_option("--nnunet_trainer", o.trainer_name,
                 "nnU-Net trainer class written into the checkpoints (default: the model's when nnU-Net has it, "
                 "else nnUNetTrainer)");
  app.add_option("-o,--output", o.output, "Output nnU-Net model folder")->required();
  app.add_flag("--overwrite", o.overwrite, "Replace an existing non-empty output folder");
  return cli::run(argc, argv, app, [&] {
    if (!o.model_folder.empty() && !dataset.empty())
      throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER, not both");
    if (o.model_folder.empty()) {
      if (dataset.empty() || configuration.empty()) throw Error("pass -d DATASET -c CONFIGURATION, or -m MODEL_FOLDER");
      o.model_folder = inference::model_folder_path(root_folder(Root::Results), dataset, trainer, plans, configuration);
    }
    const sharing::NnunetExportResult r = sharing::export_nnunet(o);
    std::string folds;
    for (const std::string& f : r.folds) folds += (folds.empty() ? "" : " ") + f;
    std::printf("wrote %s: fold(s) %s as %s, %lld tensor(s) under %lld name(s)\n", o.output.c_str(), folds.c_str(),
                r.trainer_name.c_str(), static_cast<long long>(r.tensors),
                static_cast<long long>(r.tensors + r.aliases));
    return 0;
  });
}
