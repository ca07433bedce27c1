// medseg_import_nnunet: an nnU-Net v2 model folder as a medseg model folder, without Python; its .pth files
// are read by a pickle reader that runs no code (docs/predict.md, "nnU-Net models").
#include <cstdio>

#include "cli_common.h"
#include "core/error.h"
#include "sharing/nnunet_import.h"

using namespace medseg;

int main(int argc, char** argv) {
  CLI::App app{
      "Convert an nnU-Net v2 model folder (plans.json, dataset.json, fold_K/checkpoint_final.pth) into a "
      "medseg model folder",
      "medseg_import_nnunet"};
  sharing::NnunetImportOptions o;
  app.add_option("-i,--input", o.nnunet_folder,
                 "nnU-Net model folder, e.g. $nnUNet_results/Dataset004_Hippocampus/"
                 "nnUNetTrainer__nnUNetPlans__3d_fullres")
      ->required();
  app.add_option("-o,--output", o.output, "medseg model folder to write (usually the same path under $MEDSEG_RESULTS)")
      ->required();
  app.add_option("-f,--folds", o.folds, "Folds to import (default: every fold_K with the checkpoint)");
  app.add_option("--chk", o.checkpoint, "Checkpoint name")->capture_default_str();
  app.add_flag("--overwrite", o.overwrite, "Replace an existing non-empty output folder");
  return cli::run(argc, argv, app, [&] {
    const sharing::NnunetImportResult r = sharing::import_nnunet(o);
    std::string folds;
    for (const std::string& f : r.folds) folds += (folds.empty() ? "" : " ") + f;
    std::printf("wrote %s: fold(s) %s, %lld tensor(s) per fold (%lld nnU-Net alias(es) dropped)\n", o.output.c_str(),
                folds.c_str(), static_cast<long long>(r.tensors), static_cast<long long>(r.aliases_dropped));
    return 0;
  });
}
