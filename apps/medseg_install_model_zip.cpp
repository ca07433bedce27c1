// medseg_install_model_zip: nnUNetv2_install_pretrained_model_from_zip, checked: the zip is verified
// against its manifest and every checkpoint is read back before the model folder moves into place;
// an existing model folder is kept unless --overwrite (docs/model_sharing.md).
#include <cstdio>

#include "cli_common.h"
#include "core/paths.h"
#include "sharing/model_install.h"

using namespace medseg;

int main(int argc, char** argv) {
  CLI::App app{"Install a model zip written by medseg_export_model_zip (nnUNetv2_install_pretrained_model_from_zip)",
               "medseg_install_model_zip"};
  std::string zip, results;
  bool overwrite = false;
  app.add_option("zip", zip, "The model zip file")->required();
  app.add_option("-o,--output", results, "Results root to install into (default: $MEDSEG_RESULTS)");
  app.add_flag("--overwrite", overwrite, "Replace an existing model folder of the same name");
  return cli::run(argc, argv, app, [&] {
    const sharing::InstallResult r = sharing::install_model_zip(zip, root_folder(Root::Results, results), overwrite);
    std::string folds;
    for (const std::string& f : r.manifest.folds) folds += (folds.empty() ? "" : " ") + f;
    std::printf("installed %s: fold(s) %s, %zu file(s)\n", r.model_folder.c_str(), folds.c_str(),
                r.manifest.files.size());
    return 0;
  });
}
